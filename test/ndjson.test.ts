/**
 * `Accept: application/x-ndjson` on the start and turn routes: one `{"element": …}` line per
 * engine element as it arrives, then `{"result": …}` (or a final `{"error", "message"}` once
 * streaming began). Errors before the first element are ordinary JSON errors.
 */

import t from 'tap';
import { request } from 'undici';
import { eventually, startStack, UUID, type Stack } from './support/stack.js';
import { conversationPath, turnPath, type Json } from './support/http.js';
import { scaled } from './support/time.js';

interface Line {
  /** ms since the request was sent */
  at: number;

  record: Json;
}

interface Streamed {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  lines: Line[];
  /** the body, when it was not NDJSON */
  text: string;
}

/** POSTs with Accept: application/x-ndjson and records each line with its arrival time. */
async function stream(
  s: Stack,
  path: string,
  body: unknown,
  opts: { token?: string | null; signal?: AbortSignal; onLine?: (line: Line) => void } = {},
): Promise<Streamed> {
  const token = opts.token === undefined ? 'demo-token' : opts.token;
  const started = performance.now();
  const res = await request(s.url + path, {
    method: 'POST',
    headers: {
      accept: 'application/x-ndjson',
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const lines: Line[] = [];
  let text = '';
  let buffered = '';
  for await (const chunk of res.body) {
    const piece = chunk.toString();
    text += piece;
    buffered += piece;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = { at: performance.now() - started, record: JSON.parse(buffered.slice(0, nl)) };
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      opts.onLine?.(line);
    }
  }
  return { status: res.statusCode, headers: res.headers, lines, text };
}

const kind = (e: { type: string; name?: string }) => e.name ?? e.type;

t.test('elements stream in arrival order, speech after response-end included, then the result', async (t) => {
  const s = await startStack(t);
  const opened = await stream(s, '/v1/agents/coach/conversations', {});
  t.equal(opened.status, 201);
  t.match(opened.headers['content-type'], /^application\/x-ndjson/);
  t.equal(opened.headers['cache-control'], 'no-store');
  const openResult = opened.lines.at(-1)!.record.result;
  t.ok(openResult, 'the last line is the result');
  t.match(openResult.session_id, UUID);
  t.equal(opened.headers.location, `/v1/agents/coach/conversations/${openResult.session_id}`, 'Location as in the JSON form');
  t.same(
    opened.lines.slice(0, -1).map((l) => l.record.element),
    openResult.turn.elements,
    'one element line per element of the result, in order',
  );
  t.equal(opened.lines[0]!.record.element.type, 'session', 'the session element first');

  const turn = await stream(s, turnPath(openResult.session_id), { line: 'Where is my order? Which size fits?' });
  t.equal(turn.status, 200);
  t.notOk(turn.headers.location, 'no Location on a turn');
  const elements = turn.lines.slice(0, -1).map((l) => l.record.element);
  t.ok(
    turn.lines.slice(0, -1).every((l) => Object.keys(l.record).join() === 'element'),
    'element lines hold only the element',
  );
  t.same(elements.map(kind), [
    'tool-call',
    'tool-call',
    'multimodal-interaction',
    'text',
    'response-end',
    'realtime-planning',
    'text',
    'exit',
  ]);
  const responseEnd = elements.findIndex((e) => kind(e) === 'response-end');
  t.equal(elements[responseEnd + 2].text, 'Anything else?', 'speech after response-end is streamed');
  t.same(Object.keys(turn.lines.at(-1)!.record), ['result'], 'the final line is the result only');
  const result = turn.lines.at(-1)!.record.result;
  t.same(result.turn.elements, elements, "the result's elements are the streamed ones");
  t.equal(result.turn.text, 'You said: Where is my order? Which size fits? Anything else?');
  t.equal(turn.text.split('\n').filter(Boolean).length, turn.lines.length, 'every line is one JSON record');
  t.ok(turn.text.endsWith('\n'), 'the body ends with a newline');
});

t.test("the streamed result states the same facts as the JSON form's", async (t) => {
  const s = await startStack(t);
  const device = { device_ref: 'alice', locale: 'de_DE', run_label: 'ndjson' };
  const plainOpen = await s.open('coach', device);
  const streamedOpen = await stream(s, '/v1/agents/coach/conversations', device);
  const streamedResult = streamedOpen.lines.at(-1)!.record.result;

  const withoutVolatile = (r: { session_id: string; turn: { duration_ms: number; elements: Array<Record<string, unknown>> } }) => ({
    ...r,
    session_id: '<id>',
    turn: {
      ...r.turn,
      duration_ms: 0,
      elements: r.turn.elements.map((e) => (e.type === 'session' ? { ...e, sessionId: '<id>' } : e)),
    },
  });
  t.same(withoutVolatile(streamedResult), withoutVolatile(plainOpen.body), 'opening: the same result either way');

  for (const line of ['Where is my order?', 'Which size fits?', 'bye']) {
    const plain = await s.call('POST', turnPath(plainOpen.sessionId), { body: { line } });
    const streamed = await stream(s, turnPath(streamedResult.session_id), { line });
    t.equal(plain.status, streamed.status, `${line}: same status`);
    const result = streamed.lines.at(-1)!.record.result;
    t.same(withoutVolatile(result), withoutVolatile(plain.body), `${line}: the same result either way`);
  }
  const closed = await s.call('GET', conversationPath(streamedResult.session_id));
  t.equal(closed.body.close_cause, 'agent_ended');
});

t.test('element lines arrive while the turn is still running', async (t) => {
  const s = await startStack(t, { engine: { replyDelayMs: 80 } });
  const { sessionId } = await s.open();
  let firstAt: number | undefined;
  let engineFramesAtFirst: number | undefined;
  const turn = await stream(
    s,
    turnPath(sessionId),
    { line: 'Where is my order?' },
    {
      onLine: (line) => {
        if (firstAt === undefined && line.record.element?.type === 'command') {
          firstAt = line.at;
          // The engine has not sent its exit element yet: the turn is still running.
          engineFramesAtFirst = s.engine.record.connections[0]!.frames.length;
        }
      },
    },
  );
  t.equal(turn.status, 200);
  const last = turn.lines.at(-1)!;
  t.ok(last.record.result, 'the result comes last');
  t.ok(firstAt !== undefined, 'saw the first element line');
  // Seven element frames, 80 ms apart: the first one arrives about half a second before the exit.
  t.ok(last.at - firstAt! >= 300, `the first element line came ${Math.round(last.at - firstAt!)} ms before the result`);
  t.equal(engineFramesAtFirst, 2, 'the turn was running when its first line arrived');
  t.ok(
    turn.lines.slice(0, -1).every((l, i, all) => i === 0 || l.at >= all[i - 1]!.at),
    'lines in arrival order',
  );
});

t.test('a delayed reply: the result waits for the exit, the stream stays one response', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const turn = await stream(s, turnPath(sessionId), { line: 'sim:delay:300' });
  t.equal(turn.status, 200);
  const result = turn.lines.at(-1)!.record.result;
  t.equal(result.turn.outcome, 'exit');
  t.ok(result.turn.duration_ms >= 290, 'the turn took the delay');
  t.ok(turn.lines.at(-1)!.at >= 290);
});

t.test('a turn cut off at the budget streams its partial elements, then the result, like the JSON form', async (t) => {
  // Scaled by TEST_TIME_SCALE: the opening turns run under the same budget and must end with their exit.
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(300)) } });
  const plain = await s.open();
  const streamed = await s.open();

  const plainHung = await s.call('POST', turnPath(plain.sessionId), { body: { line: 'sim:hang' } });
  let busyAtFirst: number | undefined;
  const hung = await stream(
    s,
    turnPath(streamed.sessionId),
    { line: 'sim:hang' },
    { onLine: () => (busyAtFirst ??= s.app.conversationRegistry.stats.busy) },
  );
  t.equal(hung.status, 200);
  t.equal(plainHung.status, 200);
  t.same(
    hung.lines.map((l) => (l.record.element ? kind(l.record.element) : Object.keys(l.record)[0])),
    ['text', 'result'],
    'the partial element, then the result',
  );
  t.equal(busyAtFirst, 1, 'the partial element came before the cut-off: the turn was still running');
  const result = hung.lines.at(-1)!.record.result;
  t.equal(result.turn.outcome, 'timeout');
  t.equal(result.turn.outcome, plainHung.body.turn.outcome);
  t.same(result.turn.elements, plainHung.body.turn.elements);
  t.same(result.notes, plainHung.body.notes, 'the same notes');
  t.equal(result.conversation.connection, 'closed');

  for (const { sessionId } of [plain, streamed]) {
    const conn = s.engine.record.connections.find((c) => c.sessionId === sessionId)!;
    await eventually(() => conn.closeCode !== undefined);
    t.equal(conn.closeCode, 1000, 'a plain close at the engine');
    t.notOk(conn.frames.includes('#exit'), 'never #exit');
    const got = await s.call('GET', conversationPath(sessionId));
    t.equal(got.body.connection, 'closed');
    t.equal(got.body.close_cause, 'turn_failed');
  }
});

