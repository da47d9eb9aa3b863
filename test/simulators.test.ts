// The simulators on their own, spoken to with raw ws and undici: the gateway's tests and the demo
// trust them, so their hostile behaviour (docs/engine-contract.md) is proven here first.
import t from 'tap';
import { request } from 'undici';
import WebSocket from 'ws';
import { frameText } from '../src/http/ws-frames.js';
import { startEngineSimulator, type EngineSimulator } from '../src/simulators/engine.js';
import { startPlatformSimulator, type PlatformSimulator } from '../src/simulators/platform.js';
import { demoWorld } from '../src/simulators/world.js';
import { callAt } from './support/http.js';
import { eventually, scaled, sleep } from './support/time.js';

type Element = Record<string, unknown> & { type?: string };

/** How long a client waits for a frame that should come (scaled by TEST_TIME_SCALE: a busy machine is late). */
const FRAME_WAIT_MS = scaled(1000);
const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;

/** A raw engine client: frames are queued as they arrive, so a test reads them in order. */
class Client {
  readonly frames: string[] = [];
  readonly closed: Promise<number>;
  private wake: (() => void) | undefined;
  private read = 0;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(frameText(data));
      this.wake?.();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code) => (resolve(code), this.wake?.())));
  }

  /** The next frame, or undefined when none comes within `ms` or the socket has closed. */
  async next(ms = FRAME_WAIT_MS): Promise<string | undefined> {
    const deadline = Date.now() + ms;
    while (this.read >= this.frames.length) {
      if (this.ws.readyState === WebSocket.CLOSED || Date.now() >= deadline) return undefined;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, deadline - Date.now());
        this.wake = () => (clearTimeout(timer), r());
      });
    }
    return this.frames[this.read++];
  }

  async element(ms?: number): Promise<Element | undefined> {
    const f = await this.next(ms);
    return f === undefined ? undefined : (JSON.parse(f) as Element);
  }

  /**
   * Sends a line and reads elements up to the turn's exit (or until the socket closes, or falls
   * silent for `ms` after an element: the first one is waited for at least FRAME_WAIT_MS).
   */
  async turn(line: string, ms?: number): Promise<Element[]> {
    this.ws.send(line);
    const elements: Element[] = [];
    for (let e = await this.element(Math.max(ms ?? 0, FRAME_WAIT_MS)); e; e = await this.element(ms)) {
      elements.push(e);
      if (e.type === 'exit') break;
    }
    return elements;
  }
}

function socketUrl(engine: EngineSimulator, keyAndQuery: string) {
  return `${engine.url.replace(/^http/, 'ws')}/socket/pipeline/agent:${keyAndQuery}`;
}

/** Opens a socket; resolves the client once upgraded, or the HTTP status of a refused handshake. */
function connect(url: string, headers: Record<string, string> = {}): Promise<Client | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, handshakeTimeout: FRAME_WAIT_MS });
    const client = new Client(ws); // listening from the start: the session element follows the upgrade at once
    ws.on('open', () => resolve(client));
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.on('error', reject);
  });
}

async function open(url: string, headers?: Record<string, string>): Promise<Client> {
  const c = await connect(url, headers);
  if (typeof c === 'number') throw new Error(`handshake refused with ${c}`);
  return c;
}

/** Opens a session on `coach` with the given raw query and returns what the engine recorded of it. */
async function handshakeRecord(engine: EngineSimulator, rawQuery: string) {
  const c = await open(socketUrl(engine, `coach?${rawQuery}`));
  c.ws.close();
  await c.closed;
  return engine.record.connections.at(-1)!;
}

