/**
 * The API contract: openapi.yaml is what /openapi.json serves, it lints clean, and every answer
 * the real stack gives (engine and platform simulators, the gateway on loopback) conforms to the
 * schema the document declares for its route, status and content type — statuses, codes and
 * headers included. A field the schema does not know, or a required one that is missing, fails.
 */

import { execFile } from 'node:child_process';
import t, { type Test } from 'tap';
import { doc, escapePointer, FULL_START_BODY, resolveRef, validatorAt } from './support/openapi.js';
import { ROOT } from './support/root.js';
import { childEnv, eventually, startStack, type Stack } from './support/stack.js';
import { conversationPath, memoryPath, turnPath, type Answer, type Json } from './support/http.js';
import { scaled } from './support/time.js';

type Method = 'get' | 'post' | 'put' | 'delete';

const operationPointer = (route: string, method: Method) => `/paths/${escapePointer(route)}/${method}`;

function operation(route: string, method: Method): Json {
  const op = doc.paths?.[route]?.[method];
  if (op === undefined) throw new Error(`openapi.yaml has no ${method.toUpperCase()} ${route}`);
  return op;
}

const errorCodes: string[] = doc.components.schemas.ErrorCode.enum;
const mediaType = (header: unknown): string => (typeof header === 'string' ? header : '').split(';')[0]!.trim().toLowerCase();

/** Which declared (route, status) pairs and error codes the stack was made to answer. */
const exercised = new Set<string>();
const codesSeen = new Set<string>();

type Tap = Pick<Test, 'ok' | 'equal' | 'fail'>;

function validateAgainst(tt: Tap, pointer: string, value: unknown, what: string): boolean {
  const validate = validatorAt(pointer);
  const ok = validate(value);
  tt.ok(ok, `${what} conforms to ${pointer}`, ok ? {} : { errors: validate.errors, value });
  return ok;
}

/**
 * Checks one real answer against the document: the status is declared for the route, the content
 * type is declared for that status, the body (each line of an NDJSON stream) validates, declared
 * headers are present and valid, and an error's code is named in the response's description.
 */
function conform(tt: Tap, answer: Answer, route: string, method: Method, expected?: { status: number; error?: string }): void {
  const label = `${method.toUpperCase()} ${route} → ${answer.status}`;
  if (expected !== undefined) {
    tt.equal(answer.status, expected.status, `${label}: status`, { body: answer.body ?? answer.text });
    if (expected.error !== undefined) tt.equal(answer.body?.error, expected.error, `${label}: error code`);
  }
  const declared = operation(route, method).responses?.[String(answer.status)];
  if (declared === undefined) {
    tt.fail(`${label}: status not declared in openapi.yaml`, { body: answer.text });
    return;
  }
  exercised.add(`${method.toUpperCase()} ${route} ${answer.status}`);
  const { node: response, pointer: refPointer } = resolveRef(declared);
  const responsePointer = refPointer ?? `${operationPointer(route, method)}/responses/${answer.status}`;

  for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
    const value = answer.headers[name.toLowerCase()];
    if (value === undefined) {
      tt.ok(header.required !== true, `${label}: required header ${name} present`);
      continue;
    }
    const { node: h, pointer: hPointer } = resolveRef(header);
    const base = hPointer ?? `${responsePointer}/headers/${escapePointer(name)}`;
    if (h.schema !== undefined) validateAgainst(tt, `${base}/schema`, value, `${label} header ${name}`);
  }

  const content = response.content as Record<string, Json> | undefined;
  if (content === undefined) {
    tt.equal(answer.text, '', `${label}: no body, as declared`);
    return;
  }
  const type = mediaType(answer.headers['content-type']);
  if (content[type] === undefined) {
    tt.fail(`${label}: content type ${type} not declared (${Object.keys(content).join(', ')})`);
    return;
  }
  const mediaPointer = `${responsePointer}/content/${escapePointer(type)}`;
  if (type === 'application/x-ndjson') {
    // A stream is a sequence: its media type has an itemSchema, which each line must meet.
    const schemaPointer = `${mediaPointer}/itemSchema`;
    const lines = answer.text.split('\n').filter((l) => l !== '');
    tt.ok(lines.length >= 2, `${label}: an NDJSON stream has element lines and a last line`);
    lines.forEach((line, i) => validateAgainst(tt, schemaPointer, JSON.parse(line), `${label} NDJSON line ${i + 1}`));
    const last = JSON.parse(lines.at(-1)!);
    if (typeof last.error === 'string') codesSeen.add(last.error);
    return;
  }
  const body = type === 'application/json' ? answer.body : answer.text;
  validateAgainst(tt, `${mediaPointer}/schema`, body, `${label} body`);
  if (typeof answer.body?.error === 'string' && answer.status >= 400) {
    codesSeen.add(answer.body.error);
    tt.ok(
      String(response.description).includes(`\`${answer.body.error}\``),
      `${label}: the response description names \`${answer.body.error}\``,
    );
  }
}

