// Builds dist/ with the compiler and marks the package's commands (package.json "bin") executable:
// tsc writes files 0644, and `npx agent-test-gateway` in this checkout runs dist/cli/main.js itself.
// With --if-stale (`npm start`, `npm run demo`) a built checkout starts at once: the compiler runs only
// when dist/ is older than what it is built from (src/, the tsconfig files, package.json) or missing.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = join(root, 'dist', '.tsbuildinfo');

/** The newest mtime of a file or a directory tree; a directory's own mtime counts (a file removed or renamed). */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs);
}

function stale() {
  let builtAt = -Infinity;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    // never built
  }
  const sources = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => join(root, p));
  return sources.some((p) => newest(p) > builtAt);
}

if (!process.argv.includes('--if-stale') || stale()) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const { status } = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  process.exitCode = status ?? 1;
  // An incremental build that found nothing to emit writes nothing: mark dist/ as checked now.
  if (status === 0) utimesSync(built, new Date(), new Date());
}
// Also on a checkout built before this script marked them: the mode is checked every time, cheaply.
const { bin = {} } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const file of Object.values(bin).map((path) => join(root, path))) {
  if (existsSync(file)) chmodSync(file, statSync(file).mode | 0o111);
}
