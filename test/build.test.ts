/**
 * `npm run build` (scripts/build.mjs) in a copy of the checkout: dist/ is compiled and the package's
 * command is executable, since `npx agent-test-gateway` in a checkout runs dist/cli/main.js itself
 * and the compiler writes every file 0644. `--if-stale` on a built copy compiles nothing but still
 * marks the command (a checkout built before the script marked it).
 */

import { spawnSync } from 'node:child_process';
import { constants, accessSync, chmodSync, cpSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { childEnv } from './support/stack.js';
import { ROOT } from './support/root.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(180_000));

const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

t.test('the build marks every command of package.json executable', (t) => {
  const copy = t.testdir({});
  for (const path of ['src', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
    cpSync(join(ROOT, path), join(copy, path), { recursive: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  const build = (...args: string[]) =>
    spawnSync(process.execPath, ['scripts/build.mjs', ...args], { cwd: copy, env: childEnv(), encoding: 'utf8' });

  const built = build();
  t.equal(built.status, 0, `compiled${built.status === 0 ? '' : `:\n${built.stdout}${built.stderr}`}`);
  const commands = Object.values(PACKAGE.bin).map((path) => join(copy, path));
  t.ok(commands.length > 0, 'package.json names a command');
  for (const command of commands) t.ok(executable(command), `${command.slice(copy.length + 1)} is executable`);

  const [first] = commands;
  chmodSync(first!, 0o644);
  const compiledAt = statSync(first!).mtimeMs;
  const again = build('--if-stale');
  t.equal(again.status, 0, 'built again with --if-stale');
  t.equal(statSync(first!).mtimeMs, compiledAt, 'nothing compiled: dist/ is newer than its sources');
  t.ok(executable(first!), 'and the command is marked again');
  t.end();
});
