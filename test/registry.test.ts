import { randomUUID } from 'node:crypto';
import t from 'tap';
import WebSocket from 'ws';
import { socketUrl } from '../src/engine/socket-url.js';
import { frameText } from '../src/http/ws-frames.js';
import { eventually, startStack, type Stack } from './support/stack.js';
import { conversationPath, turnPath } from './support/http.js';
import { scaled, sleep } from './support/time.js';

const connectionOf = (s: Stack, sessionId: string) => s.engine.record.connections.filter((c) => c.sessionId === sessionId);
const noExitEverSent = (s: Stack) =>
  s.engine.record.connections.every((c) => !c.frames.some((f) => f.trim().startsWith('#') && f !== '#intro'));

t.test('a conversation belongs to its caller and its agent', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open('coach');
  for (const [method, path, body] of [
    ['POST', turnPath(sessionId), { line: 'hi' }],
    ['GET', conversationPath(sessionId), undefined],
    ['DELETE', conversationPath(sessionId), undefined],
  ] as const) {
    const other = await s.call(method, path, { token: 'bob-token', body });
    t.equal(other.status, 403, `${method} by another caller`);
    t.equal(other.body.error, 'conversation_not_yours');
  }
  const otherAgent = await s.call('POST', turnPath(sessionId, 'coach.3'), { body: { line: 'hi' } });
  t.equal(otherAgent.status, 403, 'another agent');
  t.equal(otherAgent.body.error, 'conversation_not_yours');
  const sameUser = await s.call('POST', turnPath(sessionId), { token: 'demo-token-2', body: { line: 'hi' } });
  t.equal(sameUser.status, 200, 'two tokens of one user are one caller');
  t.same(connectionOf(s, sessionId)[0]!.frames, ['#intro', 'hi'], 'refused calls sent nothing');
});

t.test('a line while a turn is running is refused, also when two calls race', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const answers = await Promise.all([
    s.call('POST', turnPath(sessionId), { body: { line: `sim:delay:${scaled(200)}` } }),
    s.call('POST', turnPath(sessionId), { body: { line: `sim:delay:${scaled(200)}` } }),
    s.call('POST', turnPath(sessionId), { body: { line: `sim:delay:${scaled(200)}` } }),
  ]);
  t.same(answers.map((a) => a.status).sort(), [200, 409, 409]);
  t.equal(answers.find((a) => a.status === 409)!.body.error, 'turn_in_progress');
  t.equal(connectionOf(s, sessionId)[0]!.frames.length, 2, 'exactly one line went out');
});

t.test('every close cause is a plain close, never #exit', async (t) => {
  // Scaled by TEST_TIME_SCALE: a conversation must not idle out, nor its opening turn time out, before its fault.
  const s = await startStack(t, { env: { IDLE_CLOSE_MS: String(scaled(250)), TURN_BUDGET_MS: String(scaled(300)) } });
  const cases: Array<[string, string | null, string, string]> = [
    ['idle', null, 'idle', 'exit'],
    ['engine error', 'sim:error', 'turn_failed', 'engine_error'],
    ['dropped socket', 'sim:drop', 'turn_failed', 'engine_closed'],
    ['close 1011', 'sim:close-1011', 'turn_failed', 'engine_closed'],
    ['budget', 'sim:hang', 'turn_failed', 'timeout'],
  ];
  for (const [name, line, cause, outcome] of cases) {
    const { sessionId } = await s.open();
    if (line !== null) {
      const turn = await s.call('POST', turnPath(sessionId), { body: { line } });
      t.equal(turn.body.turn.outcome, outcome, `${name}: outcome`);
      t.equal(turn.body.conversation.connection, 'closed', `${name}: closed`);
    }
    await eventually(() => s.app.conversationRegistry.stats.open === 0, 2000);
    const view = await s.call('GET', conversationPath(sessionId));
    t.equal(view.body.connection, 'closed', `${name}: GET shows it closed`);
    t.equal(view.body.close_cause, cause, `${name}: cause`);
    t.ok(
      view.body.notes.some((n: string) => /end-of-conversation work/.test(n)),
      `${name}: note`,
    );
  }
  await eventually(() => s.engine.openSockets() === 0);
  const closedByGateway = s.engine.record.connections.filter((c) => c.closedBy === 'client');
  t.ok(closedByGateway.length >= 2);
  t.ok(
    closedByGateway.every((c) => c.closeCode === 1000),
    'gateway closes are code 1000',
  );
  t.ok(noExitEverSent(s), 'no engine action ever sent');
});