t.test('engine simulator', async (t) => {
  const engine = await startEngineSimulator({ sessionEndDelayMs: 50 });
  t.teardown(() => engine.close());
  t.afterEach(() => {
    engine.faults = {};
    engine.reset();
  });
  // Sessions of earlier tests end 50 ms after their sockets close, possibly during a later test.
  const endsOf = (sessionId: unknown) => engine.record.endOfConversation.filter((e) => e.sessionId === sessionId).length;

  t.test('the query is decoded twice, as docs/engine-contract.md says', async (t) => {
    const single = await handshakeRecord(engine, 'testMode=true&timeOffset=-P1D&runLabel=x%26testMode%3Dfalse');
    t.same(
      single.params,
      [
        ['testMode', 'true'],
        ['timeOffset', '-P1D'],
        ['runLabel', 'x'],
        ['testMode', 'false'],
      ],
      'a single-encoded & splits the value',
    );
    t.equal(single.query.testMode, 'false', 'the smuggled parameter wins');
    t.equal(single.settings.timeOffset, undefined, 'and timeOffset is no longer honoured');

    const double = await handshakeRecord(engine, 'testMode=true&timeOffset=-P1D&runLabel=x%2526testMode%253Dfalse');
    t.equal(double.query.runLabel, 'x&testMode=false', 'a double-encoded value arrives intact');
    t.equal(double.settings.testMode, true);
    t.equal(double.settings.timeOffset, '-P1D', 'timeOffset is honoured in test mode');

    const plus = await handshakeRecord(engine, 'a=1+2&b=1%2B2&c=1%252B2');
    t.same([plus.query.a, plus.query.b, plus.query.c], ['1 2', '1 2', '1+2'], '+ and %2B are spaces; only %252B is a plus');

    const tick = await handshakeRecord(engine, 'timeZone=Europe/Prague`&b=%60x&c=%2560');
    t.same(
      [tick.query.timeZone, tick.query.b, tick.query.c],
      ['Europe/Prague ', ' x', ' '],
      'a backtick arrives as a space however it is encoded',
    );

    const late = await handshakeRecord(engine, 'locale=en-US&locale=de-DE');
    t.equal(late.query.locale, 'de-DE', 'a later parameter wins');
    t.equal(late.rawQuery, 'locale=en-US&locale=de-DE', 'the raw query is recorded');

    const bad = await handshakeRecord(engine, 'a=100%25&b=%zz&c=%E2%82');
    t.equal(bad.status, 101, 'malformed percent sequences do not break the handshake');
    t.same([bad.query.a, bad.query.b], ['100%', '%zz'], 'and are kept as they are');
  });

  t.test('handshake answers', async (t) => {
    const url = (key: string) => socketUrl(engine, `${key}?deviceId=mcp:hs&testMode=true`);
    t.equal(await connect(url('nope')), 404, 'unknown agent');
    t.equal(await connect(url('preview-only')), 404, 'a plain ref without a Published revision');
    t.equal(await connect(url('coach.1')), 404, 'an Archived revision');
    t.equal(await connect(url('coach.9')), 404, 'an unknown revision');
    t.equal(await connect(url('coach.4')), 404, 'a Draft for an anonymous session');
    t.equal(await connect(url('coach.4'), { authorization: basic('tester:wrong') }), 401, 'unknown Basic credentials');

    const opened: Array<[string, Record<string, string>?]> = [
      ['coach'],
      ['coach.2'],
      ['coach.3'],
      ['preview-only.1'],
      ['coach.4', { authorization: basic('tester:s3cret') }],
    ];
    for (const [key, headers] of opened) {
      const c = await open(url(key), headers);
      t.match(await c.element(), { type: 'session', resumed: false }, `${key} connects`);
      c.ws.close();
    }
    t.same(
      engine.record.connections.map((c) => c.status),
      [404, 404, 404, 404, 404, 401, 101, 101, 101, 101, 101],
      'every attempt is recorded with its answer',
    );
    t.same(
      engine.record.connections.slice(6).map((c) => c.revision),
      [2, 2, 3, 1, 4],
      'and the revision that runs',
    );

    engine.faults.handshake = 503;
    t.equal(await connect(url('coach')), 503, 'the handshake fault answers its status');
  });

  t.test('a hanging handshake never answers, and close() still returns', async (t) => {
    const hanging = await startEngineSimulator();
    hanging.faults.handshake = 'hang';
    const ws = new WebSocket(socketUrl(hanging, 'coach'), { handshakeTimeout: 100 });
    const err = await new Promise<Error>((r) => ws.on('error', r));
    t.match(err.message, /timed out/);
    t.equal(hanging.record.connections[0]?.status, undefined, 'no answer recorded');
    const again = new WebSocket(socketUrl(hanging, 'coach'));
    again.on('error', () => {});
    await eventually(() => hanging.record.connections.length === 2);
    await hanging.close(); // with a handshake still held
    t.pass('closed');
  });

  t.test('older engines treat unknown credentials as anonymous', async (t) => {
    const old = await startEngineSimulator({ rejectUnknownIdentityWith401: false });
    t.teardown(() => old.close());
    const c = await open(socketUrl(old, 'secure'), { authorization: basic('tester:wrong') });
    t.match(await c.element(), { type: 'session' });
    t.match(await c.turn('#intro'), [{ type: 'error', code: 'FORBIDDEN' }]);
  });

  t.test('closed projects refuse anonymous and not-enabled identities with FORBIDDEN', async (t) => {
    for (const [key, headers] of [
      ['secure', {}],
      ['idp', {}],
      ['idp', { authorization: basic('tester:s3cret') }],
    ] as const) {
      const c = await open(socketUrl(engine, `${key}?deviceId=mcp:closed`), headers);
      t.match(await c.element(), { type: 'session', resumed: false }, 'the session element comes first');
      t.match(await c.turn('#intro'), [{ type: 'error', code: 'FORBIDDEN' }], `${key} refuses on the first line`);
      t.equal(await c.closed, 1008);
    }
    for (const [key, headers] of [
      ['secure', { authorization: basic('tester:s3cret') }],
      ['extnoidp', {}],
    ] as const) {
      const c = await open(socketUrl(engine, key), headers);
      await c.element();
      t.match(await c.turn('#intro'), [{ type: 'text', text: `Hi, I'm ${key}. How can I help?` }, {}, { type: 'exit' }], `${key} runs`);
      c.ws.close();
    }
    t.equal(engine.record.connections[3]?.authorization, basic('tester:s3cret'), 'the Authorization header is recorded');
  });

  t.test('an unknown sessionId gets NOT_FOUND and close 1008', async (t) => {
    const ws = new WebSocket(socketUrl(engine, 'coach?sessionId=00000000-0000-4000-8000-000000000000'));
    ws.on('open', () => ws.send('hello')); // a client that does not wait for the first element
    const c = new Client(ws);
    t.match(await c.element(), { type: 'error', code: 'NOT_FOUND' });
    t.equal(await c.next(), undefined, 'nothing else');
    t.equal(await c.closed, 1008);
    t.match(engine.record.connections[0], { closedBy: 'engine', frames: ['hello'], sessionId: undefined });
  });

  t.test('a reconnect resumes the session: its lines are kept, its planning is not', async (t) => {
    const first = await open(socketUrl(engine, 'coach?deviceId=mcp:re'));
    const session = await first.element();
    t.match(session, { type: 'session', resumed: false });
    const sessionId = session!.sessionId as string;
    t.match(sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a uuid v4');
    await first.turn('#intro');
    await first.turn('hello');
    t.match(await first.turn('planning?'), [
      { type: 'text', text: 'This socket has carried 2 of my turns; the session has 2 lines, so I still have my planning.' },
      {},
      { type: 'exit' },
    ]);
    first.ws.close();
    await first.closed;

    const second = await open(socketUrl(engine, `coach?deviceId=mcp:re&sessionId=${sessionId}`));
    t.same(await second.element(), { type: 'session', sessionId, resumed: true });
    t.match(await second.turn('planning?'), [
      { text: 'This socket is new (0 turns); the session has 3 lines: my earlier planning is gone.' },
    ]);
    t.match(await second.turn('planning?'), [
      { text: 'This socket has carried 1 of my turns; the session has 4 lines: my planning of the 3 lines before it is gone.' },
    ]);
    t.equal(engine.openSockets(), 1);
    second.ws.close(1000, 'bye');
    await second.closed;
    await eventually(() => engine.openSockets() === 0);
    t.equal(engine.openSockets(), 0);
    t.match(engine.record.connections[1], { sessionId, resumed: true, closeCode: 1000, closeReason: 'bye', closedBy: 'client' });

    const fresh = await open(socketUrl(engine, 'coach?deviceId=mcp:fresh'));
    await fresh.element();
    t.match(await fresh.turn('planning?'), [{ text: 'This socket is new (0 turns); the session has 0 lines: nothing planned yet.' }]);
    fresh.ws.close();
    await fresh.closed;
  });

  t.test('a turn goes on after response-end; tools and interactive elements', async (t) => {
    const c = await open(socketUrl(engine, 'coach'));
    await c.element();
    t.same(await c.turn('#intro'), [
      { type: 'text', text: "Hi, I'm coach. How can I help?" },
      { type: 'command', name: 'response-end' },
      { type: 'exit', sessionEnded: false },
    ]);
    const turn = await c.turn('where is my order? which size?');
    t.same(
      turn.map((e) => (e.type === 'command' ? e.name : e.type)),
      ['tool-call', 'tool-call', 'multimodal-interaction', 'text', 'response-end', 'realtime-planning', 'text', 'exit'],
    );
    t.match(turn, [
      { params: { name: 'lookup_order', result: 'started' } },
      { params: { name: 'lookup_order', result: 'completed' } },
      { params: { ref: 'size_chart' } },
      { text: 'You said: where is my order? which size?' },
      {},
      { params: { text: String } },
      { text: 'Anything else?' },
    ]);
    c.ws.close();
  });

  t.test('the agent ends the conversation: sessionEnded, then close 1000', async (t) => {
    const c = await open(socketUrl(engine, 'coach'));
    await c.element();
    t.same(await c.turn('ok, goodbye'), [
      { type: 'text', text: 'Goodbye!' },
      { type: 'command', name: 'response-end' },
      { type: 'exit', sessionEnded: true },
    ]);
    t.equal(await c.closed, 1000);
    t.equal(engine.record.connections[0]?.closedBy, 'engine');
  });

  t.test('fault directives', async (t) => {
    // `quietMs`: how long a silence after an element ends the reading; short where the engine goes silent on
    // purpose (hang), long (scaled) where it answers late (delay) or big (huge), so that a busy machine does
    // not cut the answer off. The first element is always waited for long enough (Client.turn).
    const turnOf = async (line: string, quietMs = 150) => {
      const c = await open(socketUrl(engine, 'coach'));
      await c.element();
      return { c, elements: await c.turn(line, quietMs) };
    };

    let r = await turnOf('sim:hang');
    t.same(r.elements, [{ type: 'text', text: 'Let me think about that…' }], 'hang: one element, no exit');
    t.equal(r.c.ws.readyState, WebSocket.OPEN);
    r.c.ws.close();

    r = await turnOf('sim:drop');
    t.equal(r.elements.length, 1);
    t.equal(await r.c.closed, 1006, 'drop: no close frame');

    r = await turnOf('sim:close-1011');
    t.match(r.elements, [{ type: 'text' }]);
    t.equal(await r.c.closed, 1011);

    r = await turnOf('sim:error');
    t.match(r.elements, [{ type: 'error', code: 'INTERNAL' }]);
    t.equal(await r.c.closed, 1011);

    const m = await open(socketUrl(engine, 'coach'));
    await m.element();
    m.ws.send('sim:malformed');
    const notJson = (await m.next())!;
    t.throws(() => JSON.parse(notJson), 'malformed: a frame that is not JSON');
    t.match(await m.element(), { text: 'You said: sim:malformed' }, 'then the normal reply');
    m.ws.close();

    r = await turnOf('sim:huge:200000', scaled(2000));
    t.equal((r.elements[0]?.text as string).length, 200000, 'huge');
    t.match(r.elements[1], { type: 'exit' });
    r.c.ws.close();

    r = await turnOf('sim:unknown', scaled(2000));
    t.same(r.elements, [
      { type: 'mystery', weird: true },
      { type: 'text', text: 'Something unusual.', mood: 'curious' },
      { type: 'exit', sessionEnded: false },
    ]);
    r.c.ws.close();

    const started = Date.now();
    r = await turnOf('sim:delay:80', scaled(2000));
    t.ok(Date.now() - started >= 80, 'delay');
    t.match(r.elements.at(-1), { type: 'exit' });
    r.c.ws.close();
  });

  t.test('engine actions are recorded; #exit ends the session at once', async (t) => {
    const c = await open(socketUrl(engine, 'coach?deviceId=mcp:exit'));
    const sessionId = (await c.element())!.sessionId;
    t.same(await c.turn('#ready:key=hidden'), [{ type: 'exit', sessionEnded: false }]);
    t.same(await c.turn('#exit'), [{ type: 'exit', sessionEnded: true }]);
    t.equal(endsOf(sessionId), 1, 'end of conversation at once');
    t.equal(await c.closed, 1000);
    t.same(engine.record.connections[0]?.frames, ['#ready:key=hidden', '#exit']);
  });

  t.test('silentAfterConnect: the socket opens and nothing comes', async (t) => {
    engine.faults.silentAfterConnect = true;
    const c = await open(socketUrl(engine, 'coach'));
    c.ws.send('#intro');
    t.equal(await c.next(100), undefined);
    c.ws.close();
    await c.closed;
    t.same(engine.record.connections[0]?.frames, ['#intro'], 'the line is still recorded');
  });

  t.test('end of conversation and memory aggregation, sessionEndDelayMs after the close', async (t) => {
    const deviceUrl = (q = '') => socketUrl(engine, `coach?deviceId=mcp:mem${q}`);
    const c = await open(deviceUrl());
    const sessionId = (await c.element())!.sessionId as string;
    await c.turn('sim:remember:likes tea');
    await c.turn('hello');

    const device = await callAt(engine.url, 'GET', `/api/devices/mcp:mem/user`, { token: null });
    t.equal(device.status, 200);
    const { userId } = device.body as { userId: string };
    t.match(userId, /^u-[0-9a-f-]{36}$/);
    t.equal((await callAt(engine.url, 'GET', `/api/devices/mcp:never/user`, { token: null })).status, 404, 'a device that never connected');
    t.same(
      (await callAt(engine.url, 'GET', `/api/memory?userId=${userId}`, { token: null })).body,
      { userId, units: [] },
      'nothing aggregated while open',
    );

    c.ws.close();
    await c.closed;
    await eventually(() => endsOf(sessionId) > 0);
    t.equal(endsOf(sessionId), 1, 'once, after the delay');
    t.same((await callAt(engine.url, 'GET', `/api/memory?userId=${userId}`, { token: null })).body, {
      userId,
      units: [
        { kind: 'fact', text: 'likes tea', sessionId },
        { kind: 'summary', sessionId, lines: 2 },
      ],
    });
    t.same((await callAt(engine.url, 'GET', `/api/memory?userId=u-nobody`, { token: null })).body, { userId: 'u-nobody', units: [] });

    const late = await open(deviceUrl(`&sessionId=${sessionId}`));
    t.match(await late.element(), { resumed: true }, 'an ended session can still be resumed');
    late.ws.close();
    await late.closed;
    // Once the engine has seen the close, an end it would schedule is due within its 50 ms delay, a
    // timer of this process that runs before a longer one set after it.
    const lateRecord = engine.record.connections.at(-1)!;
    await eventually(() => lateRecord.closedAt !== undefined);
    await sleep(80);
    t.equal(endsOf(sessionId), 1, 'but its end-of-conversation work never runs twice');
  });

  t.test('a reconnect within the delay postpones the end of conversation', async (t) => {
    // A longer delay than the shared engine's (scaled by TEST_TIME_SCALE), so that a busy machine still reconnects in time.
    const END_DELAY_MS = scaled(120);
    const slow = await startEngineSimulator({ sessionEndDelayMs: END_DELAY_MS });
    t.teardown(() => slow.close());
    const c = await open(socketUrl(slow, 'coach?deviceId=mcp:back'));
    const sessionId = (await c.element())!.sessionId as string;
    c.ws.close();
    await c.closed;
    const back = await open(socketUrl(slow, `coach?deviceId=mcp:back&sessionId=${sessionId}`));
    await back.element();
    // Past the end the first close scheduled (a timer of this process, set before this one).
    await sleep(END_DELAY_MS + 40);
    t.same(slow.record.endOfConversation, [], 'not while a socket of the session is open');
    back.ws.close();
    await back.closed;
    await eventually(() => slow.record.endOfConversation.length > 0);
    t.same(
      slow.record.endOfConversation.map((e) => e.sessionId),
      [sessionId],
      'once the last socket has been closed long enough',
    );
  });

  t.test('restore is delete-then-write, and memory requests are recorded', async (t) => {
    engine.memory.set('u-restore', [{ kind: 'summary', lines: 9 }]);
    const res = await request(`${engine.url}/api/memory/restore?userId=u-restore`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ units: [{ kind: 'fact', text: 'snapshot' }] }),
    });
    t.equal(res.statusCode, 200);
    t.same(await res.body.json(), { restored: 1 });
    t.same((await callAt(engine.url, 'GET', `/api/memory?userId=u-restore`, { token: null })).body, {
      userId: 'u-restore',
      units: [{ kind: 'fact', text: 'snapshot' }],
    });
    t.match(engine.record.memoryRequests, [
      { method: 'POST', path: '/api/memory/restore', query: { userId: 'u-restore' }, body: { units: [{ text: 'snapshot' }] } },
      { method: 'GET', path: '/api/memory', query: { userId: 'u-restore' } },
    ]);
  });

  t.test('options: reply delay and line limit', async (t) => {
    const slow = await startEngineSimulator({ replyDelayMs: 20, maxLineLength: 10 });
    t.teardown(() => slow.close());
    const c = await open(socketUrl(slow, 'coach'));
    await c.element();
    const started = Date.now();
    await c.turn('#intro');
    t.ok(Date.now() - started >= 40, 'frames of a reply are spaced');
    c.ws.send('x'.repeat(11));
    t.equal(await c.closed, 1009, 'a longer line is refused');
  });

  t.test('options: paced speech speaks in sentences, spaced; off by default', async (t) => {
    const paced = await startEngineSimulator({ speechPaceMs: 30 });
    t.teardown(() => paced.close());
    const c = await open(socketUrl(paced, 'coach'));
    await c.element();
    // The engine waits the pace before the second sentence: the turn cannot take less (a busy client only adds to it).
    const started = performance.now();
    const intro = await c.turn('#intro');
    t.ok(performance.now() - started >= 30, 'the second sentence comes a pace after the first');
    t.same(
      intro.filter((e) => e.type === 'text').map((e) => e.text),
      ["Hi, I'm coach.", 'How can I help?'],
      'the opening in two sentences',
    );
    const reply = await c.turn('Where is my order?');
    t.same(
      reply.filter((e) => e.type === 'text').map((e) => e.text),
      ['Let me see…', 'You said: Where is my order?', 'Anything else?'],
      'an ordinary reply leads in, answers, and speaks again after response-end',
    );
    t.equal(reply.filter((e) => e.type === 'command' && e.name === 'tool-call').length, 2, 'the tool calls are still there');
    c.ws.close();

    const plain = await open(socketUrl(engine, 'coach'));
    await plain.element();
    t.same((await plain.turn('#intro')).filter((e) => e.type === 'text').length, 1, 'the default: one sentence at once');
    plain.ws.close();
  });
});

