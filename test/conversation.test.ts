import t from 'tap';
import { eventually, startStack, UUID } from './support/stack.js';
import { turnPath } from './support/http.js';
import { scaled } from './support/time.js';

t.test('a three-turn conversation keeps one engine socket and reports each turn', async (t) => {
  const s = await startStack(t);
  const first = await s.open('coach');
  t.equal(first.status, 201);
  t.match(first.sessionId, UUID);
  t.equal(first.headers.location, `/v1/agents/coach/conversations/${first.sessionId}`);
  t.equal(first.body.agent, 'agent:coach');
  t.equal(first.body.turn.line, '#intro');
  t.equal(first.body.turn.outcome, 'exit');
  t.match(first.body.turn.text, /^Hi, I'm coach/);
  t.equal(first.body.turn.elements[0].type, 'session', 'the session element opens the first turn');
  t.equal(first.body.turn.elements.at(-1).type, 'exit');
  t.type(first.body.turn.duration_ms, 'number');
  t.match(first.body.conversation, {
    locale: 'en-US',
    time_zone: null,
    run_label: null,
    time_offset: null,
    turns: 1,
    connection: 'open',
    ended_by_agent: false,
    reconnected: false,
    planning_lost: false,
  });
  t.match(first.body.conversation.device_ref, /^mcp:[0-9a-f-]{36}$/, 'a fresh simulated user by default');

  const path = turnPath(first.sessionId);
  const second = await s.call('POST', path, { body: { line: 'Where is my order?' } });
  t.equal(second.status, 200);
  t.equal(second.body.session_id, first.sessionId);
  t.same(second.body.turn.tools, ['lookup_order']);
  t.equal(second.body.turn.text, 'You said: Where is my order? Anything else?', 'speech after response-end belongs to the turn');
  const types = second.body.turn.elements.map((e: { type: string; name?: string }) => e.name ?? e.type);
  t.ok(types.indexOf('response-end') < types.lastIndexOf('text'), 'text arrived after response-end');

  const third = await s.call('POST', path, { body: { line: 'planning?' } });
  t.match(third.body.turn.text, /This socket has carried 2 of my turns; the session has 2 lines, so I still have my planning\./);
  t.equal(third.body.conversation.turns, 3);
  t.equal(s.engine.record.connections.length, 1, 'one socket for the whole conversation');
  t.same(s.engine.record.connections[0]!.frames, ['#intro', 'Where is my order?', 'planning?']);
});

t.test('shown elements, unknown elements and malformed frames', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const path = turnPath(sessionId);
  const shown = await s.call('POST', path, { body: { line: 'Which size fits?' } });
  t.same(shown.body.turn.shown, ['size_chart']);
  const unknown = await s.call('POST', path, { body: { line: 'sim:unknown' } });
  t.ok(
    unknown.body.turn.elements.some((e: { type: string; weird?: boolean }) => e.type === 'mystery' && e.weird === true),
    'unknown element types pass through with their fields',
  );
  const malformed = await s.call('POST', path, { body: { line: 'sim:malformed' } });
  t.equal(malformed.body.turn.outcome, 'exit');
  t.ok(
    malformed.body.notes.some((n: string) => /not a JSON element/.test(n)),
    'a malformed frame is noted, not fatal',
  );
  t.equal(malformed.body.conversation.connection, 'open');
});

t.test('the agent ending the conversation closes it', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const bye = await s.call('POST', turnPath(sessionId), { body: { line: 'bye' } });
  t.equal(bye.body.turn.outcome, 'exit');
  t.equal(bye.body.conversation.ended_by_agent, true);
  t.equal(bye.body.conversation.connection, 'closed');
  t.ok(bye.body.notes.some((n: string) => /agent ended/.test(n)));
  await eventually(() => s.engine.openSockets() === 0);
  t.notOk(s.engine.record.connections[0]!.frames.includes('#exit'), 'never #exit');
});

t.test('a hanging turn is cut off at the budget with its partial elements', async (t) => {
  // Scaled by TEST_TIME_SCALE: the opening turn runs under the same budget and must end with its exit.
  const budget = scaled(300);
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(budget) } });
  const { sessionId } = await s.open();
  const hung = await s.call('POST', turnPath(sessionId), { body: { line: 'sim:hang' } });
  t.equal(hung.status, 200);
  t.equal(hung.body.turn.outcome, 'timeout');
  const took = hung.body.turn.duration_ms as number;
  t.ok(took >= budget - 10 && took < budget + scaled(1200), `cut at the ${budget} ms budget (${took} ms)`);
  t.ok(
    hung.body.turn.elements.some((e: { type: string }) => e.type === 'text'),
    'partial elements are returned',
  );
  t.equal(hung.body.conversation.connection, 'closed');
  t.ok(hung.body.notes.some((n: string) => /budget/.test(n)));
  t.ok(hung.body.notes.some((n: string) => /end-of-conversation work/.test(n)));
  await eventually(() => s.engine.record.connections[0]!.closeCode !== undefined);
  t.equal(s.engine.record.connections[0]!.closeCode, 1000, 'a plain close');
  t.notOk(s.engine.record.connections[0]!.frames.includes('#exit'));
});

t.test('connect settings reach the engine exactly, with testMode=true', async (t) => {
  const s = await startStack(t);
  const first = await s.open('coach.3', {
    line: 'Hello there',
    locale: 'de_DE',
    device_ref: 'alice@example.com',
    time_zone: 'Etc/GMT+1',
    run_label: 'nightly:2026-11-29_a.b',
    time_offset: '-P10D',
  });
  t.equal(first.body.agent, 'agent:coach.3');
  t.match(first.body.conversation, {
    device_ref: 'mcp:alice@example.com',
    locale: 'de-DE',
    time_zone: 'Etc/GMT+1',
    run_label: 'nightly:2026-11-29_a.b',
    time_offset: '-P10D',
  });
  const conn = s.engine.record.connections[0]!;
  t.equal(conn.agentKey, 'coach.3');
  t.same(conn.query, {
    inputFormat: 'TEXT',
    outputFormat: 'JSON',
    locale: 'de-DE',
    deviceId: 'mcp:alice@example.com',
    timeZone: 'Etc/GMT+1',
    runLabel: 'nightly:2026-11-29_a.b',
    timeOffset: '-P10D',
    testMode: 'true',
  });
  t.equal(conn.params.filter(([name]) => name === 'testMode').length, 1);
  t.same(conn.frames, ['Hello there']);
  t.equal(conn.authorization, undefined, 'an open project gets no identity');
});

t.test('a later turn may repeat the connect settings but not change them', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open('coach', { locale: 'en-GB', device_ref: 'alice' });
  const path = turnPath(sessionId);
  const same = await s.call('POST', path, { body: { line: 'hi', locale: 'en_GB', device_ref: 'mcp:alice' } });
  t.equal(same.status, 200);
  const changed = await s.call('POST', path, { body: { line: 'hi', locale: 'fr-FR', time_zone: 'Europe/Paris' } });
  t.equal(changed.status, 409);
  t.equal(changed.body.error, 'conversation_settings_fixed');
  t.match(changed.body.message, /locale, time_zone are fixed/);
  t.equal(s.engine.record.connections[0]!.frames.length, 2, 'the refused line was not sent');
});
