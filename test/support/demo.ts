import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT } from './root.js';
import { childEnv } from './child.js';

export interface Demo {
  child: ChildProcess;
  /** Everything the demo wrote so far. */
  output: { stdout: string; stderr: string };
  /** Resolves with the exit code once the demo exits. */
  exit: Promise<number | null>;
}

/**
 * `npm run demo` as a newcomer meets it: the real script (tsx, no build) as a child process,
 * killed at the test's end.
 */
export function startDemo(t: { teardown(fn: () => unknown): void }, env: Record<string, string>): Demo {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/demo.ts'], {
    cwd: ROOT,
    env: childEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'warn', DEBUG_PAGE: 'false', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (output.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output.stderr += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output, exit };
}

/** Waits for the demo's banner (its last line says how to stop it) and answers the gateway's URL from it. */
export async function demoBanner(demo: Demo): Promise<{ banner: string; gw: string }> {
  const printed = () => /Ctrl-C stops everything/.test(demo.output.stdout);
  // Woken by the demo's own output or exit (no polling); a minute for a cold start on a busy machine.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error('no banner within 60 s')), 60_000);
    const check = () => printed() && done();
    const exited = () => done(new Error('the demo exited'));
    function done(error?: Error) {
      clearTimeout(timer);
      demo.child.stdout?.off('data', check);
      demo.child.off('exit', exited);
      if (error === undefined) resolve();
      else reject(new Error(`the demo never printed its banner (${error.message}):\n${demo.output.stdout}\n${demo.output.stderr}`));
    }
    demo.child.stdout?.on('data', check);
    demo.child.once('exit', exited);
    check();
  });
  const banner = demo.output.stdout;
  return { banner, gw: /gateway on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] ?? '' };
}