t.test('a caller hanging up mid-stream cancels the turn like the JSON form', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '10000' } });
  const plain = await s.open();
  const streamed = await s.open();

  // The JSON form: the caller gives up while the turn hangs (once the engine has the line).
  const giveUp = new AbortController();
  const plainCall = s.call('POST', turnPath(plain.sessionId), { body: { line: 'sim:hang' }, signal: giveUp.signal });
  const plainSocket = s.engine.record.connections.find((c) => c.sessionId === plain.sessionId)!;
  await eventually(() => plainSocket.frames.includes('sim:hang'));
  giveUp.abort();
  await t.rejects(plainCall, 'the JSON caller hung up');

  // The NDJSON form: hang up right after the first element line.
  const hangUp = new AbortController();
  const seen: string[] = [];
  await t.rejects(
    stream(
      s,
      turnPath(streamed.sessionId),
      { line: 'sim:hang' },
      {
        signal: hangUp.signal,
        onLine: (line) => {
          seen.push(kind(line.record.element));
          hangUp.abort();
        },
      },
    ),
  );
  t.same(seen, ['text'], 'the partial element had streamed');

  for (const { sessionId } of [plain, streamed]) {
    const conn = s.engine.record.connections.find((c) => c.sessionId === sessionId)!;
    await eventually(() => conn.closeCode !== undefined);
    t.equal(conn.closeCode, 1000, 'the engine socket closed plainly (1000)');
    t.equal(conn.closedBy, 'client');
    t.notOk(conn.frames.includes('#exit'), 'never #exit');
    await eventually(() => s.app.conversationRegistry.stats.busy === 0);
    const got = await s.call('GET', conversationPath(sessionId));
    t.equal(got.body.connection, 'closed');
    t.equal(got.body.close_cause, 'cancelled');
    t.ok(got.body.notes.some((n: string) => /cancelled/.test(n)));
  }
  t.equal(s.app.conversationRegistry.stats.open, 0);
});

