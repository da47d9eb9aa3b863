// Engine faults, one at a time, each with the answer openapi.yaml names — and a bystander: another
// open conversation that takes a turn over its same socket after every fault, unaffected.
import t from 'tap';
import type { Test } from 'tap';
import { eventually, startStack, type Stack } from '../support/stack.js';
import { newFigures, reportFigures, settleStack } from './figures.js';
import { conversationPath, turnPath, type Answer } from '../support/http.js';
import { scaled } from '../support/time.js';

// The same budgets bound the faults (a handshake or a turn that never ends, waited out) and the
// legitimate work beside them (the bystander, 40 conversations opening at once in the storm), so
// they are scaled by TEST_TIME_SCALE: long enough for that work on a busy machine.
const CONNECT_TIMEOUT_MS = scaled(500);
const TURN_BUDGET_MS = scaled(600);
const MAX_FRAME_BYTES = 4096;
/** Timing slack past a budget (scaled too): far below any hang, far above loopback latency on a busy machine. */
const SLACK_MS = scaled(1000);

const figures = newFigures();
const connectionsOf = (s: Stack, sessionId: string) => s.engine.record.connections.filter((c) => c.sessionId === sessionId);

const s = await startStack(t, {
  env: {
    ENGINE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
    TURN_BUDGET_MS: String(TURN_BUDGET_MS),
    ENGINE_MAX_FRAME_BYTES: String(MAX_FRAME_BYTES),
    MAX_CONVERSATIONS_PER_CALLER: '50',
    LOG_LEVEL: 'warn',
  },
});
const bystander = (await s.open('coach', { device_ref: 'bystander' })).sessionId;
let bystanderTurns = 1;

/** The bystander takes a turn over the socket it has had from the start. */
async function bystanderUnaffected(t: Test): Promise<void> {
  const answer = await s.call('POST', turnPath(bystander), { body: { line: `still there? ${bystanderTurns}` } });
  bystanderTurns += 1;
  t.equal(answer.status, 200, 'bystander: its turn is answered');
  t.equal(answer.body.turn.outcome, 'exit', 'bystander: the turn ended with its exit');
  t.match(
    answer.body.conversation,
    { connection: 'open', reconnected: false, turns: bystanderTurns },
    'bystander: same conversation, not reconnected',
  );
  const sockets = connectionsOf(s, bystander);
  t.equal(sockets.length, 1, 'bystander: still its one socket');
  t.equal(sockets[0]!.closedAt, undefined, 'bystander: the socket is open');
  t.equal(sockets[0]!.frames.at(-1), `still there? ${bystanderTurns - 1}`, 'bystander: the line went over that socket');
}

/** The place the registry holds and the engine's sockets agree: nothing was left behind by the fault. */
async function nothingHeld(t: Test, open: number): Promise<void> {
  await eventually(() => s.app.conversationRegistry.stats.open === open && s.engine.openSockets() === open, 2000).catch(() => {});
  t.equal(s.app.conversationRegistry.stats.open, open, `the registry holds ${open} conversation(s)`);
  t.equal(s.engine.openSockets(), open, `the engine holds ${open} socket(s)`);
  t.equal(s.app.conversationRegistry.stats.busy, 0, 'no turn left running');
}

const timed = async (call: () => Promise<Answer>): Promise<Answer & { ms: number }> => {
  const started = Date.now();
  const answer = await call();
  return { ...answer, ms: Date.now() - started };
};

t.afterEach(() => {
  s.engine.faults = {};
});

