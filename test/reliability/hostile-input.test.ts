// Hostile input, table-driven and property-based, for every field of every conversation and
// memory route: path (agent, session_id, device_ref) and body (line, locale, device_ref,
// time_zone, run_label, time_offset, confirm, snapshot), and bodies as a whole.
//
// Every answer is a 2xx or a 4xx, never a 5xx; every 4xx is JSON `{error, message}`, and a
// refusal of the input names the field. Through the engine simulator's record: nothing reaches
// the engine for a refused input, and whatever reaches it keeps the rules — no `#` line but
// `#intro`, no line break or control character in a frame, `testMode` present once and exactly
// `true`, no parameter beyond the contract's, and every value exactly as validated.
import fc from 'fast-check';
import t from 'tap';
import type { Test } from 'tap';
import { Pool } from 'undici';
import { errorStatus } from '../../src/errors.js';
import type { EngineConnection } from '../../src/simulators/engine-record.js';
import { startStack } from '../support/stack.js';
import { newFigures, reportFigures, settleStack } from './figures.js';
import { conversationPath, turnPath, type Answer } from '../support/http.js';

const MAX_BODY_BYTES = 65_536;
const figures = newFigures();
const s = await startStack(t, {
  env: { MAX_BODY_BYTES: String(MAX_BODY_BYTES), MAX_CONVERSATIONS_PER_CALLER: '50', LOG_LEVEL: 'warn' },
});
const pool = new Pool(s.url, { connections: 8 });
t.teardown(() => pool.close());

// ------------------------------------------------------------------ sending, judging

interface Sent {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** sent exactly as written: no client-side normalisation of dot segments or encodings */
  path: string;
  body?: string;
  contentType?: string;
}

async function send(req: Sent): Promise<Answer> {
  const headers: Record<string, string> = { authorization: 'Bearer demo-token' };
  if (req.body !== undefined) headers['content-type'] = req.contentType ?? 'application/json';
  const res = await pool.request({ method: req.method, path: req.path, headers, body: req.body });
  const text = await res.body.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text };
}

/** Answers about the input itself; they must name the field they refuse. */
const REFUSALS = new Set([
  'invalid_request',
  'confirmation_required',
  'conversation_settings_fixed',
  'body_too_large',
  'unsupported_media_type',
]);
const BODY_LEVEL = new Set(['body_too_large', 'unsupported_media_type']);

const engineState = () => ({
  sockets: s.engine.record.connections.length,
  frames: s.engine.record.connections.reduce((n, c) => n + c.frames.length, 0),
  memory: s.engine.record.memoryRequests.length,
});

/**
 * Sends one hostile input and judges the answer. `field` is the field being varied ('body' for
 * the body as a whole). Returns the problems found (empty when the answer keeps every rule).
 */
