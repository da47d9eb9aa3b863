// `npm start` and `npm run demo` on a built checkout start at once: the compiler runs only when
// dist/ is older than what it is built from (src/, the tsconfig files, package.json) or missing.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync } from 'node:fs';
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

let builtAt = -Infinity;
try {
  builtAt = statSync(built).mtimeMs;
} catch {
  // never built
}
const sources = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => join(root, p));
if (sources.some((p) => newest(p) > builtAt)) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const { status } = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  process.exitCode = status ?? 1;
  // An incremental build that found nothing to emit writes nothing: mark dist/ as checked now.
  if (status === 0) utimesSync(built, new Date(), new Date());
}