t.test('DELETE closes plainly and a later GET shows it closed with the note', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const del = await s.call('DELETE', conversationPath(sessionId));
  t.equal(del.status, 204);
  t.match(del.headers['x-conversation-note'], /end-of-conversation work/);
  await eventually(() => connectionOf(s, sessionId)[0]!.closeCode !== undefined);
  t.equal(connectionOf(s, sessionId)[0]!.closeCode, 1000);
  const view = await s.call('GET', conversationPath(sessionId));
  t.match(view.body, { connection: 'closed', close_cause: 'caller', turns: 1 });
  t.equal((await s.call('DELETE', conversationPath(sessionId))).status, 204, 'closing again is fine');
  t.equal((await s.call('DELETE', conversationPath(randomUUID()))).status, 404);
  await eventually(() => s.engine.record.endOfConversation.some((e) => e.sessionId === sessionId));
  t.ok(noExitEverSent(s));
});

t.test('a caller hanging up mid-turn closes the engine socket', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(5000)) } });
  const { sessionId } = await s.open();
  const hangUp = new AbortController();
  const pending = s.call('POST', turnPath(sessionId), { body: { line: 'sim:hang' }, signal: hangUp.signal });
  await eventually(() => connectionOf(s, sessionId)[0]!.frames.length === 2);
  hangUp.abort();
  await t.rejects(pending);
  await eventually(() => connectionOf(s, sessionId)[0]!.closeCode !== undefined, 1000);
  t.equal(connectionOf(s, sessionId)[0]!.closeCode, 1000);
  const view = await s.call('GET', conversationPath(sessionId));
  t.equal(view.body.close_cause, 'cancelled');
  t.equal(s.app.conversationRegistry.stats.open, 0);
});

t.test("the per-caller limit evicts the caller's least recently used idle conversation", async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_CALLER: '2' } });
  const a = await s.open();
  const b = await s.open();
  await s.call('POST', turnPath(a.sessionId), { body: { line: 'still here' } }); // b is now the least recently used
  const bob = await s.open('coach', {}, 'bob-token');
  const c = await s.open();
  t.equal((await s.call('GET', conversationPath(b.sessionId))).body.close_cause, 'evicted', 'b was evicted');
  t.equal((await s.call('GET', conversationPath(a.sessionId))).body.connection, 'open');
  t.equal((await s.call('GET', conversationPath(bob.sessionId), { token: 'bob-token' })).body.connection, 'open', "other callers' stay");
  t.equal((await s.call('GET', conversationPath(c.sessionId))).body.connection, 'open');
  const metrics = (await s.call('GET', '/metrics')).text;
  t.match(metrics, /agent_test_gateway_evictions_total\{limit="caller"\} 1/);

  // Nothing idle to close: both of the caller's conversations are in a turn.
  const busy = [
    s.call('POST', turnPath(a.sessionId), { body: { line: `sim:delay:${scaled(300)}` } }),
    s.call('POST', turnPath(c.sessionId), { body: { line: `sim:delay:${scaled(300)}` } }),
  ];
  await eventually(() => s.app.conversationRegistry.stats.busy === 2);
  const refused = await s.call('POST', '/v1/agents/coach/conversations', { body: {} });
  t.equal(refused.status, 429);
  t.equal(refused.body.error, 'caller_conversation_limit');
  await Promise.all(busy);
});

t.test("the per-pod limit evicts the pod's least recently used idle conversation", async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_POD: '2' } });
  const mine = await s.open();
  const bobs = await s.open('coach', {}, 'bob-token');
  await s.call('POST', turnPath(mine.sessionId), { body: { line: 'still here' } });
  const tenant = await s.open('coach', {}, 'tenant-token');
  t.equal((await s.call('GET', conversationPath(bobs.sessionId), { token: 'bob-token' })).body.close_cause, 'evicted');
  t.equal((await s.call('GET', conversationPath(mine.sessionId))).body.connection, 'open');
  t.match((await s.call('GET', '/metrics')).text, /agent_test_gateway_evictions_total\{limit="pod"\} 1/);

  const busy = [
    s.call('POST', turnPath(mine.sessionId), { body: { line: `sim:delay:${scaled(300)}` } }),
    s.call('POST', turnPath(tenant.sessionId), { token: 'tenant-token', body: { line: `sim:delay:${scaled(300)}` } }),
  ];
  await eventually(() => s.app.conversationRegistry.stats.busy === 2);
  const refused = await s.call('POST', '/v1/agents/coach/conversations', { token: 'bob-token', body: {} });
  t.equal(refused.status, 503);
  t.equal(refused.body.error, 'pod_conversation_limit');
  await Promise.all(busy);
});

