/**
 * docs/configuration.md lists every variable the service reads, and only those: its table's first
 * column against the loader's own list (src/ops/config.ts ENV_VARIABLES, the keys of the schema
 * that reads the environment). A variable added to the loader without a row fails here, and so
 * does a read of process.env that goes around the loader.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ENV_VARIABLES } from '../src/ops/config.js';
import { ROOT } from './support/root.js';

const TABLE = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');

/** The variables a Markdown table names in its first column (`PORT` / `HOST` names two). */
function documented(markdown: string): string[] {
  const names: string[] = [];
  for (const line of markdown.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1];
    if (first === undefined) continue;
    for (const [, name] of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.push(name!);
  }
  return names;
}

/** What the code reads and the table lacks, and what the table lists and the code does not read. */
function drift(read: readonly string[], table: readonly string[]): { undocumented: string[]; notRead: string[] } {
  return {
    undocumented: read.filter((name) => !table.includes(name)).sort(),
    notRead: table.filter((name) => !read.includes(name)).sort(),
  };
}

t.test('the table lists exactly the variables the service reads', async (t) => {
  const table = documented(TABLE);
  t.ok(table.length >= 30, `the table is read (${table.length} variables)`);
  t.same(drift(ENV_VARIABLES, table), { undocumented: [], notRead: [] }, 'docs/configuration.md and src/ops/config.ts agree');
  t.same(
    table.filter((name, i) => table.indexOf(name) !== i),
    [],
    'each variable has one row',
  );
});

t.test('a variable added to the code without a row is caught', async (t) => {
  t.same(drift([...ENV_VARIABLES, 'MAX_SOMETHING_NEW'], ENV_VARIABLES), { undocumented: ['MAX_SOMETHING_NEW'], notRead: [] });
  t.same(drift(ENV_VARIABLES, [...ENV_VARIABLES, 'GONE_VARIABLE']), { undocumented: [], notRead: ['GONE_VARIABLE'] });
  t.same(documented('| `PORT` / `HOST` | `8080` | x |\n| variable | default |\n|---|---|\n'), ['PORT', 'HOST'], 'a shared row names both');
});

t.test('the service reads the environment only through the loader', async (t) => {
  const src = join(ROOT, 'src');
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
    );
  // The command (cli/) and the demo's launcher read their own variables, not the service's.
  const service = files(src).filter((file) => !/^(cli\/|demo\.ts$)/.test(relative(src, file)));
  const reads: string[] = [];
  for (const file of service) {
    const text = readFileSync(file, 'utf8');
    for (const [, dotted, quoted] of text.matchAll(/process\.env(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*['"]([^'"]+)['"]\s*\])/g)) {
      reads.push(`${relative(src, file)}: ${dotted ?? quoted}`);
    }
  }
  t.same(
    reads.filter((read) => !ENV_VARIABLES.includes(read.split(': ')[1]!)),
    [],
    'no variable read outside the loader that the table does not list',
  );
});