t.test('platform simulator', async (t) => {
  const platform: PlatformSimulator = await startPlatformSimulator();
  t.teardown(() => platform.close());
  t.afterEach(() => {
    platform.faults = {};
    platform.reset();
  });
  const api = (path: string, token?: string) => callAt(platform.url, 'GET', `/api/v1${path}`, { token: token ?? null });

  t.test('who the token belongs to; 401 otherwise', async (t) => {
    t.same((await api('/users/me', 'demo-token')).body, { id: 'u-demo', email: 'demo@example.com' });
    t.same((await api('/users/me', 'demo-token-2')).body, { id: 'u-demo', email: 'demo@example.com' });
    t.equal((await api('/users/me')).status, 401);
    t.equal((await api('/users/me', 'forged')).status, 401);
    t.equal((await api('/agents/coach/revisions', 'forged')).status, 401);
    t.match(platform.requests, [{ method: 'GET', path: '/api/v1/users/me', authorization: 'Bearer demo-token' }]);
    t.equal(platform.count('/api/v1/users/me'), 4);
    t.equal(platform.count(/revisions$/), 1);
  });

  t.test('agents and revisions', async (t) => {
    const revisions = await api('/agents/coach/revisions', 'demo-token');
    t.same(revisions.body, [
      { id: 'a-coach-4', ref: 'coach', revision: 4, state: 'Draft' },
      { id: 'a-coach-3', ref: 'coach', revision: 3, state: 'Preview' },
      { id: 'a-coach-2', ref: 'coach', revision: 2, state: 'Published' },
      { id: 'a-coach-1', ref: 'coach', revision: 1, state: 'Archived' },
    ]);
    t.equal((await api('/agents/nope/revisions', 'demo-token')).status, 404);
    t.equal((await api('/agents/hidden/revisions', 'demo-token')).status, 403, 'no role on p-secret');
    t.equal((await api('/agents/coach/revisions', 'outsider-token')).status, 403);
    t.same((await api('/agents/a-coach-2', 'demo-token')).body, {
      id: 'a-coach-2',
      ref: 'coach',
      revision: 2,
      state: 'Published',
      project: { id: 'p-open', tenant: { id: 't-acme' } },
    });
    t.equal((await api('/agents/a-hidden-1', 'bob-token')).status, 403);
    t.equal((await api('/agents/a-nope-1', 'demo-token')).status, 404);
  });

  t.test('projects: roles, a tenant role falling through, closedness', async (t) => {
    t.match((await api('/project/p-open/context', 'demo-token')).body, {
      id: 'p-open',
      tenantId: 't-acme',
      userRole: 'Viewer',
      tenant: { id: 't-acme', name: 'Acme', userRole: null },
    });
    t.match((await api('/project/p-secret/context', 'tenant-token')).body, { userRole: null, tenant: { userRole: 'Editor' } });
    t.equal((await api('/agents/hidden/revisions', 'tenant-token')).status, 200, 'the tenant role reaches every project');
    t.equal((await api('/project/p-secret/context', 'demo-token')).status, 403);
    t.equal((await api('/project/p-signin', 'bob-token')).status, 403);
    t.equal((await api('/project/p-nope', 'demo-token')).status, 404);
    t.same((await api('/project/p-idp', 'demo-token')).body, {
      id: 'p-idp',
      name: 'Identity-provider project',
      tenantId: 't-acme',
      signInRequired: false,
      externalRolesEnforced: true,
      identityProviders: [{ id: 'idp-1', name: 'Okta' }],
    });
    t.match((await api('/project/p-extnoidp', 'demo-token')).body, { externalRolesEnforced: true, identityProviders: [] });
  });

  t.test('the world is live', async (t) => {
    platform.world.users['u-bob']!.projectRoles['p-secret'] = 'Owner';
    t.equal((await api('/project/p-secret', 'bob-token')).status, 200);
  });

  t.test('faults', async (t) => {
    platform.faults = { status: 503, match: /revisions/ };
    t.equal((await api('/agents/coach/revisions', 'demo-token')).status, 503, 'a matching path is faulted');
    t.equal((await api('/users/me', 'demo-token')).status, 200, 'another is not');

    platform.faults = { malformed: true };
    const garbage = await api('/users/me', 'demo-token');
    t.equal(garbage.status, 200);
    t.equal(garbage.body, undefined, 'a 200 that is not JSON');
    t.not(garbage.text, '');

    platform.faults = { delayMs: 80 };
    const started = Date.now();
    t.equal((await api('/users/me', 'demo-token')).status, 200);
    t.ok(Date.now() - started >= 80, 'answered late');

    platform.faults = { hang: true };
    await t.rejects(request(`${platform.url}/api/v1/users/me`, { signal: AbortSignal.timeout(100) }), 'never answers');
    t.equal(platform.count(), 5, 'faulted requests are recorded too');
  });

  t.test('close() does not wait for a hung request', async (t) => {
    const hung = await startPlatformSimulator();
    hung.faults.hang = true;
    const pending = request(`${hung.url}/api/v1/users/me`).catch((err: Error) => err);
    await eventually(() => hung.count() === 1);
    await hung.close();
    t.type(await pending, Error, 'the hung request is cut');
  });
});

t.test('demoWorld() is a fresh copy each call', async (t) => {
  const a = demoWorld();
  a.agents.coach!.revisions.length = 0;
  t.equal(demoWorld().agents.coach!.revisions.length, 4);
});