t.test('limits hold under racing requests', async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_CALLER: '3', MAX_CONVERSATIONS_PER_POD: '5' } });
  let peakCaller = 0;
  let peakPod = 0;
  const sample = setInterval(() => {
    const mine = s.app.conversationRegistry.list('u-demo').filter((c) => c.state !== 'closed').length;
    peakCaller = Math.max(peakCaller, mine);
    peakPod = Math.max(peakPod, s.app.conversationRegistry.stats.open, s.engine.openSockets());
  }, 1);
  const tokens = ['demo-token', 'bob-token', 'tenant-token'];
  const answers = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      s.call('POST', '/v1/agents/coach/conversations', { token: tokens[i % 3]!, body: { line: 'sim:delay:50' } }),
    ),
  );
  clearInterval(sample);
  const statuses = new Set(answers.map((a) => a.status));
  t.ok(
    [...statuses].every((status) => [201, 429, 503].includes(status)),
    `only 201/429/503 (${[...statuses].join(',')})`,
  );
  t.ok(peakCaller <= 3, `never more than 3 open for one caller (${peakCaller})`);
  t.ok(peakPod <= 5, `never more than 5 open on the pod (${peakPod})`);
  await eventually(() => s.engine.openSockets() === s.app.conversationRegistry.stats.open);
});

t.test('each turn gets its whole budget, and the idle time counts from the last turn', async (t) => {
  // One budget timer per socket and one idle timer per conversation, re-armed rather than renewed:
  // turns and idle gaps that together run far past both still end as they should.
  const budgetMs = scaled(400);
  const idleMs = scaled(400);
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(budgetMs), IDLE_CLOSE_MS: String(idleMs) } });
  const { sessionId } = await s.open();
  for (let i = 0; i < 3; i++) {
    const turn = await s.call('POST', turnPath(sessionId), { body: { line: `sim:delay:${scaled(150)}` } });
    t.equal(turn.body.turn.outcome, 'exit', `turn ${i + 1} ran within its own budget`);
    await sleep(scaled(150));
  }
  const view = await s.call('GET', conversationPath(sessionId));
  t.equal(view.body.connection, 'open', 'idle gaps shorter than the idle time never closed it');
  t.equal(connectionOf(s, sessionId).length, 1, 'one socket all along');
  await eventually(() => s.app.conversationRegistry.stats.open === 0, idleMs * 3);
  t.equal((await s.call('GET', conversationPath(sessionId))).body.close_cause, 'idle', 'then it idled out');
});

