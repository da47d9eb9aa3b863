import { spawn } from 'node:child_process';
import { request } from 'undici';
import { startEngineSimulator, type EngineSimulator } from '../../src/simulators/engine.js';
import { startPlatformSimulator } from '../../src/simulators/platform.js';
import { demoWorld } from '../../src/simulators/world.js';
import { callAt, freePort, type Answer, type CallOptions } from './http.js';
import { childEnv } from './stack.js';
import { scaled } from './time.js';

/**
 * For tests of the process itself (SIGTERM, draining, the exit code): the server runs as
 * `npm start` runs it, without tap's coverage hooks (see childEnv).
 */
export interface Server {
  engine: EngineSimulator;
  url: string;

  call(method: string, path: string, opts?: CallOptions): Promise<Answer>;
  kill(signal: NodeJS.Signals): void;
  exited: Promise<number | null>;
  output(): string;
}

/** The real server (src/server.ts) in a child process of its own, against simulators in this one. */
export async function startServer(t: { teardown(fn: () => unknown): void }, env: Record<string, string>): Promise<Server> {
  const world = demoWorld();
  const engine = await startEngineSimulator({ world, sessionEndDelayMs: 50 });
  const platform = await startPlatformSimulator({ world });
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: childEnv({
      PROMETHIST_MCP_ENGINE_URL: engine.url,
      PROMETHIST_PLATFORM_URL: platform.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(async () => {
    child.kill('SIGKILL');
    await engine.close();
    await platform.close();
  });
  const url = `http://127.0.0.1:${port}`;
  const call: Server['call'] = (method, path, opts) => callAt(url, method, path, opts);
  await waitUntilReady(url);
  return { engine, url, call, kill: (signal) => child.kill(signal), exited, output: () => output };
}

/** Polls /readyz until it answers 200; fails after `ms` as on an idle machine (scaled by TEST_TIME_SCALE here). */
export async function waitUntilReady(url: string, ms = 20_000): Promise<void> {
  const until = Date.now() + scaled(ms);
  for (;;) {
    try {
      const res = await request(`${url}/readyz`);
      await res.body.text();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error('the server did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