t.test('connection refused: 502 engine_unavailable, at once', async (t) => {
  const closed = (await s.open()).sessionId;
  await s.call('DELETE', conversationPath(closed));
  await s.engine.refuseConnections(true);
  const start = await timed(() => s.call('POST', '/v1/agents/coach/conversations', { body: {} }));
  t.equal(start.status, 502);
  t.equal(start.body.error, 'engine_unavailable');
  t.match(start.body.message, /could not be reached \(ECONNREFUSED\)/);
  t.ok(start.ms < CONNECT_TIMEOUT_MS + SLACK_MS, `refused, not timed out (${start.ms} ms)`);
  const reconnect = await s.call('POST', turnPath(closed), { body: { line: 'back?' } });
  t.equal(reconnect.status, 502, 'a reconnect is refused the same way');
  t.equal(reconnect.body.error, 'engine_unavailable');
  figures.faults += 2;
  await nothingHeld(t, 1);
  const remembered = await s.call('GET', conversationPath(closed));
  t.match(remembered.body, { connection: 'closed', close_cause: 'caller' }, 'the remembered conversation stays as it was');
  await bystanderUnaffected(t);
  await s.engine.refuseConnections(false);
  const back = await s.call('POST', turnPath(closed), { body: { line: 'back?' } });
  t.match(back.body.conversation, { reconnected: true, connection: 'open' }, 'once the engine listens again, the reconnect works');
  await s.call('DELETE', conversationPath(closed));
});

t.test('upgrade timeout: 502 within ENGINE_CONNECT_TIMEOUT_MS', async (t) => {
  s.engine.faults.handshake = 'hang';
  const answers = await Promise.all([1, 2, 3].map(() => timed(() => s.call('POST', '/v1/agents/coach/conversations', { body: {} }))));
  for (const answer of answers) {
    t.equal(answer.status, 502);
    t.equal(answer.body.error, 'engine_unavailable');
    t.match(answer.body.message, new RegExp(`within ${CONNECT_TIMEOUT_MS} ms`));
    t.ok(
      answer.ms >= CONNECT_TIMEOUT_MS - 50 && answer.ms < CONNECT_TIMEOUT_MS + SLACK_MS,
      `answered at the connect timeout (${answer.ms} ms)`,
    );
  }
  figures.faults += answers.length;
  await nothingHeld(t, 1);
  s.engine.faults = {};
  await bystanderUnaffected(t);
});

t.test('5xx at the upgrade: 502 engine_unavailable naming the status', async (t) => {
  for (const status of [500, 502, 503, 504]) {
    s.engine.faults.handshake = status;
    const answer = await s.call('POST', '/v1/agents/coach/conversations', { body: {} });
    t.equal(answer.status, 502, `HTTP ${status}`);
    t.equal(answer.body.error, 'engine_unavailable');
    t.match(answer.body.message, new RegExp(`HTTP ${status}`));
    figures.faults += 1;
  }
  s.engine.faults = {};
  await nothingHeld(t, 1);
  await bystanderUnaffected(t);
});