async function hostile(req: Sent, field: string): Promise<{ answer: Answer; problems: string[] }> {
  const before = engineState();
  const answer = await send(req);
  figures.inputs += 1;
  const problems: string[] = [];
  const b = answer.body as { error?: unknown; message?: unknown } | undefined;
  if (answer.status >= 500) {
    figures.badInput5xx += 1;
    problems.push(`answered ${answer.status}: ${answer.text.slice(0, 200)}`);
  } else if (answer.status >= 400) {
    if (typeof b?.error !== 'string' || typeof b?.message !== 'string')
      problems.push(`a ${answer.status} that is not JSON {error, message}: ${answer.text.slice(0, 200)}`);
    else if (answer.status === 431) {
      // Node's own limit on the request line, before any route: see its test below.
    } else if (!(b.error in errorStatus) || errorStatus[b.error as keyof typeof errorStatus] !== answer.status) {
      problems.push(`${answer.status} ${b.error} is not one of the API's errors: ${answer.text.slice(0, 200)}`);
    } else if (answer.status === 400 && !REFUSALS.has(b.error)) {
      problems.push(`a 400 that is not a refusal of the input: ${b.error}`);
    } else if (REFUSALS.has(b.error)) {
      const named = BODY_LEVEL.has(b.error) ? 'body' : field;
      if (!namesField(b.message, named)) problems.push(`the message does not name ${named}: ${b.message}`);
      const after = engineState();
      if (after.sockets !== before.sockets || after.frames !== before.frames || after.memory !== before.memory) {
        problems.push(`a refused input reached the engine (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
      }
    }
  } else if (answer.status < 200 || answer.status >= 300) {
    problems.push(`answered ${answer.status}`);
  }
  problems.push(...engineRecordProblems());
  return { answer, problems };
}

/** The message names the field; for the body as a whole, the body or the field it is missing or does not know. */
const namesField = (message: string, field: string): boolean =>
  message.includes(field) || (field === 'body' && /\b(body|field)\b|^line is required/.test(message));

function check(t: Test, label: string, problems: string[]): void {
  if (problems.length > 0) t.fail(`${label}: ${problems.join('; ')}`);
  else checked += 1;
}
let checked = 0;

// ------------------------------------------------------------------ what the engine may see

const CONTRACT_PARAMS = new Set([
  'inputFormat',
  'outputFormat',
  'locale',
  'deviceId',
  'testMode',
  'timeZone',
  'runLabel',
  'timeOffset',
  'sessionId',
]);
const NAME = /^[\p{L}\p{Nd}._:@-]+$/u;
const LANGUAGE_TAG = /^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/;
const NEGATIVE_DURATION = /^-P(?=\d|T\d)(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+(?:[.,]\d+)?S)?)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ZONES = new Set(Intl.supportedValuesOf('timeZone'));
const knownZone = (zone: string): boolean => {
  try {
    return ZONES.has(zone) || new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone !== undefined;
  } catch {
    return false;
  }
};
const FORBIDDEN_IN_FRAME = /[\p{Cc}\u2028\u2029]/u;
const ACTION = /^[\s\p{Cf}]*#/u;

/** What the rules forbid at the engine, for one connection. */
function connectionProblems(c: EngineConnection): string[] {
  const problems: string[] = [];
  const names = c.params.map(([name]) => name);
  for (const name of names) if (!CONTRACT_PARAMS.has(name)) problems.push(`parameter ${JSON.stringify(name)} is not the contract's`);
  for (const name of new Set(names)) if (names.filter((n) => n === name).length > 1) problems.push(`parameter ${name} sent twice`);
  const testMode = c.params.filter(([name]) => name === 'testMode');
  if (testMode.length !== 1 || testMode[0]![1] !== 'true') problems.push(`testMode is ${JSON.stringify(testMode)}`);
  const q = c.query;
  if (q.inputFormat !== 'TEXT' || q.outputFormat !== 'JSON') problems.push('formats changed');
  if (!q.deviceId?.startsWith('mcp:') || !NAME.test(q.deviceId)) problems.push(`deviceId ${JSON.stringify(q.deviceId)}`);
  if (!LANGUAGE_TAG.test(q.locale ?? '')) problems.push(`locale ${JSON.stringify(q.locale)}`);
  if (q.timeZone !== undefined && !knownZone(q.timeZone)) problems.push(`timeZone ${JSON.stringify(q.timeZone)}`);
  if (q.runLabel !== undefined && !NAME.test(q.runLabel)) problems.push(`runLabel ${JSON.stringify(q.runLabel)}`);
  if (q.timeOffset !== undefined && !NEGATIVE_DURATION.test(q.timeOffset)) problems.push(`timeOffset ${JSON.stringify(q.timeOffset)}`);
  if (q.sessionId !== undefined && !UUID.test(q.sessionId)) problems.push(`sessionId ${JSON.stringify(q.sessionId)}`);
  for (const frame of c.frames) {
    if (FORBIDDEN_IN_FRAME.test(frame)) problems.push(`frame with a line break or control character: ${JSON.stringify(frame)}`);
    if (ACTION.test(frame) && frame !== '#intro') problems.push(`engine action sent: ${JSON.stringify(frame)}`);
    if (frame.trim() === '' || [...frame].length > 4000) problems.push(`frame of length ${frame.length}`);
  }
  return problems;
}

let judgedConnections = 0;
let judgedMemory = 0;
/** The rules, over what reached the engine since the last look. */
function engineRecordProblems(): string[] {
  const problems: string[] = [];
  const connections = s.engine.record.connections;
  // Frames arrive after the connection: look again at every connection of the last few.
  for (const c of connections.slice(Math.max(0, judgedConnections - 5))) problems.push(...connectionProblems(c));
  judgedConnections = connections.length;
  for (const r of s.engine.record.memoryRequests.slice(judgedMemory)) {
    const device = /^\/api\/devices\/([^/]+)\/user$/.exec(r.path)?.[1];
    if (device !== undefined && !(decodeURIComponent(device).startsWith('mcp:') && NAME.test(decodeURIComponent(device)))) {
      problems.push(`memory look-up of device ${device}`);
    }
    if (r.method === 'POST') problems.push('a memory restore reached the engine');
  }
  judgedMemory = s.engine.record.memoryRequests.length;
  return problems;
}

/** For an accepted start: the engine got every value exactly as validated, and the answer says the same. */
function exactlyAsValidated(body: Record<string, unknown>, answer: Answer): string[] {
  const c = s.engine.record.connections.find((conn) => conn.sessionId === answer.body.session_id);
  if (c === undefined) return ['no engine connection for the accepted start'];
  const conv = answer.body.conversation;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const device = str(body.device_ref);
  const expected: Record<string, string | undefined> = {
    deviceId: device === undefined ? conv.device_ref : device.startsWith('mcp:') ? device : `mcp:${device}`,
    locale: (str(body.locale) ?? 'en-US').replaceAll('_', '-'),
    timeZone: str(body.time_zone),
    runLabel: str(body.run_label),
    timeOffset: str(body.time_offset),
  };
  const problems: string[] = [];
  for (const [name, value] of Object.entries(expected)) {
    if (c.query[name] !== value)
      problems.push(`${name} at the engine is ${JSON.stringify(c.query[name])}, validated ${JSON.stringify(value)}`);
  }
  const answered = {
    deviceId: conv.device_ref,
    locale: conv.locale,
    timeZone: conv.time_zone ?? undefined,
    runLabel: conv.run_label ?? undefined,
    timeOffset: conv.time_offset ?? undefined,
  };
  for (const [name, value] of Object.entries(answered)) {
    if (c.query[name] !== value) problems.push(`${name} answered ${JSON.stringify(value)}, sent ${JSON.stringify(c.query[name])}`);
  }
  const line = str(body.line);
  const frame = line === undefined || line.trim() === '#intro' ? '#intro' : line;
  if (c.frames[0] !== frame) problems.push(`frame ${JSON.stringify(c.frames[0])}, validated ${JSON.stringify(frame)}`);
  return problems;
}

/** Rules whose breach must be refused, whatever else the body holds. */
function mustRefuse(body: Record<string, unknown>): string | undefined {
  const line = body.line;
  if (typeof line === 'string') {
    if (/[\p{Cc}\u2028\u2029]/u.test(line)) return 'a line break or control character in line';
    if (ACTION.test(line) && line.trim() !== '#intro') return 'an engine action in line';
  }
  for (const field of ['locale', 'device_ref', 'run_label', 'time_offset', 'time_zone']) {
    const v = body[field];
    if (typeof v === 'string' && /[&=%`\s#?]/.test(v)) return `a query-significant character in ${field}`;
    if (typeof v === 'string' && field !== 'time_zone' && v.includes('+')) return `+ in ${field}`;
  }
  return undefined;
}

// ------------------------------------------------------------------ hostile values

const LINE_BREAKS = ['\n', '\r', '\r\n', '\u2028', '\u2029', '\u0085', '\u000b', '\u000c', '\u001c', '\u001d', '\u001e', '\u001f'];
const CONTROLS = ['\u0000', '\u0007', '\u0008', '\t', '\u001b', '\u007f', '\u0080', '\u009f'];
const HIDDEN_PREFIXES = ['', ' ', '  ', '\u00a0', '\u200b', '\u200e', '\u2060', '\ufeff', '\u3000', '\u180e', '\u00ad', '\u061c', '\u202e'];
const EXIT_VARIANTS = [
  '#exit',
  '#EXIT',
  '#exit ',
  '#exit:now',
  '#ready:key=agent:hidden',
  '#intro#exit',
  '#intro please',
  '##intro',
  '#Intro',
  '#',
  ...HIDDEN_PREFIXES.map((p) => `${p}#exit`),
  ...LINE_BREAKS.map((b) => `hello${b}#exit`),
  ...LINE_BREAKS.map((b) => `#intro${b}`),
];
const STRINGS = [
  '',
  ' ',
  '%26testMode%3Dfalse',
  'x%26testMode%3Dfalse',
  'x&testMode=false',
  '&testMode=false',
  '&',
  '=',
  'a=b',
  '+',
  'a+b',
  '%',
  '%00',
  '%zz',
  '%2B',
  '`',
  'a`b',
  '?',
  'a?b=c',
  '#exit',
  '#intro',
  '\\',
  '"',
  "'",
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '${jndi:ldap://x}',
  'null',
  'true',
  '__proto__',
  'mcp:',
  'mcp:mcp:',
  'client:bob',
  'Zoë',
  'e\u0301',
  '\u202eevil',
  '😀',
  '\ud800',
  'a\udfffb',
  '\uFFFD',
  '\uFFFF',
  '＃exit',
  'İ',
  'x'.repeat(257),
  'x'.repeat(4001),
  '😀'.repeat(4001),
  'x'.repeat(50_000),
  'Europe/Prague',
  'Europe/Prague`',
  'europe/prague',
  'Etc/GMT+1',
  'Mars/Olympus_Mons',
  '+01:00',
  'UTC',
  'en_US',
  'de_DE',
  'en-US,de-DE',
  'en US',
  'zh-Hant-TW',
  'P10D',
  '-P10D',
  '+P10D',
  '-P0D',
  '-PT0S',
  '-P1.5D',
  'P-10D',
  '-P',
  '--P1D',
  '-P1D&testMode=false',
  ...EXIT_VARIANTS,
  ...LINE_BREAKS.flatMap((b) => [b, `a${b}b`]),
  ...CONTROLS.map((c) => `a${c}b`),
];
const NOT_STRINGS: unknown[] = [null, 0, -1, 1.5, 1e308, true, false, [], ['x'], [null], {}, { a: 1 }, { toString: 'x' }];
const VALUES: unknown[] = [...STRINGS, ...NOT_STRINGS];
const CONNECT_FIELDS = ['locale', 'device_ref', 'time_zone', 'run_label', 'time_offset'] as const;

const encodeSegment = (value: string): string => {
  try {
    return encodeURIComponent(value);
  } catch {
    // A lone surrogate cannot be encoded: send the raw (invalid) UTF-8 of one instead.
    return '%ED%A0%80';
  }
};
/** Path segments, percent-encoded as a client would, plus ones written raw on purpose. */
const SEGMENTS: Array<[string, string]> = [
  ...STRINGS.filter((v) => v !== '').map((v): [string, string] => [JSON.stringify(v).slice(0, 40), encodeSegment(v)]),
  ['raw %26testMode%3Dfalse', '%26testMode%3Dfalse'],
  ['raw %23exit', '%23exit'],
  ['raw %zz', '%zz'],
  ['raw %', '%'],
  ['raw truncated UTF-8', '%E0%A4%A'],
  ['raw surrogate UTF-8', '%ED%A0%80'],
  ['raw overlong /', '%C0%AF'],
  ['raw %00', '%00'],
  ['raw %2F', 'a%2Fb'],
  ['raw ..', '..'],
  ['raw .', '.'],
  ['raw +', 'a+b'],
  ['raw =', 'a=b'],
  ['raw &', 'a&b'],
  ['long 100', 'a'.repeat(100)],
  ['long 128', 'a'.repeat(128)],
  ['long 129', 'a'.repeat(129)],
  ['long 256', 'a'.repeat(256)],
  ['long 257', 'a'.repeat(257)],
  ['long letters 256', encodeSegment('𝔘'.repeat(256))],
  ['long 3000', 'a'.repeat(3000)],
  ['long encoded 9000', encodeSegment('é'.repeat(1500))],
  ['long 10000', 'b'.repeat(10_000)],
  ['agent coach.0', 'coach.0'],
  ['agent coach.07', 'coach.07'],
  ['agent coach.-1', 'coach.-1'],
  ['agent coach.1e3', 'coach.1e3'],
  ['agent coach.9999999999', 'coach.9999999999'],
  ['agent coach..3', 'coach..3'],
  ['agent .coach', '.coach'],
  ['uuid upper', '0A1B2C3D-0000-4000-8000-00000000000A'],
  ['uuid no dashes', '0a1b2c3d000040008000000000000000'],
  ['uuid braces', '%7B0a1b2c3d-0000-4000-8000-00000000000a%7D'],
  ['uuid + #exit', '0a1b2c3d-0000-4000-8000-00000000000a%23exit'],
  ['uuid g', '0a1b2c3d-0000-4000-8000-00000000000g'],
];

const UUID_OK = '0a1b2c3d-0000-4000-8000-00000000000a';
const PATH_ROUTES: Array<{ field: string; make: (seg: string) => Sent }> = [
  { field: 'agent', make: (a) => ({ method: 'POST', path: `/v1/agents/${a}/conversations`, body: '{}' }) },
  { field: 'agent', make: (a) => ({ method: 'POST', path: `/v1/agents/${a}/conversations/${UUID_OK}/turns`, body: '{"line":"hi"}' }) },
  { field: 'agent', make: (a) => ({ method: 'GET', path: `/v1/agents/${a}/conversations/${UUID_OK}` }) },
  { field: 'agent', make: (a) => ({ method: 'DELETE', path: `/v1/agents/${a}/conversations/${UUID_OK}` }) },
  { field: 'agent', make: (a) => ({ method: 'GET', path: `/v1/agents/${a}/memory/never-connected` }) },
  {
    field: 'agent',
    make: (a) => ({ method: 'PUT', path: `/v1/agents/${a}/memory/never-connected`, body: '{"confirm":true,"snapshot":{"units":[]}}' }),
  },
  { field: 'session_id', make: (id) => ({ method: 'POST', path: `/v1/agents/coach/conversations/${id}/turns`, body: '{"line":"hi"}' }) },
  { field: 'session_id', make: (id) => ({ method: 'GET', path: `/v1/agents/coach/conversations/${id}` }) },
  { field: 'session_id', make: (id) => ({ method: 'DELETE', path: `/v1/agents/coach/conversations/${id}` }) },
  { field: 'device_ref', make: (d) => ({ method: 'GET', path: `/v1/agents/coach/memory/${d}` }) },
  {
    field: 'device_ref',
    make: (d) => ({ method: 'PUT', path: `/v1/agents/coach/memory/${d}`, body: '{"confirm":true,"snapshot":{"units":[]}}' }),
  },
];

// ------------------------------------------------------------------ tests

const target = (await s.open('coach', { device_ref: 'target' })).sessionId;
const targetTurns = turnPath(target);

/** An accepted start: check it, then close it so the caller's limit is never in the way. */
async function acceptedStart(body: Record<string, unknown>, answer: Answer): Promise<string[]> {
  const problems = exactlyAsValidated(body, answer);
  await send({ method: 'DELETE', path: conversationPath(answer.body.session_id) });
  return problems;
}

t.test('path fields: agent, session_id, device_ref on every route', async (t) => {
  let sent = 0;
  for (const route of PATH_ROUTES) {
    for (const [label, segment] of SEGMENTS) {
      const req = route.make(segment);
      const { answer, problems } = await hostile(req, route.field);
      sent += 1;
      if (answer.status === 201) problems.push(...(await acceptedStart({}, answer)));
      check(t, `${req.method} ${route.field} ${label}`, problems);
    }
  }
  t.ok(sent > 0, `${sent} hostile path values judged`);
});

t.test('a request line over the HTTP header limit is refused with JSON before any route', async (t) => {
  const answer = await send({ method: 'GET', path: `/v1/agents/coach/memory/${'c'.repeat(20_000)}` });
  figures.inputs += 1;
  t.equal(answer.status, 431, 'Node answers 431 (request header fields too large)');
  t.match(answer.body, { error: String, message: String }, 'as JSON {error, message}');
});

t.test('body fields of start and turn: every hostile value, every field', async (t) => {
  for (const field of ['line', ...CONNECT_FIELDS]) {
    for (const value of VALUES) {
      const body = { [field]: value };
      const start = await hostile({ method: 'POST', path: '/v1/agents/coach/conversations', body: JSON.stringify(body) }, field);
      const reason = mustRefuse(body);
      if (reason !== undefined && start.answer.status < 400) start.problems.push(`accepted ${reason}`);
      if (start.answer.status === 201) start.problems.push(...(await acceptedStart(body, start.answer)));
      check(t, `start ${field}=${JSON.stringify(value).slice(0, 40)}`, start.problems);

      const turnBody = field === 'line' ? body : { line: 'hi', ...body };
      const turn = await hostile({ method: 'POST', path: targetTurns, body: JSON.stringify(turnBody) }, field);
      if (reason !== undefined && turn.answer.status < 400) turn.problems.push(`accepted ${reason}`);
      if (turn.answer.status === 200) {
        const sent = s.engine.record.connections
          .filter((c) => c.sessionId === target)
          .at(-1)!
          .frames.at(-1);
        const line = turnBody.line as string;
        if (sent !== (line.trim() === '#intro' ? '#intro' : line))
          turn.problems.push(`frame ${JSON.stringify(sent)}, validated ${JSON.stringify(line)}`);
      }
      check(t, `turn ${field}=${JSON.stringify(value).slice(0, 40)}`, turn.problems);
    }
  }
  t.pass(`${checked} answers judged so far`);
});

t.test('the line rules, one by one, always 400 naming line', async (t) => {
  const lines = [
    ...EXIT_VARIANTS,
    ...LINE_BREAKS.map((b) => `a${b}b`),
    ...CONTROLS.map((c) => `a${c}b`),
    '',
    ' ',
    '\ud800',
    'x'.repeat(4001),
  ];
  let refused = 0;
  const rules = new Set<string>();
  for (const line of lines) {
    for (const path of ['/v1/agents/coach/conversations', targetTurns]) {
      const { answer, problems } = await hostile({ method: 'POST', path, body: JSON.stringify({ line }) }, 'line');
      const first = answer.body?.details?.problems?.[0];
      if (answer.status !== 400 || first?.field !== 'line') problems.push(`answered ${answer.status}: ${answer.text.slice(0, 120)}`);
      else {
        refused += 1;
        rules.add(first.rule);
      }
      check(t, `line ${JSON.stringify(line).slice(0, 40)} at ${path.includes('turns') ? 'turn' : 'start'}`, problems);
    }
  }
  t.equal(refused, lines.length * 2, 'every line, at a start and at a turn: 400 naming line');
  t.same(
    [...rules].map((rule) => rule.split(/[:;,]/)[0]).sort(),
    [
      'line may start with # only as exactly #intro',
      'line must be at most 4000 characters',
      'line must be one line',
      'line must be valid Unicode text',
      'line must not be empty',
    ],
    'each of the five line rules answered, and no other',
  );
});

t.test('bodies as a whole: not JSON, too large, arrays, nulls, scalars, extra fields, media types', async (t) => {
  const big = JSON.stringify({ line: 'x'.repeat(MAX_BODY_BYTES) });
  const bodies: Array<[string, string, string?, string?]> = [
    ['not JSON', '{"line": '],
    ['single quotes', "{'line':'hi'}"],
    ['trailing comma', '{"line":"hi",}'],
    ['comment', '{"line":"hi" /* x */}'],
    ['NaN', '{"line":NaN}'],
    ['undefined', 'undefined'],
    ['bare word', 'hello'],
    ['deep nesting', '['.repeat(20_000) + ']'.repeat(20_000)],
    ['deep objects', '{"a":'.repeat(3000) + '1' + '}'.repeat(3000)],
    ['too large', big],
    ['array', '[]'],
    ['array of a body', '[{"line":"hi"}]'],
    ['null', 'null'],
    ['number', '42'],
    ['string', '"#exit"'],
    ['true', 'true'],
    ['extra field', '{"line":"hi","testMode":false}'],
    ['extra parameter name', '{"line":"hi","inputFormat":"AUDIO"}'],
    ['session smuggled', `{"line":"hi","sessionId":"${UUID_OK}"}`],
    ['__proto__', '{"line":"hi","__proto__":{"testMode":false}}'],
    ['constructor', '{"line":"hi","constructor":{"prototype":{"x":1}}}'],
    ['duplicate keys', '{"line":"hi","line":"#exit"}', undefined, 'line'],
    ['form encoded', 'line=%23exit', 'application/x-www-form-urlencoded'],
    ['text', '#exit', 'text/plain'],
    ['multipart', '--x\r\nContent-Disposition: form-data; name="line"\r\n\r\n#exit\r\n--x--', 'multipart/form-data; boundary=x'],
    ['xml', '<line>#exit</line>', 'application/xml'],
    ['json-ish type', '{"line":"hi"}', 'application/jsonx'],
  ];
  const routes: Array<[string, (body: string, type?: string) => Sent, boolean]> = [
    [
      'start',
      (body, type) => ({ method: 'POST', path: '/v1/agents/coach/conversations', body, ...(type ? { contentType: type } : {}) }),
      true,
    ],
    ['turn', (body, type) => ({ method: 'POST', path: targetTurns, body, ...(type ? { contentType: type } : {}) }), true],
    [
      'restore',
      (body, type) => ({ method: 'PUT', path: '/v1/agents/coach/memory/never-connected', body, ...(type ? { contentType: type } : {}) }),
      false,
    ],
  ];
  const statuses = new Map<string, number[]>();
  for (const [route, make, strict] of routes) {
    for (const [label, body, type, named] of bodies) {
      const { answer, problems } = await hostile(make(body, type), route === 'restore' ? '' : (named ?? 'body'));
      statuses.set(label, [...(statuses.get(label) ?? []), answer.status]);
      const isField = /^(extra|session smuggled|__proto__|constructor|duplicate)/.test(label);
      if (answer.status < 400 && (strict || !isField)) problems.push(`accepted (${answer.status})`);
      if (
        answer.status === 400 &&
        answer.body?.error === 'invalid_request' &&
        isField &&
        strict &&
        !/is not a known field|valid JSON|line may start/.test(answer.body.message)
      ) {
        problems.push(`refused for another reason: ${answer.body.message}`);
      }
      if (label === 'too large' && answer.status !== 413) problems.push(`too large answered ${answer.status}`);
      check(t, `${route}: ${label}`, problems);
    }
  }
  const TYPES = ['form encoded', 'text', 'multipart', 'xml', 'json-ish type'];
  for (const label of TYPES) t.same(statuses.get(label), [415, 415, 415], `${label}: 415 at a start, a turn and a restore`);
  t.same(statuses.get('too large'), [413, 413, 413], 'too large: 413 everywhere');
  for (const [label, answered] of statuses) {
    if (TYPES.includes(label) || label === 'too large') continue;
    t.ok(answered[0]! >= 400 && answered[1]! >= 400, `${label}: refused at a start and at a turn (${answered.join(', ')})`);
  }
});

t.test('restore: confirm and snapshot, every hostile value', async (t) => {
  for (const value of [...VALUES.filter((v) => v !== true), undefined]) {
    const body = JSON.stringify({ confirm: value, snapshot: { units: [] } });
    const { answer, problems } = await hostile({ method: 'PUT', path: '/v1/agents/coach/memory/never-connected', body }, 'confirm');
    if (answer.body?.error !== 'confirmation_required') problems.push(`answered ${answer.status} ${answer.body?.error}`);
    check(t, `confirm=${JSON.stringify(value)?.slice(0, 40)}`, problems);
  }
  const snapshots: unknown[] = [
    ...NOT_STRINGS,
    ...STRINGS.slice(0, 20),
    undefined,
    { units: null },
    { units: {} },
    { units: 'x' },
    { units: [1] },
    { units: [null] },
    { units: [[]] },
    { units: ['x'] },
    { units: [{}, 2] },
  ];
  for (const value of snapshots) {
    const body = JSON.stringify({ confirm: true, snapshot: value });
    const { answer, problems } = await hostile({ method: 'PUT', path: '/v1/agents/coach/memory/never-connected', body }, 'snapshot');
    if (answer.status !== 400) problems.push(`answered ${answer.status}`);
    check(t, `snapshot=${JSON.stringify(value)?.slice(0, 40)}`, problems);
  }
  t.ok(
    s.engine.record.memoryRequests.every((r) => r.method !== 'POST'),
    'no restore reached the engine',
  );
});

// ------------------------------------------------------------------ property-based

const nastyChar = fc.oneof(
  fc.constantFrom(
    ...LINE_BREAKS,
    ...CONTROLS,
    ...HIDDEN_PREFIXES.filter((p) => p !== ''),
    '#',
    '&',
    '=',
    '+',
    '%',
    '`',
    '?',
    '/',
    ':',
    '@',
    '.',
    '_',
    '-',
    ' ',
    'é',
    '😀',
    '\ufffd',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  fc.constantFrom('a', 'b', 'z', '0', '7', 'intro', 'exit', 'ready:key=', 'testMode=false', '%26', '%3D', 'mcp:'),
);
const nastyString = fc.oneof(
  fc.array(nastyChar, { maxLength: 12 }).map((a) => a.join('')),
  fc.constantFrom(...STRINGS),
);
const valid = {
  line: fc.oneof(
    fc.string({ minLength: 1, maxLength: 30 }).filter((l) => l.trim() !== '' && !l.trim().startsWith('#')),
    fc.constant('#intro'),
  ),
  locale: fc.constantFrom('en-US', 'de_DE', 'cs-CZ', 'zh-Hant-TW', 'fr'),
  device_ref: fc.stringMatching(/^[a-z0-9._:@-]{1,16}$/).filter((d) => d !== 'mcp:'),
  time_zone: fc.constantFrom(null, 'UTC', 'Europe/Prague', 'US/Eastern', 'Etc/GMT+1', 'America/Argentina/Buenos_Aires'),
  run_label: fc.oneof(fc.constant(null), fc.stringMatching(/^[A-Za-z0-9._:@-]{1,16}$/)),
  time_offset: fc.oneof(
    fc.constant(null),
    fc.integer({ min: 1, max: 999 }).map((d) => `-P${d}D`),
    fc.integer({ min: 1, max: 99 }).map((h) => `-PT${h}H`),
  ),
};
/** Mostly valid values, so that many bodies pass and are checked at the engine; the rest hostile. */
const anyOf = (good: fc.Arbitrary<unknown>) =>
  fc.oneof({ arbitrary: good, weight: 8 }, { arbitrary: nastyString, weight: 1 }, { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 1 });
const fields = {
  line: anyOf(valid.line),
  locale: anyOf(valid.locale),
  device_ref: anyOf(valid.device_ref),
  time_zone: anyOf(valid.time_zone),
  run_label: anyOf(valid.run_label),
  time_offset: anyOf(valid.time_offset),
};
const bodyArb = fc.oneof(
  { arbitrary: fc.record(fields, { requiredKeys: [] }), weight: 4 },
  {
    arbitrary: fc.record(
      { ...fields, testMode: fc.jsonValue({ maxDepth: 1 }), extra: fc.jsonValue({ maxDepth: 1 }) },
      { requiredKeys: [] },
    ),
    weight: 1,
  },
);

const parseOr = (raw: string): unknown => {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
};

/** The field a refusal names: the first invalid field of the body, or any of them. */
const namedIn = (body: Record<string, unknown>, message: string): boolean =>
  Object.keys(body).some((k) => message.includes(k)) || namesField(message, 'body');

t.test('property: random start bodies keep every rule', async (t) => {
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(bodyArb, async (body) => {
      const { answer, problems } = await hostile(
        { method: 'POST', path: '/v1/agents/coach/conversations', body: JSON.stringify(body) },
        '',
      );
      if (answer.status === 400 && !namedIn(body, answer.body.message)) problems.push(`no field named: ${answer.body.message}`);
      const reason = mustRefuse(body);
      if (reason !== undefined && answer.status < 400) problems.push(`accepted ${reason}`);
      if (answer.status === 201) {
        accepted += 1;
        problems.push(...(await acceptedStart(body, answer)));
      }
      if (problems.length > 0) throw new Error(problems.join('; '));
    }),
    { numRuns: 300 },
  );
  t.ok(accepted > 0, `300 random bodies judged, ${accepted} of them valid and checked at the engine`);
});

t.test('property: random lines on a live conversation keep every rule', async (t) => {
  const lineArb = fc.oneof(
    nastyString,
    fc
      .tuple(fc.constantFrom(...HIDDEN_PREFIXES), fc.constantFrom('#', '＃', '#intro', '#exit', '#ready:key='), nastyString)
      .map((p) => p.join('')),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );
  let sentLines = 0;
  await fc.assert(
    fc.asyncProperty(lineArb, async (line) => {
      const { answer, problems } = await hostile({ method: 'POST', path: targetTurns, body: JSON.stringify({ line }) }, 'line');
      const reason = mustRefuse({ line });
      if (reason !== undefined && answer.status < 400) problems.push(`accepted ${reason}`);
      if (answer.status === 200) {
        sentLines += 1;
        const sent = s.engine.record.connections
          .filter((c) => c.sessionId === target)
          .at(-1)!
          .frames.at(-1);
        if (sent !== (line.trim() === '#intro' ? '#intro' : line))
          problems.push(`frame ${JSON.stringify(sent)}, validated ${JSON.stringify(line)}`);
      }
      if (problems.length > 0) throw new Error(problems.join('; '));
    }),
    { numRuns: 400 },
  );
  t.ok(sentLines > 0, `400 random lines judged, ${sentLines} sent exactly as given`);
});

t.test('property: random path segments for agent, session_id and device_ref', async (t) => {
  const segmentArb = fc.oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }).map(encodeSegment),
    fc.array(nastyChar, { minLength: 1, maxLength: 12 }).map((a) => encodeSegment(a.join(''))),
    fc
      .array(
        fc.constantFrom('%', '%2', '%zz', '%E0', '%A4', '%26', '%23', 'a', '.', '+', '=', '&', ';', ',', '~', '!', '$', "'", '(', '*'),
        { minLength: 1, maxLength: 8 },
      )
      .map((a) => a.join('')),
  );
  const routes = PATH_ROUTES.filter((_, i) => [0, 4, 7, 9].includes(i));
  for (const route of routes) {
    await fc.assert(
      fc.asyncProperty(segmentArb, async (segment) => {
        const { answer, problems } = await hostile(route.make(segment), route.field);
        if (answer.status === 201) problems.push(...(await acceptedStart({}, answer)));
        if (problems.length > 0) throw new Error(problems.join('; '));
      }),
      { numRuns: 150 },
    );
  }
  t.pass(`${routes.length} × 150 random segments judged`);
});

t.test('property: random raw bodies never get a 5xx', async (t) => {
  const rawArb = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.json({ maxDepth: 3 }),
    fc
      .tuple(fc.json({ maxDepth: 2 }), fc.nat(), fc.string({ unit: 'binary', maxLength: 3 }))
      .map(([json, at, junk]) => json.slice(0, at % (json.length + 1)) + junk + json.slice(at % (json.length + 1))),
  );
  for (const path of ['/v1/agents/coach/conversations', targetTurns, '/v1/agents/coach/memory/never-connected']) {
    await fc.assert(
      fc.asyncProperty(rawArb, async (raw) => {
        const { answer, problems } = await hostile({ method: path.includes('memory') ? 'PUT' : 'POST', path, body: raw }, '');
        const parsed = parseOr(raw);
        const keys = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
        if (answer.status === 400 && answer.body?.error === 'invalid_request' && !namedIn(keys, answer.body.message)) {
          problems.push(`no field named: ${answer.body.message}`);
        }
        if (answer.status === 201) problems.push(...(await acceptedStart(keys, answer)));
        if (problems.length > 0) throw new Error(problems.join('; '));
      }),
      { numRuns: 150 },
    );
  }
  t.pass('3 × 150 random raw bodies judged');
});

t.test('over everything that reached the engine: the rules held', async (t) => {
  const connections = s.engine.record.connections;
  const problems = connections.flatMap((c) => connectionProblems(c).map((p) => `connection ${c.id}: ${p}`));
  t.same(
    problems,
    [],
    `${connections.length} engine connections, ${connections.reduce((n, c) => n + c.frames.length, 0)} frames: no rule broken`,
  );
  t.equal(s.app.conversationRegistry.stats.busy, 0);
  t.comment(`${figures.inputs} hostile inputs, ${checked} judged clean, ${figures.badInput5xx} answered 5xx`);
  t.equal(figures.badInput5xx, 0, 'no hostile input got a 5xx');
});

t.test('figures', async (t) => {
  const { leaked } = await settleStack(s, figures);
  t.equal(leaked, 0, 'no socket leaked');
  reportFigures(t, import.meta.url, figures);
});
