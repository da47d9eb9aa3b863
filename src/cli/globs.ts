// A namespace import: `glob` (Node ≥ 22) is looked up when a pattern is expanded, so that this module, and the
// report writers that import it, still load on an older Node to say it is too old (src/cli/old-node.ts).
import * as fs from 'node:fs/promises';

const GLOB = /[*?[{]/;

/**
 * Suite arguments as files. A pattern the shell did not expand — it names a path inside a
 * container (`docker run … run /suites/*.yaml`), or the shell does not expand globs — is
 * expanded here, sorted. A pattern that matches nothing stays as written, so reading it fails
 * with its name.
 */
export async function expandSuitePatterns(args: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const arg of args) {
    if (!GLOB.test(arg) || (await exists(arg))) {
      files.push(arg);
      continue;
    }
    const matches: string[] = [];
    for await (const match of fs.glob(arg)) matches.push(match);
    files.push(...(matches.length > 0 ? matches.sort() : [arg]));
  }
  return files;
}

const exists = (path: string): Promise<boolean> =>
  fs.stat(path).then(
    () => true,
    () => false,
  );