t.test('socket dropped between turns: closed as engine_closed, the next turn reconnects', async (t) => {
  const { sessionId } = await s.open('coach', { device_ref: 'dropped', locale: 'de-DE' });
  await s.call('POST', turnPath(sessionId), { body: { line: 'first' } });
  t.equal(
    s.engine.dropSockets((c) => c.sessionId === sessionId),
    1,
    'the engine drops the idle socket (no close frame)',
  );
  figures.faults += 1;
  await eventually(() => s.app.conversationRegistry.stats.open === 1);
  const view = await s.call('GET', conversationPath(sessionId));
  t.match(view.body, { connection: 'closed', close_cause: 'engine_closed' });
  t.ok(view.body.notes.includes('The engine closed the connection between turns.'), 'the note says the engine closed it');
  await bystanderUnaffected(t);

  const next = await s.call('POST', turnPath(sessionId), { body: { line: 'planning?' } });
  t.equal(next.status, 200);
  t.match(next.body.conversation, {
    reconnected: true,
    planning_lost: true,
    connection: 'open',
    turns: 3,
    locale: 'de-DE',
    device_ref: 'mcp:dropped',
  });
  t.ok(
    next.body.notes.some((n: string) => /kept its messages but not the earlier turns' planning/.test(n)),
    'the note says planning was lost',
  );
  t.match(
    next.body.turn.text,
    /This socket is new \(0 turns\); the session has 2 lines: my earlier planning is gone\./,
    'the engine kept the messages, not the planning',
  );
  const sockets = connectionsOf(s, sessionId);
  t.equal(sockets.length, 2);
  t.match(sockets[1], { resumed: true, query: { sessionId, locale: 'de-DE', deviceId: 'mcp:dropped', testMode: 'true' } });
  await s.call('DELETE', conversationPath(sessionId));
});

/** A turn on a fresh conversation that meets a fault: the answer, the socket and the bystander afterwards. */
async function faultyTurn(t: Test, line: string) {
  const { sessionId } = await s.open();
  const answer = await timed(() => s.call('POST', turnPath(sessionId), { body: { line } }));
  figures.faults += 1;
  t.equal(answer.status, 200, `${line}: the turn is answered`);
  await eventually(() => connectionsOf(s, sessionId)[0]!.closedAt !== undefined || answer.body.conversation.connection === 'open');
  return { sessionId, answer, socket: connectionsOf(s, sessionId)[0]! };
}

t.test('socket dropped during a turn: outcome engine_closed, partial elements kept', async (t) => {
  const { answer, socket } = await faultyTurn(t, 'sim:drop');
  t.equal(answer.body.turn.outcome, 'engine_closed');
  t.equal(answer.body.conversation.connection, 'closed');
  t.match(answer.body.turn.text, /Let me think about that/, 'what the engine said before the drop is returned');
  t.ok(answer.body.notes.some((n: string) => /socket closed with code 1006 before the turn's exit element/.test(n)));
  t.equal(socket.closedBy, 'engine');
  await nothingHeld(t, 1);
  await bystanderUnaffected(t);
});

t.test('a turn that never exits: cut off at the budget', async (t) => {
  const { answer, socket } = await faultyTurn(t, 'sim:hang');
  t.equal(answer.body.turn.outcome, 'timeout');
  t.equal(answer.body.conversation.connection, 'closed');
  const took = answer.body.turn.duration_ms as number;
  // Node's timers run on the event loop's cached whole-millisecond clock: one may fire a little before
  // performance.now() says the budget has passed (2399 ms for 2400 was seen), as conversation.test.ts allows.
  t.ok(took >= TURN_BUDGET_MS - 10 && took < TURN_BUDGET_MS + SLACK_MS, `cut at the ${TURN_BUDGET_MS} ms budget (${took} ms)`);
  t.ok(answer.ms < TURN_BUDGET_MS + SLACK_MS, `the call answered right after (${answer.ms} ms)`);
  t.ok(answer.body.notes.some((n: string) => new RegExp(`cut off at its ${TURN_BUDGET_MS} ms budget`).test(n)));
  await eventually(() => socket.closeCode !== undefined);
  t.match(socket, { closeCode: 1000, closedBy: 'client' }, 'the gateway closed the socket plainly');
  await nothingHeld(t, 1);
  await bystanderUnaffected(t);
});

t.test('a malformed frame is skipped with a note, the conversation goes on', async (t) => {
  const { sessionId, answer } = await faultyTurn(t, 'sim:malformed');
  t.equal(answer.body.turn.outcome, 'exit');
  t.equal(answer.body.conversation.connection, 'open');
  t.ok(answer.body.notes.includes('The engine sent a frame that is not a JSON element; it was skipped.'));
  t.ok(
    answer.body.turn.elements.every((e: unknown) => typeof e === 'object' && e !== null),
    'only elements are returned',
  );
  const next = await s.call('POST', turnPath(sessionId), { body: { line: 'and now?' } });
  t.match(next.body, { turn: { outcome: 'exit' }, conversation: { connection: 'open', reconnected: false } });
  t.equal(connectionsOf(s, sessionId).length, 1, 'over the same socket');
  await s.call('DELETE', conversationPath(sessionId));
  await nothingHeld(t, 1);
  await bystanderUnaffected(t);
});

t.test('a frame over ENGINE_MAX_FRAME_BYTES: engine_error naming the limit, the socket closed', async (t) => {
  const { sessionId: under } = await s.open();
  const fits = await s.call('POST', turnPath(under), { body: { line: `sim:huge:${MAX_FRAME_BYTES - 100}` } });
  t.match(fits.body, { turn: { outcome: 'exit' }, conversation: { connection: 'open' } }, 'a frame under the limit passes');
  await s.call('DELETE', conversationPath(under));

  const { answer, socket } = await faultyTurn(t, `sim:huge:${MAX_FRAME_BYTES * 4}`);
  t.equal(answer.body.turn.outcome, 'engine_error');
  t.equal(answer.body.conversation.connection, 'closed');
  t.ok(
    answer.body.notes.some((n: string) =>
      n.includes(`larger than the configured limit of ${MAX_FRAME_BYTES} bytes (ENGINE_MAX_FRAME_BYTES)`),
    ),
    'the note names the limit',
  );
  t.ok(
    answer.body.notes.some((n: string) => /^The gateway closed the engine socket with code 1009 before the turn's exit element/.test(n)),
    'the note says the gateway closed it with 1009',
  );
  t.notOk(
    answer.body.notes.some((n: string) => /1006/.test(n)),
    'not the 1006 the engine side reports',
  );
  t.ok(JSON.stringify(answer.body).length < MAX_FRAME_BYTES * 2, 'the huge frame is not in the answer');
  await eventually(() => socket.closedAt !== undefined);
  t.equal(socket.closeCode, 1009, 'the socket closed (1009: message too big)');
  await nothingHeld(t, 1);
  await bystanderUnaffected(t);
});

t.test('the engine closes with 1011 mid-turn, or reports an error then closes', async (t) => {
  const closed = await faultyTurn(t, 'sim:close-1011');
  t.equal(closed.answer.body.turn.outcome, 'engine_closed');
  t.equal(closed.answer.body.conversation.connection, 'closed');
  t.ok(
    closed.answer.body.notes.some((n: string) => /closed with code 1011/.test(n)),
    'the note names the code',
  );
  t.match(closed.socket, { closeCode: 1011, closedBy: 'engine' });

  const failed = await faultyTurn(t, 'sim:error');
  t.equal(failed.answer.body.turn.outcome, 'engine_error');
  t.equal(failed.answer.body.conversation.connection, 'closed');
  t.ok(failed.answer.body.notes.some((n: string) => /The engine reported INTERNAL: Simulated internal error/.test(n)));
  await nothingHeld(t, 1);
  await bystanderUnaffected(t);
});

t.test('an engine that accepts and never sends the session element: 502, no place held', async (t) => {
  const closed = (await s.open('coach', { device_ref: 'silent-reconnect' })).sessionId;
  await s.call('DELETE', conversationPath(closed));
  s.engine.faults.silentAfterConnect = true;
  let peak = 0;
  const sample = setInterval(() => (peak = Math.max(peak, s.app.conversationRegistry.stats.open)), 5);
  const answers = await Promise.all([
    ...[1, 2, 3].map(() => timed(() => s.call('POST', '/v1/agents/coach/conversations', { body: {} }))),
    timed(() => s.call('POST', turnPath(closed), { body: { line: 'back?' } })),
  ]);
  clearInterval(sample);
  for (const answer of answers) {
    t.equal(answer.status, 502);
    t.equal(answer.body.error, 'engine_unavailable');
    t.match(answer.body.message, new RegExp(`send its session element within ${CONNECT_TIMEOUT_MS} ms`));
    t.ok(answer.ms < CONNECT_TIMEOUT_MS + SLACK_MS, `answered within the connect timeout (${answer.ms} ms)`);
  }
  figures.faults += answers.length;
  t.ok(peak <= 5, `the places were held only while connecting (peak ${peak})`);
  s.engine.faults = {};
  await nothingHeld(t, 1);
  const silent = s.engine.record.connections.filter((c) => c.status === 101 && c.sessionId === undefined);
  t.equal(silent.length, 4, 'the engine saw the four silent sockets');
  t.ok(
    silent.every((c) => c.closedAt !== undefined),
    'and every one of them was closed',
  );
  t.match(
    (await s.call('GET', conversationPath(closed))).body,
    { connection: 'closed', close_cause: 'caller' },
    'the remembered one stays as it was',
  );
  const list = await s.call('GET', '/v1/conversations');
  t.ok(
    list.body.conversations.every((c: { session_id: string | null }) => c.session_id !== null),
    'no half-open conversation is listed',
  );
  await bystanderUnaffected(t);
});

t.test('a storm of mixed faults on 40 conversations at once, bystanders going on', async (t) => {
  const lines = ['sim:drop', 'sim:hang', 'sim:malformed', `sim:huge:${MAX_FRAME_BYTES * 2}`, 'sim:close-1011', 'sim:error', 'hello', 'bye'];
  const expected: Record<string, string> = {
    'sim:drop': 'engine_closed',
    'sim:hang': 'timeout',
    'sim:malformed': 'exit',
    [`sim:huge:${MAX_FRAME_BYTES * 2}`]: 'engine_error',
    'sim:close-1011': 'engine_closed',
    'sim:error': 'engine_error',
    hello: 'exit',
    bye: 'exit',
  };
  const others = await Promise.all([1, 2, 3].map(() => s.open('coach', {}, 'bob-token')));
  const storm = Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const line = lines[i % lines.length]!;
      const { sessionId } = await s.open();
      const answer = await s.call('POST', turnPath(sessionId), { body: { line } });
      if (line.startsWith('sim:')) figures.faults += 1;
      return { line, answer };
    }),
  );
  const calm = Promise.all(
    others.map(async ({ sessionId }) => {
      const outcomes: string[] = [];
      for (let i = 0; i < 5; i++) {
        const answer = await s.call('POST', turnPath(sessionId), { token: 'bob-token', body: { line: `calm ${i}` } });
        outcomes.push(`${answer.status} ${answer.body.turn.outcome} ${answer.body.conversation.reconnected}`);
      }
      return outcomes;
    }),
  );
  for (const { line, answer } of await storm) {
    t.equal(answer.status, 200, `${line}: answered`);
    t.equal(answer.body.turn.outcome, expected[line], `${line}: ${expected[line]}`);
  }
  for (const outcomes of await calm) t.same(outcomes, Array(5).fill('200 exit false'), 'the bystanders were unaffected');
  t.same(
    others.map(({ sessionId }) => connectionsOf(s, sessionId).length),
    [1, 1, 1],
    'each bystander kept its one socket',
  );
  await Promise.all(others.map(({ sessionId }) => s.call('DELETE', conversationPath(sessionId), { token: 'bob-token' })));
  await eventually(() => s.app.conversationRegistry.stats.open === s.engine.openSockets(), 2000);
  const view = await s.call('GET', '/v1/conversations');
  const open = view.body.conversations.filter((c: { connection: string }) => c.connection === 'open').length;
  t.equal(s.app.conversationRegistry.stats.open, open, 'what is listed open is what the registry holds');
  t.equal(s.engine.openSockets(), s.app.conversationRegistry.stats.open, 'and what the engine holds');
  await bystanderUnaffected(t);
});

t.test('no engine action was ever sent', async (t) => {
  const actions = s.engine.record.connections.flatMap((c) => c.frames).filter((f) => /^[\s\p{Cf}]*#/u.test(f) && f !== '#intro');
  t.same(actions, []);
});

t.test('figures', async (t) => {
  const { leaked } = await settleStack(s, figures);
  t.equal(leaked, 0, 'no socket leaked');
  reportFigures(t, import.meta.url, figures);
});
