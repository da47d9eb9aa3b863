// Shutdown under load: the real server process (src/server.ts) with 50 turns running, SIGTERM.
// Every turn gets its result or a clear cut-off (outcome cancelled, with a note), every engine
// socket closes plainly with 1001 "going away", and the process exits 0 within the grace.
import t from 'tap';
import { request } from 'undici';
import { startServer, type Server } from '../support/server.js';
import { eventually } from '../support/stack.js';
import { newFigures, reportFigures } from './figures.js';
import { turnPath } from '../support/http.js';
import { scaled } from '../support/time.js';

const TURNS = 50;
const figures = newFigures();

/** Opens `TURNS` conversations, starts a turn on each with the line `lineOf(i)`, waits until every line is at the engine. */
async function turnsRunning(s: Server, lineOf: (i: number) => string) {
  const opened = await Promise.all(Array.from({ length: TURNS }, () => s.call('POST', '/v1/agents/coach/conversations')));
  if (!opened.every((o) => o.status === 201)) throw new Error(`could not open ${TURNS} conversations`);
  const running = opened.map((o, i) =>
    s.call('POST', turnPath(o.body.session_id), { body: { line: lineOf(i) } }).then((answer) => ({ ...answer, at: Date.now() })),
  );
  await eventually(() => s.engine.record.connections.filter((c) => c.frames.length === 2).length === TURNS, 5000);
  return running;
}

t.test(`SIGTERM with ${TURNS} turns running: results or clear cut-offs, 1001 closes, exit 0 within the grace`, async (t) => {
  // Scaled by TEST_TIME_SCALE: the short turns and the answers of fifty turns at once must fit in the
  // grace on a busy machine; the long ones and the turn budget stay far beyond it.
  const GRACE_MS = scaled(2000);
  const SLACK_MS = scaled(1000);
  const s = await startServer(t, {
    SHUTDOWN_GRACE_MS: String(GRACE_MS),
    TURN_BUDGET_MS: String(GRACE_MS * 15),
    MAX_CONVERSATIONS_PER_CALLER: '60',
  });
  // Even turns end well inside the grace; odd ones would take far longer than it.
  const short = (i: number) => i % 2 === 0;
  const running = await turnsRunning(s, (i) => `sim:delay:${short(i) ? 200 + i * 10 : GRACE_MS * 2}`);
  const sent = Date.now();
  s.kill('SIGTERM');
  await eventually(() => s.output().includes('"msg":"draining"'), 3000);
  const ready = await request(`${s.url}/readyz`);
  await ready.body.text();
  t.equal(ready.statusCode, 503, 'readiness turns false at once');
  const refused = await s.call('POST', '/v1/agents/coach/conversations');
  t.equal(refused.status, 503, 'no new conversation while draining');

  const answers = await Promise.all(running);
  const code = await s.exited;
  const exitedAfter = Date.now() - sent;
  figures.faults += 1;
  t.equal(code, 0, 'exit 0');
  t.ok(exitedAfter < GRACE_MS + SLACK_MS, `exited at the end of the grace (${exitedAfter} ms after SIGTERM, grace ${GRACE_MS} ms)`);
  const finished = answers.filter((_, i) => short(i));
  const cut = answers.filter((_, i) => !short(i));
  t.ok(
    answers.every((a) => a.status === 200),
    'every running turn was answered',
  );
  t.ok(
    finished.every((a) => a.body.turn.outcome === 'exit' && /You said: sim:delay/.test(a.body.turn.text)),
    `${finished.length} turns that fit in the grace got their full result`,
  );
  t.ok(
    finished.every((a) => a.at - sent < GRACE_MS),
    'as soon as they ended, not at the end of the grace',
  );
  t.ok(
    cut.every(
      (a) =>
        a.body.turn.outcome === 'cancelled' &&
        a.body.conversation.connection === 'closed' &&
        a.body.notes.includes('The conversation was closed while the turn was running.') &&
        a.body.notes.some((n: string) => /the gateway pod shut down/.test(n)),
    ),
    `${cut.length} turns still running at the end of the grace were cut off: outcome cancelled, with the notes why`,
  );
  t.ok(
    cut.every((a) => a.at - sent >= GRACE_MS - 100),
    'and only at the end of the grace',
  );
  await eventually(() => s.engine.openSockets() === 0, 3000).catch(() => {});
  figures.socketsLeaked += s.engine.openSockets();
  figures.conversations += s.engine.record.connections.filter((c) => c.status === 101).length;
  t.equal(s.engine.openSockets(), 0, 'the engine holds no socket');
  t.same(
    [...new Set(s.engine.record.connections.map((c) => `${c.closeCode} by ${c.closedBy}`))],
    ['1001 by client'],
    'every socket closed plainly by the gateway with 1001 going away',
  );
  t.ok(
    s.engine.record.connections.every((c) => !c.frames.includes('#exit')),
    'never #exit',
  );
  t.match(s.output(), /"msg":"stopped"/);
});

t.test(`SIGTERM with ${TURNS} short turns running: exit as soon as they end, not at the end of the grace`, async (t) => {
  // Scaled by TEST_TIME_SCALE: far beyond the longest turn and the slack on a busy machine, so
  // that exiting as the turns end and exiting at the end of the grace stay apart.
  const GRACE_MS = scaled(8000);
  const SLACK_MS = scaled(2000);
  const s = await startServer(t, { SHUTDOWN_GRACE_MS: String(GRACE_MS), MAX_CONVERSATIONS_PER_CALLER: '60' });
  const running = await turnsRunning(s, (i) => `sim:delay:${300 + i * 10}`);
  const sent = Date.now();
  s.kill('SIGTERM');
  const answers = await Promise.all(running);
  const code = await s.exited;
  const exitedAfter = Date.now() - sent;
  figures.faults += 1;
  t.equal(code, 0, 'exit 0');
  t.ok(
    answers.every((a) => a.status === 200 && a.body.turn.outcome === 'exit'),
    'every turn got its full result',
  );
  t.ok(exitedAfter < 300 + TURNS * 10 + SLACK_MS, `exited once they had ended (${exitedAfter} ms after SIGTERM, grace ${GRACE_MS} ms)`);
  await eventually(() => s.engine.openSockets() === 0, 3000).catch(() => {});
  figures.socketsLeaked += s.engine.openSockets();
  figures.conversations += s.engine.record.connections.filter((c) => c.status === 101).length;
  t.equal(s.engine.openSockets(), 0);
  t.ok(
    s.engine.record.connections.every((c) => c.closeCode === 1001 && c.closedBy === 'client'),
    'every socket closed with 1001',
  );
});

t.test('figures', async (t) => {
  t.pass('reported');
  reportFigures(t, import.meta.url, figures);
});