t.test('errors before the first element are plain JSON errors', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const json = (r: Streamed) => {
    t.match(r.headers['content-type'], /^application\/json/, 'a JSON error, not a stream');
    return JSON.parse(r.text);
  };

  const badLine = await stream(s, turnPath(sessionId), { line: '#exit' });
  t.equal(badLine.status, 400);
  t.match(json(badLine), { error: 'invalid_request', message: /only as exactly #intro/ });

  const noToken = await stream(s, turnPath(sessionId), { line: 'hi' }, { token: null });
  t.equal(noToken.status, 401);
  t.equal(json(noToken).error, 'unauthenticated');

  const notYours = await stream(s, turnPath(sessionId), { line: 'hi' }, { token: 'bob-token' });
  t.equal(notYours.status, 403);
  t.equal(json(notYours).error, 'conversation_not_yours');

  const hidden = await stream(s, '/v1/agents/hidden/conversations', {});
  t.equal(hidden.status, 403);
  t.equal(json(hidden).error, 'forbidden');

  const unknown = await stream(s, turnPath('00000000-0000-4000-8000-000000000000'), { line: 'hi' });
  t.equal(unknown.status, 404, 'an engine that does not know the session refuses before any element');
  t.equal(json(unknown).error, 'session_not_found');

  t.same(s.engine.record.connections[0]!.frames, ['#intro'], 'none of these lines reached the engine');

  // A line while a turn is running: 409 before anything streams.
  const hangUp = new AbortController();
  const running = s.call('POST', turnPath(sessionId), { body: { line: 'sim:hang' }, signal: hangUp.signal }).catch(() => undefined);
  await eventually(() => s.app.conversationRegistry.stats.busy === 1);
  const busy = await stream(s, turnPath(sessionId), { line: 'hi' });
  t.equal(busy.status, 409);
  t.equal(json(busy).error, 'turn_in_progress');
  hangUp.abort();
  await running;
});

t.test('a failure after streaming began ends the stream with an error line', async (t) => {
  // idp's project is closed; the configured identity is known but not enabled for it, and the
  // engine says so (FORBIDDEN) only after the session element has streamed.
  const s = await startStack(t);
  const refused = await stream(s, '/v1/agents/idp/conversations', {});
  t.equal(refused.status, 201, 'the status was sent with the first element');
  t.equal(refused.lines[0]!.record.element.type, 'session');
  const last = refused.lines.at(-1)!.record;
  t.same(Object.keys(last).sort(), ['error', 'message']);
  t.equal(last.error, 'identity_not_enabled');
  t.match(last.message, /not enabled for the project/);
  t.equal(s.app.conversationRegistry.stats.open, 0, 'nothing kept open');
});
