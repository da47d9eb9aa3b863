import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { startEngineSimulator } from '../src/simulators/engine.js';
import { startPlatformSimulator } from '../src/simulators/platform.js';
import { demoWorld } from '../src/simulators/world.js';
import { childEnv, eventually } from './support/stack.js';

/** The real server process (src/server.ts), so SIGTERM, draining and the exit code are real. */
async function startServer(t: { teardown(fn: () => unknown): void }, env: Record<string, string>) {
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
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(async () => {
    child.kill('SIGKILL');
    await engine.close();
    await platform.close();
  });
  const url = `http://127.0.0.1:${port}`;
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await request(url + path, {
      method,
      headers: { authorization: 'Bearer demo-token', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
  };
  await waitUntilReady(url);
  return { child, engine, url, call, exited, output: () => output };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitUntilReady(url: string): Promise<void> {
  const until = Date.now() + 20_000;
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

t.test('SIGTERM: readiness false, running turns finish, every socket closes, exit 0', async (t) => {
  const s = await startServer(t, { SHUTDOWN_GRACE_MS: '3000' });
  const idle = await s.call('POST', '/v1/agents/coach/conversations');
  const busy = await s.call('POST', '/v1/agents/coach/conversations');
  t.equal(idle.status, 201);
  const running = s.call('POST', `/v1/agents/coach/conversations/${busy.body.session_id}/turns`, { line: 'sim:delay:600' });
  await eventually(() => s.engine.record.connections[1]!.frames.length === 2);
  s.child.kill('SIGTERM');
  await eventually(() => s.output().includes('draining'), 3000);
  const ready = await request(`${s.url}/readyz`);
  t.equal(ready.statusCode, 503, 'readiness turns false at once');
  await ready.body.text();
  const refused = await s.call('POST', '/v1/agents/coach/conversations');
  t.equal(refused.status, 503, 'no new conversation while draining');
  const finished = await running;
  t.equal(finished.status, 200, 'the running turn got its result');
  t.equal(finished.body.turn.outcome, 'exit');
  t.equal(await s.exited, 0, 'exit 0');
  await eventually(() => s.engine.openSockets() === 0);
  t.same(
    s.engine.record.connections.map((c) => c.closeCode),
    [1001, 1001],
    'every socket closed plainly with 1001 going away',
  );
  t.ok(s.engine.record.connections.every((c) => !c.frames.includes('#exit')));
});

t.test('SIGTERM: a turn still running at the end of the grace is cut off clearly', async (t) => {
  const s = await startServer(t, { SHUTDOWN_GRACE_MS: '300', TURN_BUDGET_MS: '20000' });
  const conv = await s.call('POST', '/v1/agents/coach/conversations');
  const running = s.call('POST', `/v1/agents/coach/conversations/${conv.body.session_id}/turns`, { line: 'sim:hang' });
  await eventually(() => s.engine.record.connections[0]!.frames.length === 2);
  const sent = Date.now();
  s.child.kill('SIGTERM');
  const cut = await running;
  t.equal(cut.status, 200);
  t.equal(cut.body.turn.outcome, 'cancelled');
  t.equal(cut.body.conversation.connection, 'closed');
  t.ok(cut.body.notes.some((n: string) => /shut down/.test(n)), 'the result says why');
  t.equal(await s.exited, 0);
  t.ok(Date.now() - sent < 5000, 'within the grace');
  await eventually(() => s.engine.record.connections[0]!.closeCode !== undefined);
  t.equal(s.engine.record.connections[0]!.closeCode, 1001);
});