/** The request schema agrees with the service: a body it refuses, the schema refuses too (and the reverse). */
function requestSchemaSays(tt: Tap, route: string, method: Method, body: unknown, valid: boolean): void {
  const pointer = `${operationPointer(route, method)}/requestBody/content/application~1json/schema`;
  const validate = validatorAt(pointer);
  tt.equal(
    validate(body),
    valid,
    `request schema of ${method.toUpperCase()} ${route} ${valid ? 'accepts' : 'refuses'} ${JSON.stringify(body).slice(0, 80)}`,
  );
}

const START = '/v1/agents/{agent}/conversations';
const TURN = '/v1/agents/{agent}/conversations/{session_id}/turns';
const CONV = '/v1/agents/{agent}/conversations/{session_id}';
const LIST = '/v1/conversations';
const MEMORY = '/v1/agents/{agent}/memory/{device_ref}';

const NDJSON = { accept: 'application/x-ndjson' };
const UNKNOWN_SESSION = '0b7f0a52-3c1e-4b9a-9d51-6f1a2b3c4d5e';
/** A small body limit, so that a body over it is quick to send. */
const MAX_BODY_BYTES = 65_536;

// The linter runs as a child process alongside the stack tests.
const lint = new Promise<{ code: number; output: string }>((resolve) => {
  execFile(
    `${ROOT}node_modules/.bin/redocly`,
    ['lint', 'openapi.yaml'],
    { cwd: ROOT, env: childEnv({ REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }), timeout: scaled(60_000) },
    (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
  );
});

t.test('GET /openapi.json serves openapi.yaml', async (t) => {
  const s = await startStack(t);
  const served = await s.call('GET', '/openapi.json', { token: null });
  t.equal(served.status, 200);
  t.equal(mediaType(served.headers['content-type']), 'application/json');
  t.strictSame(served.body, doc, 'the served document deep-equals openapi.yaml');
  conform(t, served, '/openapi.json', 'get');
});

t.test('redocly lint passes', async (t) => {
  const result = await lint;
  t.equal(result.code, 0, 'redocly lint openapi.yaml exits 0', { output: result.output });
});

t.test('the document', async (t) => {
  t.equal(doc.openapi, '3.2.0');
  t.same(
    [...errorCodes].sort(),
    Object.keys((await import('../src/errors.js')).errorStatus).sort(),
    'ErrorCode lists every code of src/errors.ts',
  );
  for (const schema of ['TurnResult', 'Turn', 'TurnConversation', 'Conversation', 'MemorySnapshot', 'RestoreResult', 'Error']) {
    t.equal(doc.components.schemas[schema].additionalProperties, false, `${schema} is closed`);
  }
  for (const [route, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'delete'] as const) {
      const op = item[method];
      if (op === undefined) continue;
      t.type(op.operationId, 'string', `${method} ${route} has an operationId`);
      t.ok(Array.isArray(op.tags) && op.tags.length > 0, `${method} ${route} has a tag`);
      if (route.startsWith('/v1/') || route === '/mcp') {
        t.notOk('security' in op, `${method} ${route} keeps the bearer security`);
        t.ok(op.responses['401'], `${method} ${route} declares 401`);
      } else {
        t.same(op.security, [], `${method} ${route} needs no token`);
      }
    }
  }
  t.same(doc.security, [{ bearerAuth: [] }]);
  t.match(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
  // The schemas state the facts callers must know.
  const text = JSON.stringify(doc).replaceAll('\\n', ' ').replace(/\s+/g, ' ');
  for (const fact of [
    /count[s]? towards usage like any other conversation/,
    /one engine socket/i,
    /plain socket close/,
    /about 30 s later/,
    /delete-then-write/,
    /confirmation-gated/,
    /`de_DE` is sent as `de-DE`/,
    /forced under the `mcp:`/,
    /would date the session in the future/,
    /only `#` line accepted is exactly `#intro`/,
  ]) {
    t.match(text, fact, `the document says ${fact}`);
  }
});

t.test('contract conformance on the real stack', async (t) => {
  const s = await startStack(t, { env: { MAX_BODY_BYTES: String(MAX_BODY_BYTES) } });

  await t.test('operations', async (t) => {
    conform(t, await s.call('GET', '/healthz', { token: null }), '/healthz', 'get', { status: 200 });
    conform(t, await s.call('GET', '/readyz', { token: null }), '/readyz', 'get', { status: 200 });
    const metrics = await s.call('GET', '/metrics', { token: null });
    conform(t, metrics, '/metrics', 'get', { status: 200 });
    t.match(metrics.text, /agent_test_gateway_/);
    const unknown = await s.call('GET', '/v2/nothing', { token: null });
    t.equal(unknown.status, 404);
    validateAgainst(t, '/components/schemas/Error', unknown.body, 'an unknown route');
    t.equal(unknown.body.error, 'not_found');
  });

  await t.test('only the documented methods, media types and paths', async (t) => {
    // HEAD is not listed, so it is not answered: a 404 like any unknown route.
    for (const path of ['/healthz', '/openapi.json', '/v1/conversations']) {
      const head = await s.call('HEAD', path);
      t.equal(head.status, 404, `HEAD ${path} is not answered`);
      t.equal(head.text, '');
    }
    // Unreadable percent-encoding: 404 on a path no route has, 400 naming the parameter on a route's.
    for (const path of ['/v2/%zz', '/v1/agents/%zz/nope', '/%E0%A4%A', '/v1/agents/%zz/conversations/x/y']) {
      const unknown = await s.call('GET', path);
      t.equal(unknown.status, 404, `GET ${path} is an unknown route`);
      validateAgainst(t, '/components/schemas/Error', unknown.body, `GET ${path}`);
      t.equal(unknown.body.error, 'not_found');
    }
    const badAgent = await s.call('POST', '/v1/agents/%zz/conversations');
    conform(t, badAgent, START, 'post', { status: 400, error: 'invalid_request' });
    t.match(badAgent.body.details.problems, [{ field: 'agent', rule: 'agent must be valid percent-encoded UTF-8' }]);
    conform(t, await s.call('GET', memoryPath('alice').replace('alice', '%C3')), MEMORY, 'get', { status: 400, error: 'invalid_request' });
    t.equal((await s.call('PATCH', '/v1/agents/%zz/conversations')).status, 404, 'a method no route has is a 404');

    // Accept is negotiated: a stream only when the caller prefers application/x-ndjson.
    const streams: Array<[string, boolean]> = [
      ['application/x-ndjson', true],
      ['application/x-ndjson;q=0', false],
      ['application/x-ndjson;q=0, application/json', false],
      ['application/json, application/x-ndjson;q=0.5', false],
      ['application/json;q=0.5, application/x-ndjson', true],
      ['*/*', false],
      ['application/*', false],
      ['text/html', false],
    ];
    for (const [accept, streamed] of streams) {
      // Another caller's conversations, so the list below sees only its own.
      const answer = await s.call('POST', '/v1/agents/coach/conversations', { token: 'bob-token', headers: { accept } });
      conform(t, answer, START, 'post', { status: 201 });
      t.equal(mediaType(answer.headers['content-type']), streamed ? 'application/x-ndjson' : 'application/json', `Accept: ${accept}`);
      await s.call('DELETE', conversationPath(answer.headers.location!.toString().split('/').at(-1)!), { token: 'bob-token' });
    }
  });

  let sessionId = '';
  await t.test('start, turns, streaming', async (t) => {
    const intro = await s.call('POST', '/v1/agents/coach/conversations');
    conform(t, intro, START, 'post', { status: 201 });
    t.equal(intro.headers.location, `/v1/agents/coach/conversations/${intro.body.session_id}`);
    t.equal(intro.body.turn.line, '#intro');
    sessionId = intro.body.session_id;
    // The closed schemas do bite: a field they do not know, or a missing one, fails.
    const turnResult = validatorAt('/components/schemas/TurnResult');
    t.notOk(turnResult({ ...intro.body, extra: true }), 'TurnResult refuses an unknown field');
    t.notOk(turnResult({ ...intro.body, turn: { ...intro.body.turn, extra: 1 } }), 'Turn refuses an unknown field');
    const { notes: _notes, ...withoutNotes } = intro.body;
    t.notOk(turnResult(withoutNotes), 'TurnResult requires notes');
    t.notOk(validatorAt('/components/schemas/Error')({ error: 'internal', message: 'x', statusCode: 500 }), 'Error is closed');
    t.notOk(validatorAt('/components/schemas/Error')({ error: 'Service Unavailable', message: 'x' }), 'Error codes are an enum');

    requestSchemaSays(t, START, 'post', FULL_START_BODY, true);
    const started = await s.call('POST', '/v1/agents/coach.3/conversations', { body: FULL_START_BODY });
    conform(t, started, START, 'post', { status: 201 });
    t.match(started.body.conversation, { locale: 'de-DE', device_ref: 'mcp:alice', time_offset: '-P10D' });

    const streamed = await s.call('POST', '/v1/agents/coach/conversations', { body: {}, headers: NDJSON });
    conform(t, streamed, START, 'post', { status: 201 });
    t.match(streamed.headers.location, /^\/v1\/agents\/coach\/conversations\//);

    const turnBody = { line: 'Where is my order? Which size fits?' };
    requestSchemaSays(t, TURN, 'post', turnBody, true);
    const turn = await s.call('POST', turnPath(sessionId), { body: turnBody });
    conform(t, turn, TURN, 'post', { status: 200 });
    t.same(turn.body.turn.tools, ['lookup_order']);
    t.same(turn.body.turn.shown, ['size_chart']);

    const same = await s.call('POST', turnPath(sessionId), { body: { line: 'sim:unknown', locale: 'en-US' }, headers: NDJSON });
    conform(t, same, TURN, 'post', { status: 200 });
    t.match(same.text, /"mystery"/, 'unknown elements pass through the stream');

    const failed = await s.call('POST', turnPath(started.body.session_id, 'coach.3'), { body: { line: 'sim:error' } });
    conform(t, failed, TURN, 'post', { status: 200 });
    t.match(failed.body, { turn: { outcome: 'engine_error' }, conversation: { connection: 'closed' } });

    const reconnected = await s.call('POST', turnPath(started.body.session_id, 'coach.3'), { body: { line: 'again' } });
    conform(t, reconnected, TURN, 'post', { status: 200 });
    t.match(reconnected.body.conversation, { reconnected: true, planning_lost: true, locale: 'de-DE' });

    const bye = await s.call('POST', turnPath(streamed.headers.location!.toString().split('/').at(-1)!), { body: { line: 'bye' } });
    conform(t, bye, TURN, 'post', { status: 200 });
    t.match(bye.body.conversation, { ended_by_agent: true, connection: 'closed' });
  });

  await t.test('conversation views', async (t) => {
    // Scaled by TEST_TIME_SCALE: the calls below must land while it runs.
    const slow = s.call('POST', turnPath(sessionId), { body: { line: `sim:delay:${scaled(1000)}` } });
    await eventually(() => s.app.conversationRegistry.stats.busy > 0);
    const busyView = await s.call('GET', conversationPath(sessionId));
    conform(t, busyView, CONV, 'get', { status: 200 });
    t.match(busyView.body, { state: 'busy', busy: true, connection: 'open' });
    conform(t, await s.call('POST', turnPath(sessionId), { body: { line: 'too soon' } }), TURN, 'post', {
      status: 409,
      error: 'turn_in_progress',
    });
    conform(t, await slow, TURN, 'post', { status: 200 });

    const fixed = await s.call('POST', turnPath(sessionId), { body: { line: 'Hi', locale: 'fr-FR', run_label: 'x' } });
    conform(t, fixed, TURN, 'post', { status: 409, error: 'conversation_settings_fixed' });
    t.same(fixed.body.details.fields, ['locale', 'run_label']);

    const list = await s.call('GET', '/v1/conversations');
    conform(t, list, LIST, 'get', { status: 200 });
    t.equal(list.body.conversations.length, 3, 'the three conversations started so far, newest first');
    t.ok(list.body.conversations[0].created_at >= list.body.conversations[2].created_at);

    const closed = await s.call('DELETE', conversationPath(sessionId));
    conform(t, closed, CONV, 'delete', { status: 204 });
    t.match(closed.headers['x-conversation-note'], /end-of-conversation work/);
    const after = await s.call('GET', conversationPath(sessionId));
    conform(t, after, CONV, 'get', { status: 200 });
    t.match(after.body, { state: 'closed', connection: 'closed', close_cause: 'caller' });
    conform(t, await s.call('DELETE', conversationPath(sessionId)), CONV, 'delete', { status: 204 });
    conform(t, await s.call('GET', '/v1/conversations'), LIST, 'get', { status: 200 });
  });

  await t.test('400: bad input, nothing sent', async (t) => {
    const bad: Array<{ body: unknown; schemaCanTell: boolean }> = [
      { body: { line: '#exit' }, schemaCanTell: true },
      { body: { line: ' #ready:key=x' }, schemaCanTell: true },
      { body: { line: 'two\nlines' }, schemaCanTell: true },
      { body: { line: 'tab\there' }, schemaCanTell: true },
      { body: { line: '   ' }, schemaCanTell: true },
      { body: { line: 'x'.repeat(4001) }, schemaCanTell: true },
      { body: { nope: 1 }, schemaCanTell: true },
      { body: { time_offset: 'P10D' }, schemaCanTell: true },
      { body: { time_offset: '-P0D' }, schemaCanTell: true },
      { body: { locale: 'en US' }, schemaCanTell: true },
      { body: { locale: null }, schemaCanTell: true },
      { body: { device_ref: 'a b' }, schemaCanTell: true },
      { body: { device_ref: 'mcp:' }, schemaCanTell: true },
      { body: { run_label: 'a/b' }, schemaCanTell: true },
      { body: { time_zone: 'Europe/Prague`' }, schemaCanTell: true },
      { body: { time_zone: 'Mars/Olympus' }, schemaCanTell: false },
      { body: { time_zone: 'europe/prague' }, schemaCanTell: false },
      { body: { locale: 'xx-1234567890' }, schemaCanTell: true },
      { body: [], schemaCanTell: true },
    ];
    const before = s.engine.record.connections.length;
    for (const { body, schemaCanTell } of bad) {
      const answer = await s.call('POST', '/v1/agents/coach/conversations', { body });
      conform(t, answer, START, 'post', { status: 400, error: 'invalid_request' });
      t.ok(answer.body.details?.problems?.length > 0, 'the problems are listed');
      if (schemaCanTell) requestSchemaSays(t, START, 'post', body, false);
    }
    const positive = await s.call('POST', '/v1/agents/coach/conversations', { body: { time_offset: 'P10D' } });
    t.match(positive.body.message, /engine adds the offset to its own clock/);
    for (const good of [{ line: '  #intro ' }, { time_offset: '-PT0.5S' }, { time_zone: null, run_label: 'a.b_c:d@e-f' }, {}]) {
      requestSchemaSays(t, START, 'post', good, true);
    }

    conform(t, await s.call('POST', '/v1/agents/coach/conversations', { body: '{' }), START, 'post', {
      status: 400,
      error: 'invalid_request',
    });
    conform(t, await s.call('POST', '/v1/agents/coach..x!/conversations'), START, 'post', { status: 400, error: 'invalid_request' });
    conform(t, await s.call('POST', turnPath(UNKNOWN_SESSION), { body: {} }), TURN, 'post', { status: 400, error: 'invalid_request' });
    requestSchemaSays(t, TURN, 'post', {}, false);
    conform(t, await s.call('POST', turnPath('not-a-uuid'), { body: { line: 'Hi' } }), TURN, 'post', {
      status: 400,
      error: 'invalid_request',
    });
    conform(t, await s.call('GET', conversationPath('not-a-uuid')), CONV, 'get', { status: 400, error: 'invalid_request' });
    conform(t, await s.call('DELETE', conversationPath('not-a-uuid')), CONV, 'delete', { status: 400, error: 'invalid_request' });
    conform(t, await s.call('GET', memoryPath('a b')), MEMORY, 'get', { status: 400, error: 'invalid_request' });
    t.equal(s.engine.record.connections.length, before, 'nothing reached the engine');

    const big = await s.call('POST', '/v1/agents/coach/conversations', { body: { line: 'x'.repeat(MAX_BODY_BYTES) } });
    conform(t, big, START, 'post', { status: 413, error: 'body_too_large' });
    const xml = await s.call('POST', '/v1/agents/coach/conversations', { body: '<line/>', headers: { 'content-type': 'application/xml' } });
    conform(t, xml, START, 'post', { status: 415, error: 'unsupported_media_type' });
    const huge = { line: 'x', padding: 'x'.repeat(MAX_BODY_BYTES) };
    const xmlBody = { body: '<line/>', headers: { 'content-type': 'application/xml' } };
    conform(t, await s.call('POST', turnPath(UNKNOWN_SESSION), { body: huge }), TURN, 'post', { status: 413, error: 'body_too_large' });
    conform(t, await s.call('POST', turnPath(UNKNOWN_SESSION), xmlBody), TURN, 'post', { status: 415, error: 'unsupported_media_type' });
    conform(t, await s.call('PUT', memoryPath('alice'), { body: huge }), MEMORY, 'put', { status: 413, error: 'body_too_large' });
    conform(t, await s.call('PUT', memoryPath('alice'), xmlBody), MEMORY, 'put', { status: 415, error: 'unsupported_media_type' });
    // DELETE takes no body: any body, whatever its size or media type, is a 400.
    for (const body of [{ body: huge }, xmlBody, { body: {} }]) {
      const refused = await s.call('DELETE', conversationPath(UNKNOWN_SESSION), body);
      conform(t, refused, CONV, 'delete', { status: 400, error: 'invalid_request' });
      t.match(refused.body.details.problems, [{ field: 'body', rule: 'DELETE takes no body' }]);
    }
    const plain = { body: 'hello', headers: { 'content-type': 'text/plain' } };
    conform(t, await s.call('POST', '/v1/agents/coach/conversations', plain), START, 'post', {
      status: 415,
      error: 'unsupported_media_type',
    });
  });

  await t.test('401, 403', async (t) => {
    const routes: Array<[string, string, string, Method, unknown?]> = [
      ['POST', '/v1/agents/coach/conversations', START, 'post'],
      ['POST', turnPath(UNKNOWN_SESSION), TURN, 'post', { line: 'Hi' }],
      ['GET', conversationPath(UNKNOWN_SESSION), CONV, 'get'],
      ['DELETE', conversationPath(UNKNOWN_SESSION), CONV, 'delete'],
      ['GET', '/v1/conversations', LIST, 'get'],
      ['GET', memoryPath('alice'), MEMORY, 'get'],
      ['PUT', memoryPath('alice'), MEMORY, 'put', { confirm: true, snapshot: { units: [] } }],
    ];
    for (const [method, path, route, op, body] of routes) {
      conform(t, await s.call(method, path, { token: null, body }), route, op, { status: 401, error: 'unauthenticated' });
      conform(t, await s.call(method, path, { token: 'no-such-token', body }), route, op, { status: 401, error: 'unauthenticated' });
    }

    const { sessionId: mine } = await s.open('coach');
    conform(t, await s.call('POST', turnPath(mine), { token: 'bob-token', body: { line: 'Hi' } }), TURN, 'post', {
      status: 403,
      error: 'conversation_not_yours',
    });
    conform(t, await s.call('GET', conversationPath(mine), { token: 'bob-token' }), CONV, 'get', {
      status: 403,
      error: 'conversation_not_yours',
    });
    conform(t, await s.call('DELETE', conversationPath(mine, 'coach.2')), CONV, 'delete', { status: 403, error: 'conversation_not_yours' });
    conform(t, await s.call('POST', '/v1/agents/coach/conversations', { token: 'outsider-token' }), START, 'post', {
      status: 403,
      error: 'forbidden',
    });
    conform(t, await s.call('POST', '/v1/agents/hidden/conversations'), START, 'post', { status: 403, error: 'forbidden' });
    conform(t, await s.call('POST', turnPath(mine), { token: 'outsider-token', body: { line: 'Hi' } }), TURN, 'post', {
      status: 403,
      error: 'forbidden',
    });
    conform(t, await s.call('GET', conversationPath(mine), { token: 'outsider-token' }), CONV, 'get', { status: 403, error: 'forbidden' });
    conform(t, await s.call('GET', memoryPath('alice'), { token: 'outsider-token' }), MEMORY, 'get', { status: 403, error: 'forbidden' });
  });

  await t.test('404, 409', async (t) => {
    conform(t, await s.call('GET', conversationPath(UNKNOWN_SESSION)), CONV, 'get', { status: 404, error: 'not_found' });
    conform(t, await s.call('DELETE', conversationPath(UNKNOWN_SESSION)), CONV, 'delete', { status: 404, error: 'not_found' });
    conform(t, await s.call('POST', turnPath(UNKNOWN_SESSION), { body: { line: 'Hi' } }), TURN, 'post', {
      status: 404,
      error: 'session_not_found',
    });
    conform(t, await s.call('POST', '/v1/agents/nosuch/conversations'), START, 'post', { status: 404, error: 'agent_not_found' });
    conform(t, await s.call('POST', '/v1/agents/coach.9/conversations'), START, 'post', { status: 404, error: 'revision_not_found' });
    conform(t, await s.call('GET', memoryPath('never-connected')), MEMORY, 'get', { status: 404, error: 'device_not_found' });

    const draft = await s.call('POST', '/v1/agents/coach.4/conversations');
    conform(t, draft, START, 'post', { status: 409, error: 'revision_not_runnable' });
    t.match(draft.body.message, /promote it to Preview to test it/);
    conform(t, await s.call('POST', '/v1/agents/coach.1/conversations'), START, 'post', { status: 409, error: 'revision_not_runnable' });
    const noPublished = await s.call('POST', '/v1/agents/preview-only/conversations');
    conform(t, noPublished, START, 'post', { status: 409, error: 'no_published_revision' });
    t.match(noPublished.body.message, /preview-only\.1/);
    conform(t, await s.call('POST', turnPath(UNKNOWN_SESSION, 'draft-only'), { body: { line: 'Hi' } }), TURN, 'post', {
      status: 409,
      error: 'no_published_revision',
    });
    // Reading, closing and memory need Viewer only: a Draft or Archived ref.N is no 409 there.
    conform(t, await s.call('GET', conversationPath(UNKNOWN_SESSION, 'coach.4')), CONV, 'get', { status: 404, error: 'not_found' });
    conform(t, await s.call('DELETE', conversationPath(UNKNOWN_SESSION, 'coach.1')), CONV, 'delete', { status: 404, error: 'not_found' });
    conform(t, await s.call('GET', memoryPath('never-seen', 'coach.4')), MEMORY, 'get', { status: 404, error: 'device_not_found' });
  });

  await t.test('memory snapshot and restore', async (t) => {
    const { sessionId: id } = await s.open('coach', { device_ref: 'bea', line: 'sim:remember:likes tea' });
    const early = await s.call('GET', memoryPath('bea'));
    conform(t, early, MEMORY, 'get', { status: 200 });
    t.match(early.body, { device_ref: 'mcp:bea', unit_count: 0 });
    t.match(early.body.notes[0], /aggregated about 30 s after its connection closes/);

    await s.call('DELETE', conversationPath(id));
    await eventually(() => s.engine.record.endOfConversation.some((e) => e.sessionId === id));
    const snap = await s.call('GET', memoryPath('mcp:bea'));
    conform(t, snap, MEMORY, 'get', { status: 200 });
    t.ok(snap.body.unit_count > 0);

    const unconfirmed = await s.call('PUT', memoryPath('bea'), { body: { snapshot: snap.body } });
    conform(t, unconfirmed, MEMORY, 'put', { status: 400, error: 'confirmation_required' });
    t.match(unconfirmed.body.message, /clears the user's memory/);
    requestSchemaSays(t, MEMORY, 'put', { snapshot: snap.body }, false);
    conform(t, await s.call('PUT', memoryPath('bea'), { body: { confirm: true, snapshot: { units: 'no' } } }), MEMORY, 'put', {
      status: 400,
      error: 'invalid_request',
    });
    requestSchemaSays(t, MEMORY, 'put', { confirm: true, snapshot: { units: 'no' } }, false);

    const body = { confirm: true, snapshot: snap.body };
    requestSchemaSays(t, MEMORY, 'put', body, true);
    const restored = await s.call('PUT', memoryPath('bea'), { body });
    conform(t, restored, MEMORY, 'put', { status: 200 });
    t.equal(restored.body.restored, snap.body.unit_count);
    conform(t, await s.call('PUT', memoryPath('never-connected'), { body }), MEMORY, 'put', { status: 404, error: 'device_not_found' });
    conform(t, await s.call('PUT', memoryPath('bea', 'coach.1'), { body }), MEMORY, 'put', { status: 200 });
    conform(t, await s.call('PUT', memoryPath('bea'), { body, token: 'outsider-token' }), MEMORY, 'put', {
      status: 403,
      error: 'forbidden',
    });
  });

  await t.test('engine and platform failures', async (t) => {
    conform(t, await s.call('POST', '/v1/agents/idp/conversations'), START, 'post', { status: 502, error: 'identity_not_enabled' });
    const streamedFailure = await s.call('POST', '/v1/agents/idp/conversations', { headers: NDJSON });
    conform(t, streamedFailure, START, 'post', { status: 201 });
    t.match(JSON.parse(streamedFailure.text.trim().split('\n').at(-1)!), { error: 'identity_not_enabled' }, 'the last line is the error');

    const { sessionId: closedOne } = await s.open('coach');
    await s.call('DELETE', conversationPath(closedOne));
    s.engine.faults.handshake = 503;
    conform(t, await s.call('POST', '/v1/agents/coach/conversations'), START, 'post', { status: 502, error: 'engine_unavailable' });
    conform(t, await s.call('POST', turnPath(closedOne), { body: { line: 'Hi again' } }), TURN, 'post', {
      status: 502,
      error: 'engine_unavailable',
    });
    s.engine.faults.handshake = 401;
    conform(t, await s.call('POST', '/v1/agents/coach/conversations'), START, 'post', { status: 502, error: 'engine_refused' });
    delete s.engine.faults.handshake;

    const identity = s.engine.world.engineIdentities[0]!;
    identity.password = 'rotated';
    conform(t, await s.call('POST', '/v1/agents/secure/conversations'), START, 'post', { status: 502, error: 'identity_unrecognised' });
    identity.password = 's3cret';
    conform(t, await s.call('POST', '/v1/agents/secure/conversations'), START, 'post', { status: 201 });

    s.platform.faults.status = 500;
    // A token not seen yet, so nothing is cached.
    conform(t, await s.call('GET', '/v1/conversations', { token: 'demo-token-2' }), LIST, 'get', {
      status: 503,
      error: 'platform_unavailable',
    });
    conform(t, await s.call('POST', '/v1/agents/coach/conversations', { token: 'tenant-token' }), START, 'post', {
      status: 503,
      error: 'platform_unavailable',
    });
    const unavailable = { status: 503, error: 'platform_unavailable' };
    const token = 'demo-token-2';
    conform(t, await s.call('POST', turnPath(closedOne), { token, body: { line: 'Hi' } }), TURN, 'post', unavailable);
    conform(t, await s.call('GET', conversationPath(closedOne), { token }), CONV, 'get', unavailable);
    conform(t, await s.call('DELETE', conversationPath(closedOne), { token }), CONV, 'delete', unavailable);
    conform(t, await s.call('GET', memoryPath('alice'), { token }), MEMORY, 'get', unavailable);
    conform(
      t,
      await s.call('PUT', memoryPath('alice'), { token, body: { confirm: true, snapshot: { units: [] } } }),
      MEMORY,
      'put',
      unavailable,
    );
    s.platform.faults = {};
  });

  await t.test('draining', async (t) => {
    const { sessionId: id } = await s.open('coach');
    await s.app.conversationRegistry.drain(0);
    const ready = await s.call('GET', '/readyz', { token: null });
    conform(t, ready, '/readyz', 'get', { status: 503 });
    t.equal(ready.body.ready, false);
    conform(t, await s.call('POST', '/v1/agents/coach/conversations'), START, 'post', { status: 503, error: 'shutting_down' });
    conform(t, await s.call('POST', turnPath(id), { body: { line: 'Hi' } }), TURN, 'post', { status: 503, error: 'shutting_down' });
    const view = await s.call('GET', conversationPath(id));
    conform(t, view, CONV, 'get', { status: 200 });
    t.match(view.body, { close_cause: 'shutdown', connection: 'closed' });
  });
});

t.test('limits and identity configuration', async (t) => {
  const none = await startStack(t, {
    env: { PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: '', MAX_CONVERSATIONS_PER_CALLER: '1', MAX_CONVERSATIONS_PER_POD: '1' },
  });
  conform(t, await none.call('POST', '/v1/agents/secure/conversations'), START, 'post', { status: 503, error: 'identity_not_configured' });

  const { sessionId: bobs } = await none.open('coach', { device_ref: 'bob' }, 'bob-token');
  await none.call('DELETE', conversationPath(bobs), { token: 'bob-token' });
  // Scaled by TEST_TIME_SCALE: the refusals below must land while it runs.
  const slow = none.call('POST', '/v1/agents/coach/conversations', { token: 'bob-token', body: { line: `sim:delay:${scaled(1000)}` } });
  await eventually(() => none.app.conversationRegistry.stats.busy > 0);
  conform(t, await none.call('POST', '/v1/agents/coach/conversations', { token: 'bob-token' }), START, 'post', {
    status: 429,
    error: 'caller_conversation_limit',
  });
  conform(t, await none.call('POST', turnPath(bobs), { token: 'bob-token', body: { line: 'Hi again' } }), TURN, 'post', {
    status: 429,
    error: 'caller_conversation_limit',
  });
  conform(t, await none.call('POST', '/v1/agents/coach/conversations'), START, 'post', { status: 503, error: 'pod_conversation_limit' });
  conform(t, await slow, START, 'post', { status: 201 });
  conform(t, await none.call('GET', memoryPath('bob'), { token: 'bob-token' }), MEMORY, 'get', { status: 200 });

  const malformed: Stack = await startStack(t, { env: { PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: 'not credentials' } });
  const answer = await malformed.call('POST', '/v1/agents/secure/conversations');
  conform(t, answer, START, 'post', { status: 503, error: 'identity_malformed' });
  t.notMatch(answer.text, /not credentials/, 'the configured value never appears');

  // The engine's memory endpoints gone: the gateway answers 502 engine_unavailable.
  await malformed.open('coach', { device_ref: 'carol' });
  await malformed.engine.close();
  conform(t, await malformed.call('GET', memoryPath('carol')), MEMORY, 'get', { status: 502, error: 'engine_unavailable' });
  const restore = { confirm: true, snapshot: { units: [] } };
  conform(t, await malformed.call('PUT', memoryPath('carol'), { body: restore }), MEMORY, 'put', {
    status: 502,
    error: 'engine_unavailable',
  });
});

t.test('coverage of the declared answers', async (t) => {
  const declared: string[] = [];
  for (const [route, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'delete'] as const) {
      for (const status of Object.keys(item[method]?.responses ?? {})) declared.push(`${method.toUpperCase()} ${route} ${status}`);
    }
  }
  const missed = declared.filter((d) => !exercised.has(d));
  t.comment(`exercised ${declared.length - missed.length} of ${declared.length} declared answers; not provoked: ${missed.join('; ')}`);
  t.comment(`error codes not provoked: ${errorCodes.filter((c) => !codesSeen.has(c)).join(', ')}`);
  for (const must of [
    `POST ${START} 201`,
    `POST ${START} 400`,
    `POST ${START} 401`,
    `POST ${START} 403`,
    `POST ${START} 404`,
    `POST ${START} 409`,
    `POST ${TURN} 200`,
    `POST ${TURN} 403`,
    `POST ${TURN} 409`,
    `GET ${CONV} 200`,
    `DELETE ${CONV} 204`,
    `GET ${LIST} 200`,
    `GET ${MEMORY} 200`,
    `PUT ${MEMORY} 200`,
    'GET /healthz 200',
    'GET /readyz 200',
    'GET /readyz 503',
    'GET /metrics 200',
  ]) {
    t.ok(exercised.has(must), `exercised ${must}`);
  }
});