t.test("a reconnect keeps the first turn's settings, loses planning and says so", async (t) => {
  const s = await startStack(t);
  const settings = { locale: 'de-DE', device_ref: 'carol', time_zone: 'Europe/Prague', run_label: 'r1', time_offset: '-P2D' };
  const { sessionId } = await s.open('coach', settings);
  await s.call('POST', turnPath(sessionId), { body: { line: 'first' } });
  t.equal((await s.call('DELETE', conversationPath(sessionId))).status, 204);

  const changed = await s.call('POST', turnPath(sessionId), { body: { line: 'x', locale: 'en-US' } });
  t.equal(changed.status, 409);
  t.equal(changed.body.error, 'conversation_settings_fixed');
  const stranger = await s.call('POST', turnPath(sessionId), { token: 'bob-token', body: { line: 'x' } });
  t.equal(stranger.body.error, 'conversation_not_yours', 'a remembered conversation is still refused to others');
  t.equal(s.engine.record.connections.length, 1, 'refusals opened no socket');

  const back = await s.call('POST', turnPath(sessionId), { body: { line: 'planning?' } });
  t.equal(back.status, 200);
  t.match(back.body.conversation, { reconnected: true, planning_lost: true, connection: 'open', turns: 3, locale: 'de-DE' });
  t.match(back.body.turn.text, /This socket is new \(0 turns\); the session has 2 lines: my earlier planning is gone\./);
  t.ok(back.body.notes.some((n: string) => /kept its messages but not the earlier turns' planning/.test(n)));
  const second = s.engine.record.connections[1]!;
  t.equal(second.query.sessionId, sessionId);
  t.match(second.query, {
    locale: 'de-DE',
    deviceId: 'mcp:carol',
    timeZone: 'Europe/Prague',
    runLabel: 'r1',
    timeOffset: '-P2D',
    testMode: 'true',
  });
  const next = await s.call('POST', turnPath(sessionId), { body: { line: 'again' } });
  t.equal(next.body.conversation.reconnected, false, 'the next turn uses the new socket');
  t.equal(s.engine.record.connections.length, 2);
});

t.test('a session this pod never held reconnects; an unknown one is 404', async (t) => {
  const s = await startStack(t);
  const settings = { deviceRef: 'mcp:dave', locale: 'en-US', timeZone: null, runLabel: null, timeOffset: null };
  const direct = new WebSocket(socketUrl(s.engine.url, 'coach', settings));
  const sessionId = await new Promise<string>((resolve) =>
    direct.once('message', (data) => resolve(JSON.parse(frameText(data)).sessionId)),
  );
  direct.close();
  const back = await s.call('POST', turnPath(sessionId), { body: { line: 'hello', device_ref: 'dave' } });
  t.equal(back.status, 200);
  t.match(back.body.conversation, { reconnected: true, planning_lost: true, device_ref: 'mcp:dave' });
  t.ok(back.body.notes.some((n: string) => /another pod or a restart/.test(n)));

  const unknown = await s.call('POST', turnPath(randomUUID()), { body: { line: 'hello' } });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'session_not_found');
  t.equal(s.app.conversationRegistry.stats.open, 1, 'the failed reconnect holds no place');
});

t.test("GET /v1/conversations lists the caller's own, newest first", async (t) => {
  const s = await startStack(t);
  const first = await s.open();
  const second = await s.open('coach.3');
  await s.open('coach', {}, 'bob-token');
  await s.call('DELETE', conversationPath(first.sessionId));
  const list = await s.call('GET', '/v1/conversations');
  t.equal(list.status, 200);
  t.same(
    list.body.conversations.map((c: { session_id: string }) => c.session_id),
    [second.sessionId, first.sessionId],
  );
  const [open, closed] = list.body.conversations;
  t.match(open, { agent: 'agent:coach.3', connection: 'open', busy: false, turns: 1 });
  t.match(closed, { connection: 'closed', close_cause: 'caller' });
  for (const c of list.body.conversations) {
    t.type(c.created_at, 'string');
    t.type(c.last_turn_at, 'string');
    t.type(c.idle_seconds, 'number');
  }
});

t.test('no leaks: registry, gauge and real sockets agree after a mix of events', async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_CALLER: '3', TURN_BUDGET_MS: '200' } });
  const lines = ['hi', 'sim:error', 'sim:drop', 'sim:hang', 'bye', 'order', 'sim:close-1011'];
  for (let round = 0; round < 3; round++) {
    await Promise.all(
      lines.map(async (line, i) => {
        const token = i % 2 === 0 ? 'demo-token' : 'bob-token';
        const opened = await s.call('POST', '/v1/agents/coach/conversations', { token, body: {} });
        if (opened.status !== 201) return;
        await s.call('POST', turnPath(opened.body.session_id), { token, body: { line } });
        if (i % 3 === 0) await s.call('DELETE', conversationPath(opened.body.session_id), { token });
      }),
    );
  }
  await eventually(() => s.engine.openSockets() === s.app.conversationRegistry.stats.open, 3000);
  const metrics = (await s.call('GET', '/metrics')).text;
  const gauge = Number(/agent_test_gateway_open_conversations (\d+)/.exec(metrics)?.[1]);
  t.equal(gauge, s.app.conversationRegistry.stats.open, 'the gauge matches the registry');
  t.equal(s.engine.openSockets(), s.app.conversationRegistry.stats.open, 'the registry matches the real sockets');
  t.equal(s.app.conversationRegistry.stats.busy, 0);
  await s.app.conversationRegistry.drain(0);
  await eventually(() => s.engine.openSockets() === 0);
  t.ok(noExitEverSent(s));
});
