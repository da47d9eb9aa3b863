import fc from 'fast-check';
import t from 'tap';
import { socketUrl } from '../src/engine/socket-url.js';
import { decodeEngineQuery } from '../src/simulators/engine-record.js';
import { startStack } from './support/stack.js';
import { turnPath } from './support/http.js';

const badLines: Array<[string, unknown, RegExp]> = [
  ['empty', '', /must not be empty/],
  ['blank', '   ', /must not be empty/],
  ['LF', 'hello\nworld', /one line/],
  ['CR', 'hello\rworld', /one line/],
  ['U+2028', 'a\u2028b', /one line/],
  ['U+2029', 'a\u2029b', /one line/],
  ['U+0085', 'a\u0085b', /one line/],
  ['tab', 'a\tb', /control characters/],
  ['NUL', 'a\u0000b', /control characters/],
  ['too long', 'x'.repeat(4001), /at most 4000 characters/],
  ['#exit', '#exit', /only as exactly #intro/],
  ['#ready', '#ready:key=abc', /only as exactly #intro/],
  ['spaced #exit', '  #exit', /only as exactly #intro/],
  ['hidden #exit', '\u200b#exit', /only as exactly #intro/],
  ['#Intro', '#Intro', /only as exactly #intro/],
  ['#intro and more', '#intro please', /only as exactly #intro/],
  ['not a string', 42, /line must be a string/],
];

const badFields: Array<[string, Record<string, unknown>, RegExp]> = [
  ['two locales', { locale: 'en-US,de-DE' }, /locale must be one language tag/],
  ['locale with space', { locale: 'en US' }, /locale must be one language tag/],
  ['locale &', { locale: 'en&testMode=false' }, /locale must be one language tag/],
  ['device space', { device_ref: 'a b' }, /device_ref may use only letters, digits and \. _ : @ -/],
  ['device &', { device_ref: 'a&testMode=false' }, /device_ref may use only/],
  ['device %26', { device_ref: 'a%26testMode%3Dfalse' }, /device_ref may use only/],
  ['device +', { device_ref: 'a+b' }, /device_ref may use only/],
  ['device =', { device_ref: 'a=b' }, /device_ref may use only/],
  ['device empty', { device_ref: '' }, /device_ref must not be empty/],
  ['device only the namespace', { device_ref: 'mcp:' }, /device_ref must name a device/],
  ['device too long', { device_ref: 'a'.repeat(300) }, /at most 256/],
  ['run label &', { run_label: 'x&testMode=false' }, /run_label may use only/],
  ['run label backtick', { run_label: 'x`y' }, /run_label may use only/],
  ['zone backtick', { time_zone: 'Europe/Prague`' }, /must not contain ` : the engine receives it as a space/],
  ['zone unknown', { time_zone: 'Mars/Olympus_Mons' }, /IANA time zone the runtime knows/],
  ['zone case', { time_zone: 'europe/prague' }, /must be written as Europe\/Prague/],
  ['zone offset', { time_zone: '+01:00' }, /IANA time zone/],
  ['zone &', { time_zone: 'UTC&testMode=false' }, /IANA time zone/],
  ['positive offset', { time_offset: 'P10D' }, /must be negative.*adds the offset to its own clock.*future/],
  ['explicit positive offset', { time_offset: '+P10D' }, /must be negative/],
  ['zero offset', { time_offset: '-P0D' }, /must be negative/],
  ['offset words', { time_offset: 'ten days ago' }, /negative ISO-8601 duration/],
  ['offset empty', { time_offset: '-P' }, /negative ISO-8601 duration/],
  ['offset inner sign', { time_offset: 'P-10D' }, /negative ISO-8601 duration/],
  [
    'unknown field',
    { device: 'alice' },
    /^device is not a known field; the fields here are line, locale, device_ref, time_zone, run_label, time_offset/,
  ],
  ['wrong type', { locale: 7 }, /locale must be a string/],
];

t.test('bad lines and connect fields: 400 naming the field and the rule, nothing sent', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  for (const [name, line, rule] of badLines) {
    const start = await s.call('POST', '/v1/agents/coach/conversations', { body: { line } });
    t.equal(start.status, 400, `start: ${name}`);
    t.equal(start.body.error, 'invalid_request');
    t.match(start.body.message, rule, `start: ${name}`);
    t.equal(start.body.details.problems[0].field, 'line');
    const turn = await s.call('POST', turnPath(sessionId), { body: { line } });
    t.equal(turn.status, 400, `turn: ${name}`);
    t.match(turn.body.message, rule);
  }
  const missing = await s.call('POST', turnPath(sessionId), { body: {} });
  t.match(missing.body.message, /line is required/);
  for (const [name, body, rule] of badFields) {
    const answer = await s.call('POST', '/v1/agents/coach/conversations', { body });
    t.equal(answer.status, 400, name);
    t.match(answer.body.message, rule, name);
    t.match(answer.body.message, /nothing was sent to the engine/);
  }
  t.equal(s.engine.record.connections.length, 1, 'no refused call opened a socket');
  t.same(s.engine.record.connections[0]!.frames, ['#intro'], 'and none sent a line');
});

t.test('bodies, media types and paths', async (t) => {
  const s = await startStack(t);
  const notJson = await s.call('POST', '/v1/agents/coach/conversations', {
    body: '{"line": ',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(notJson.status, 400);
  t.match(notJson.body.message, /valid JSON/);
  const array = await s.call('POST', '/v1/agents/coach/conversations', { body: [] });
  t.equal(array.status, 400);
  t.match(array.body.message, /must be a JSON object/);
  const text = await s.call('POST', '/v1/agents/coach/conversations', { body: 'hello', headers: { 'content-type': 'text/plain' } });
  t.equal(text.status, 415);
  t.equal(text.body.error, 'unsupported_media_type');
  const empty = await s.call('POST', '/v1/agents/coach/conversations', { body: '', headers: { 'content-type': 'application/json' } });
  t.equal(empty.status, 201, 'an empty body is no fields: the intro');
  for (const agent of ['co%20ach', 'coach.0', 'coach.07', '-', 'a'.repeat(129)]) {
    const answer = await s.call('POST', `/v1/agents/${agent}/conversations`);
    t.equal(answer.status, 400, `agent ${agent.slice(0, 12)}`);
    t.match(answer.body.message, /agent must be/);
  }
  const badSession = await s.call('POST', '/v1/agents/coach/conversations/not-a-uuid/turns', { body: { line: 'x' } });
  t.equal(badSession.status, 400);
  t.match(badSession.body.message, /session_id must be the engine session id, a UUID/);
  const unknownRoute = await s.call('GET', '/v2/whatever');
  t.equal(unknownRoute.status, 404);
  t.equal(unknownRoute.body.error, 'not_found');
  t.equal(s.engine.record.connections.length, 1);
});

t.test('valid values are sent exactly as given', async (t) => {
  const s = await startStack(t);
  const good: Array<Record<string, string>> = [
    { time_offset: '-PT5H' },
    { time_offset: '-P1Y2M3DT4H5M6.5S' },
    { time_offset: '-P2W' },
    { time_zone: 'UTC' },
    { time_zone: 'America/Argentina/Buenos_Aires' },
    { time_zone: 'US/Eastern' },
    { locale: 'zh-Hant-TW' },
    { device_ref: 'Zoë_ü.1@x-y:z' },
    { line: ' spaced line with # inside ' },
    { line: '  #intro  ' },
  ];
  for (const body of good) {
    const answer = await s.call('POST', '/v1/agents/coach/conversations', { body });
    t.equal(answer.status, 201, JSON.stringify(body));
  }
  const sent = s.engine.record.connections;
  t.equal(sent[1]!.query.timeOffset, '-P1Y2M3DT4H5M6.5S');
  t.equal(sent[5]!.query.timeZone, 'US/Eastern', 'a zone is not renamed to its canonical alias');
  t.equal(sent[7]!.query.deviceId, 'mcp:Zoë_ü.1@x-y:z');
  t.same(sent[8]!.frames, [' spaced line with # inside ']);
  t.same(sent[9]!.frames, ['#intro'], '#intro is sent trimmed');
  t.ok(sent.every((c) => c.query.testMode === 'true'));
});

t.test("the query survives the engine's double decoding for any value", async (t) => {
  const value = fc.string({ unit: 'binary', maxLength: 40 }).filter((v) => !v.includes('`'));
  fc.assert(
    fc.property(value, value, value, value, value, fc.option(fc.uuid()), (locale, device, zone, label, offset, session) => {
      const settings = { locale, deviceRef: device, timeZone: zone, runLabel: label, timeOffset: offset };
      const url = new URL(socketUrl('http://engine.test', 'coach.7', settings, session ?? undefined));
      const raw = url.href.slice(url.href.indexOf('?') + 1);
      const { params, query } = decodeEngineQuery(raw);
      const expected: Record<string, string> = {
        inputFormat: 'TEXT',
        outputFormat: 'JSON',
        locale,
        deviceId: device,
        timeZone: zone,
        runLabel: label,
        timeOffset: offset,
        ...(session ? { sessionId: session } : {}),
        testMode: 'true',
      };
      return JSON.stringify(query) === JSON.stringify(expected) && params.length === Object.keys(expected).length;
    }),
    { numRuns: 2000 },
  );
  const url = socketUrl('https://engine.test/base', 'coach', {
    locale: 'en-US',
    deviceRef: 'mcp:x',
    timeZone: null,
    runLabel: null,
    timeOffset: null,
  });
  t.match(url, /^wss:\/\/engine\.test\/base\/socket\/pipeline\/agent:coach\?/, 'https means wss');
  t.pass('2000 random values arrived exactly, with testMode=true and no extra parameter');
});
