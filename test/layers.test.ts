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
    modules: ['suites/spec/'],
    mustNotImport: ['suites/run/', 'suites/report/'],
    why: 'a suite is read and checked before anything runs it or reports on it',
  },
  {
    modules: ['suites/report/'],
    mustNotImport: ['suites/run/'],
    why: 'a report reads what a run produced; it never runs anything',
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

const sources = (): Array<{ file: string; text: string }> =>
  sourceFiles(SRC).map((path) => ({ file: relative(SRC, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));

/**
 * The circles of imports (type-only ones too), each as `a.ts → b.ts → a.ts`: one per import that
 * closes a circle in a depth-first walk, so none is missed where there is any, and the walk visits
 * each module once (listing every path would grow exponentially with the modules).
 */
function circles(modules: Array<{ file: string; text: string }>): string[] {
  const edges = new Map(modules.map(({ file, text }) => [file, importsOf(file, text)]));
  const found = new Set<string>();
  const done = new Set<string>();
  const visit = (file: string, path: string[]): void => {
    const at = path.indexOf(file);
    if (at >= 0) {
      const circle = path.slice(at);
      const start = circle.indexOf([...circle].sort()[0]!);
      const turned = [...circle.slice(start), ...circle.slice(0, start)];
      found.add([...turned, turned[0]].join(' → '));
      return;
    }
    if (done.has(file)) return;
    for (const next of edges.get(file) ?? []) visit(next, [...path, file]);
    done.add(file);
  };
  for (const file of edges.keys()) visit(file, []);
  return [...found];
}

t.test('every module imports only the layers below it', async (t) => {
  const modules = sources();
  t.ok(modules.length > 50, 'the sources were found');
  t.same(violations(modules), [], 'no import breaks a rule');
});

t.test('no circle of imports', async (t) => {
  t.same(circles(sources()), [], 'no module reaches itself through its imports');
  t.same(
    circles([
      { file: 'a.ts', text: "import { b } from './b.js';" },
      { file: 'b.ts', text: "import type { C } from './c.js';" },
      { file: 'c.ts', text: "export { a } from './a.js';" },
    ]),
    ['a.ts → b.ts → c.ts → a.ts'],
    'a probe circle is found, type-only imports included',
  );
});

t.test('the check names the file and the import that break a rule', async (t) => {
  const found = violations([
    { file: 'conversations/service.ts', text: "import type { X } from '../peers/client.js';\nimport { y } from './registry.js';\n" },
    { file: 'mcp/plugin.ts', text: "import {\n  authenticate,\n} from '../routes/access.js';" },
    { file: 'engine/socket-url.ts', text: "export type { ConnectSettings } from '../schemas/connect.js';" },
    { file: 'engine/socket.ts', text: "const lazy = await import('../suites/runner.js');" },
    { file: 'routes/conversations.ts', text: "import { x } from '../peers/client.js';\nimport 'node:fs';" },
    { file: 'suites/spec/schema.ts', text: "import type { RunState } from '../run/run-state.js';" },
    { file: 'suites/report/text.ts', text: "import { runSuite } from '../run/runner.js';\nimport { x } from '../spec/format.js';" },
  ]);
  t.equal(found.length, 6, 'six broken rules');
  t.match(found[0], /^src\/conversations\/service\.ts imports src\/peers\/client\.ts: .* must not import peers\//);
  t.match(found[1], /^src\/mcp\/plugin\.ts imports src\/routes\/access\.ts/);
  t.match(found[2], /^src\/engine\/socket-url\.ts imports src\/schemas\/connect\.ts/);
  t.match(found[3], /^src\/engine\/socket\.ts imports src\/suites\/runner\.ts/);
  t.match(found[4], /^src\/suites\/spec\/schema\.ts imports src\/suites\/run\/run-state\.ts: .* must not import suites\/run\//);
  t.match(found[5], /^src\/suites\/report\/text\.ts imports src\/suites\/run\/runner\.ts: .* must not import suites\/run\//);
});
