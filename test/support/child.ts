import { delimiter, sep } from 'node:path';
import { ROOT } from './root.js';

/**
 * The environment for a child process a test spawns (the server, the CLI), without tap's
 * coverage hooks: the child transpiles with tsx, and its coverage of the same files would
 * corrupt the merge with the test processes' (which transpile with ts-node). tap's processinfo
 * puts its hooks back into NODE_OPTIONS of every process a test spawns; its own switch,
 * `_TAPJS_PROCESSINFO_COVERAGE_=0`, is what keeps the child's coverage out. Without it the report
 * keeps one source map per file from whichever coverage file it reads last, and when that is a
 * child's, it drops whole directories (a branch total of 78–79 % instead of 84 %).
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, _TAPJS_PROCESSINFO_COVERAGE_: '0' };
  delete env.NODE_V8_COVERAGE;
  delete env.NODE_OPTIONS;
  return env;
}

/**
 * A child's environment as outside this checkout: none of the settings an enclosing npm script
 * passes down (`npm_*`, `INIT_CWD`), no directory of the checkout on PATH, and `nodeDir` (the
 * directory of the Node it should run on) first on PATH.
 */
export function outsideEnv(nodeDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = childEnv(extra);
  for (const name of Object.keys(env)) if (/^npm_/i.test(name) || name === 'INIT_CWD') delete env[name];
  const outside = (env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && !`${dir}${sep}`.startsWith(ROOT));
  env.PATH = [nodeDir, ...outside].join(delimiter);
  return env;
}
