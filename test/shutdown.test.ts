import t from 'tap';
import { request } from 'undici';
import { startServer } from './support/server.js';
import { eventually } from './support/stack.js';
import { turnPath } from './support/http.js';
import { scaled } from './support/time.js';

t.test('SIGTERM: readiness false, running turns finish, every socket closes, exit 0', async (t) => {
  // Scaled by TEST_TIME_SCALE: the running turn must end inside the grace on a busy machine.
  const s = await startServer(t, { SHUTDOWN_GRACE_MS: String(scaled(3000)) });
  const idle = await s.call('POST', '/v1/agents/coach/conversations');
  const busy = await s.call('POST', '/v1/agents/coach/conversations');
  t.equal(idle.status, 201);
  const running = s.call('POST', turnPath(busy.body.session_id), { body: { line: 'sim:delay:600' } });
  await eventually(() => s.engine.record.connections[1]!.frames.length === 2);
  s.kill('SIGTERM');
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
  // A short grace (only the hanging turn runs in it); the budget far beyond it and the slack (scaled).
  const GRACE_MS = 300;
  const SLACK_MS = scaled(2000);
  const s = await startServer(t, { SHUTDOWN_GRACE_MS: String(GRACE_MS), TURN_BUDGET_MS: String(scaled(20_000)) });
  const conv = await s.call('POST', '/v1/agents/coach/conversations');
  const running = s.call('POST', turnPath(conv.body.session_id), { body: { line: 'sim:hang' } });
  await eventually(() => s.engine.record.connections[0]!.frames.length === 2);
  const sent = Date.now();
  s.kill('SIGTERM');
  const cut = await running;
  t.equal(cut.status, 200);
  t.equal(cut.body.turn.outcome, 'cancelled');
  t.equal(cut.body.conversation.connection, 'closed');
  t.ok(
    cut.body.notes.some((n: string) => /shut down/.test(n)),
    'the result says why',
  );
  t.equal(await s.exited, 0);
  const exitedAfter = Date.now() - sent;
  t.ok(exitedAfter < GRACE_MS + SLACK_MS, `within the grace (${exitedAfter} ms after SIGTERM, grace ${GRACE_MS} ms)`);
  await eventually(() => s.engine.record.connections[0]!.closeCode !== undefined);
  t.equal(s.engine.record.connections[0]!.closeCode, 1001);
});
