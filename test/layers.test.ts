import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// Layers only look down: each rule names the modules it applies to (a folder ending in /, or one
// file) and what they must not import. Paths are relative to src/.
const RULES: Array<{ modules: string[]; mustNotImport: string[]; why: string }> = [
  {
    modules: ['domain/'],
    mustNotImport: ['engine/', 'platform/', 'conversations/', 'schemas/', 'ops/', 'http/', 'routes/', 'peers/', 'mcp/', 'suites/'],
    why: 'the vocabulary is the bottom layer',
  },
  {
    modules: ['engine/', 'platform/', 'conversations/'],
    mustNotImport: ['routes/', 'peers/', 'mcp/', 'suites/'],
    why: 'the domain layers know no front and no sibling pod',
  },
  {
    modules: ['engine/adapter.ts', 'engine/socket-url.ts', 'conversations/'],
    mustNotImport: ['schemas/'],
    why: 'the domain speaks the vocabulary, not the HTTP input rules',
  },
  { modules: ['peers/', 'mcp/'], mustNotImport: ['routes/'], why: 'the routes are a front beside them, not below them' },
  {
    modules: ['model/'],
    mustNotImport: ['conversations/', 'engine/', 'platform/', 'routes/', 'peers/', 'mcp/', 'suites/', 'cli/'],
    why: 'the model adapter knows its wire and nothing of what asks it',
  },
  {
    modules: ['suites/'],
    mustNotImport: ['routes/', 'mcp/', 'peers/', 'cli/', 'conversations/registry.ts'],
    why: 'suites run through the conversation service; the fronts sit above them',
  },
  {
    modules: ['cli/'],
    mustNotImport: ['routes/', 'mcp/', 'peers/', 'conversations/', 'engine/', 'platform/', 'model/'],
    why: 'the command talks to a gateway over HTTP, never to its insides',
  },
  {
    modules: ['ops/'],
    mustNotImport: ['conversations/', 'routes/', 'peers/', 'mcp/', 'suites/'],
    why: 'configuration and metrics sit below the service',
  },
];

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// Static imports and re-exports (`import … from`, `export … from`, `import '…'`) and dynamic `import('…')`.
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative imports of a module, as paths relative to src/ (`peers/calls.ts`). */
function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? match[3]!;
    if (!spec.startsWith('.')) continue;
    const target = posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, '.ts');
    out.push(target);
  }
  return out;
}

const applies = (pattern: string, path: string): boolean => (pattern.endsWith('/') ? path.startsWith(pattern) : path === pattern);

function violations(modules: Array<{ file: string; text: string }>): string[] {
  const found: string[] = [];
  for (const { file, text } of modules) {
    for (const target of importsOf(file, text)) {
      for (const rule of RULES) {
        if (!rule.modules.some((m) => applies(m, file))) continue;
        const banned = rule.mustNotImport.find((m) => applies(m, target) && !applies(m, file));
        if (banned !== undefined)
          found.push(`src/${file} imports src/${target}: ${rule.modules.join(', ')} must not import ${banned} (${rule.why})`);
      }
    }
  }
  return found;
}

t.test('every module imports only the layers below it', async (t) => {
  const modules = sourceFiles(SRC).map((path) => ({
    file: relative(SRC, path).split('\\').join('/'),
    text: readFileSync(path, 'utf8'),
  }));
  t.ok(modules.length > 50, 'the sources were found');
  t.same(violations(modules), [], 'no import breaks a rule');
});

t.test('the check names the file and the import that break a rule', async (t) => {
  const found = violations([
    { file: 'conversations/service.ts', text: "import type { X } from '../peers/client.js';\nimport { y } from './registry.js';\n" },
    { file: 'mcp/plugin.ts', text: "import {\n  authenticate,\n} from '../routes/access.js';" },
    { file: 'engine/socket-url.ts', text: "export type { ConnectSettings } from '../schemas/connect.js';" },
    { file: 'engine/socket.ts', text: "const lazy = await import('../suites/runner.js');" },
    { file: 'routes/conversations.ts', text: "import { x } from '../peers/client.js';\nimport 'node:fs';" },
  ]);
  t.equal(found.length, 4, 'four broken rules');
  t.match(found[0], /^src\/conversations\/service\.ts imports src\/peers\/client\.ts: .* must not import peers\//);
  t.match(found[1], /^src\/mcp\/plugin\.ts imports src\/routes\/access\.ts/);
  t.match(found[2], /^src\/engine\/socket-url\.ts imports src\/schemas\/connect\.ts/);
  t.match(found[3], /^src\/engine\/socket\.ts imports src\/suites\/runner\.ts/);
});
