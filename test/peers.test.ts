// The peers of a release, in this process: three gateways built from app.ts, peers of each other,
// on one engine and platform simulator, talking real HTTP on loopback.
import t from 'tap';
import { request } from 'undici';
import type { Ownership } from '../src/conversations/conversation.js';
import { ConfigError, loadConfig } from '../src/ops/config.js';
import { BoundedQueue } from '../src/peers/notices.js';
import { PeerList } from '../src/peers/peer-list.js';
import { PEER_ADDRESS_HEADER, PEER_HEADER } from '../src/peers/secret.js';
import { eventually, startStack } from './support/stack.js';
import { PEER_SECRET, startHangingPeer, startPods } from './support/peers.js';
import { conversationPath, turnPath } from './support/http.js';
import { scaled } from './support/time.js';

const base = { PROMETHIST_MCP_ENGINE_URL: 'http://engine.example', PROMETHIST_PLATFORM_URL: 'http://platform.example' };
const planning = (answer: { body: { turn: { text: string } } }) => answer.body.turn.text;
const silentLog = { info() {}, warn() {} } as never;

/** POSTs `notice` to a pod's peer notices route with the secret, as the sibling listed under `from` does. */
const postNotice = (url: string, notice: object, from: string) =>
  request(`${url}/internal/peer/notices`, {
    method: 'POST',
    headers: { [PEER_HEADER]: PEER_SECRET, [PEER_ADDRESS_HEADER]: from, 'content-type': 'application/json' },
    body: JSON.stringify(notice),
  });
const listedAs = (url: string) => new URL(url).host;

/** A sibling's ownership notice for conversation `id` (its owner as a pod knows it), written out in the wire's words. */
const heldNotice = (id: string, owner: Ownership, turns: number) => ({
  session_id: id,
  caller_id: owner.callerId,
  agent: owner.agentKey,
  settings: { device_ref: owner.settings.deviceRef, locale: owner.settings.locale, time_zone: null, run_label: null, time_offset: null },
  turns,
  created_at: owner.createdAt,
});

t.test('configuration: PEERS, PEER_DNS, PEER_SECRET, PEER_TIMEOUT_MS', async (t) => {
  t.equal(loadConfig(base).peers, undefined, 'no peers: a single pod');
  const config = loadConfig({ ...base, PEERS: '10.0.0.1:8080, [fd00::2]:8080,gw-1.gw:8080', PEER_SECRET });
  t.same(config.peers, {
    static: [
      { host: '10.0.0.1', port: 8080 },
      { host: 'fd00::2', port: 8080 },
      { host: 'gw-1.gw', port: 8080 },
    ],
    dns: null,
    self: null,
    secret: PEER_SECRET,
    timeoutMs: 300,
  });
  t.same(loadConfig({ ...base, PEERS: 'gw.example:443', PEER_ADDRESS: 'gw-2.example:443', PEER_SECRET }).peers?.self, {
    host: 'gw-2.example',
    port: 443,
  });
  t.equal(loadConfig({ ...base, PEER_DNS: 'gw-peers', PEER_SECRET, PEER_TIMEOUT_MS: '50' }).peers?.timeoutMs, 50);
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig({ ...base, ...env });
      return 'accepted';
    } catch (err) {
      return err instanceof ConfigError ? err.message : String(err);
    }
  };
  t.match(problem({ PEERS: '10.0.0.1:8080' }), /PEER_SECRET is required with PEERS or PEER_DNS/);
  t.match(problem({ PEERS: '10.0.0.1:8080', PEER_SECRET: '  ' }), /PEER_SECRET is required/, 'a blank secret is none');
  t.equal(problem({ PEERS: '10.0.0.1:8080', PEER_SECRET: 'short-secret' }), 'accepted', 'a short secret starts (with a warning)');
  t.match(problem({ PEERS: '10.0.0.1' }), /PEERS must be a comma-separated list of host:port, not 10.0.0.1/);
  t.match(problem({ PEERS: 'a:0' }), /PEERS must be/);
  t.match(problem({ PEER_DNS: 'bad name', PEER_SECRET }), /PEER_DNS must be a DNS name/);
  t.match(
    problem({ PEERS: '10.0.0.1:8080', PEER_ADDRESS: '10.0.0.2', PEER_SECRET }),
    /PEER_ADDRESS must be the host:port this pod is listed under/,
  );
  t.match(problem({ PEER_TIMEOUT_MS: '0' }), /PEER_TIMEOUT_MS must be a whole number/);
});

t.test('peer list: the pod itself is skipped; DNS resolves with its own port and keeps the last answer', async (t) => {
  const counts: number[] = [];
  const list = new PeerList(
    {
      static: [
        { host: '127.0.0.1', port: 9001 },
        { host: 'localhost', port: 9002 },
        { host: '10.1.1.1', port: 9001 },
      ],
      dns: null,
      self: null,
      secret: PEER_SECRET,
      timeoutMs: 300,
    },
    { host: '0.0.0.0', port: 9001 },
    silentLog,
    (peers) => counts.push(peers.length),
  );
  t.same(
    list.peers.map((p) => p.address),
    ['localhost:9002', '10.1.1.1:9001'],
  );
  t.same(counts, [2]);
  t.equal(list.self, '127.0.0.1:9001', 'the pod names itself as it is listed');
  t.equal(list.listed('LOCALHOST:9002')?.address, 'localhost:9002', 'a named address is found as listed');
  t.equal(list.listed('127.0.0.1:9002'), undefined, 'an address that is not listed is no peer, even if it is the same host');

  // Each pod on its own loopback address, one port: listening on 127.0.0.2, 127.0.0.3 is a sibling.
  const bound = new PeerList(
    {
      static: ['127.0.0.2', '127.0.0.3', '::1'].map((host) => ({ host, port: 9001 })),
      dns: null,
      self: null,
      secret: PEER_SECRET,
      timeoutMs: 300,
    },
    { host: '127.0.0.2', port: 9001 },
    silentLog,
    () => {},
  );
  t.same(
    bound.peers.map((p) => p.address),
    ['127.0.0.3:9001', '[::1]:9001'],
  );
  t.equal(bound.self, '127.0.0.2:9001');
  // Behind a NAT the pod is listed under an address it does not have: PEER_ADDRESS says which.
  const natted = new PeerList(
    {
      static: ['gw-a.example', 'gw-b.example'].map((host) => ({ host, port: 443 })),
      dns: null,
      self: { host: 'GW-B.example', port: 443 },
      secret: PEER_SECRET,
      timeoutMs: 300,
    },
    { host: '0.0.0.0', port: 8080 },
    silentLog,
    () => {},
  );
  t.same(
    natted.peers.map((p) => p.address),
    ['gw-a.example:443'],
  );
  t.equal(natted.self, 'gw-b.example:443');

  const dns = new PeerList(
    { static: [], dns: 'localhost', self: null, secret: PEER_SECRET, timeoutMs: 300 },
    { host: '0.0.0.0', port: 9001 },
    silentLog,
    () => {},
  );
  await dns.refresh();
  t.same(dns.peers, [], 'localhost on its own port is this pod');
  dns.close();
  const warnings: string[] = [];
  const broken = new PeerList(
    { static: [{ host: 'fd00::9', port: 80 }], dns: 'no-such-host.invalid', self: null, secret: PEER_SECRET, timeoutMs: 300 },
    { host: '0.0.0.0', port: 9001 },
    { info() {}, warn: (_: unknown, m: string) => warnings.push(m) } as never,
    () => {},
  );
  await broken.refresh();
  t.same(
    broken.peers.map((p) => p.origin),
    ['http://[fd00::9]:80'],
    'a failed resolution keeps what was known',
  );
  t.match(warnings[0], /did not resolve/);
  broken.close();
});

t.test('bounded queue: concurrency and backlog are bounded, jobs that fail do not stop it', async (t) => {
  const queue = new BoundedQueue({ concurrency: 2, maxPending: 3 });
  let running = 0;
  let most = 0;
  let done = 0;
  const job =
    (fail = false) =>
    async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5));
      running -= 1;
      done += 1;
      if (fail) throw new Error('peer down');
    };
  const accepted = [job(true), job(), job(), job(), job(), job(), job()].map((j) => queue.push(j));
  t.same(accepted, [true, true, true, true, true, false, false], 'two run, three wait, the rest are dropped');
  await eventually(() => done === 5);
  t.equal(most, 2);
  t.equal(queue.push(job()), true, 'room again once they ran');
  await eventually(() => done === 6);
});

t.test('three pods act as one', async (t) => {
  const pods = await startPods(t, 3);
  const frames = () => pods.engine.record.connections.reduce((n, c) => n + c.frames.length, 0);

  await t.test('peer routes answer 401 without the secret', async (t) => {
    const id = '11111111-2222-4333-8444-555555555555';
    for (const headers of [{}, { [PEER_HEADER]: 'wrong' }]) {
      const res = await request(`${pods.urls[0]}/internal/peer/sessions/${id}`, { headers });
      t.equal(res.statusCode, 401);
      t.match(await res.body.json(), { error: 'unauthenticated' });
    }
    const res = await request(`${pods.urls[0]}/internal/peer/sessions/${id}`, { headers: { [PEER_HEADER]: PEER_SECRET } });
    t.same(await res.body.json(), { state: 'unknown' });
    const notice = await postNotice(pods.urls[0]!, { session_id: id }, listedAs(pods.urls[1]!));
    t.equal(notice.statusCode, 400, 'a malformed notice is refused');
    await notice.body.text();
    // The secret alone is not enough to speak for a pod: the call names an address of the peer list.
    for (const from of ['127.0.0.6:15006', '']) {
      const unlisted = await postNotice(pods.urls[0]!, { session_id: id, closed: true }, from);
      t.equal(unlisted.statusCode, 403, `a notice naming ${JSON.stringify(from)} is refused`);
      t.match(await unlisted.body.json(), {
        error: 'forbidden',
        message: /x-agent-test-gateway-peer-address header must name an address listed/,
      });
    }
    const metrics = await (await request(`${pods.urls[0]}/metrics`)).body.text();
    t.match(metrics, /agent_test_gateway_peer_refusals_total\{direction="here",reason="not_listed"\} 2/);
    t.match(metrics, /agent_test_gateway_peer_refusals_total\{direction="here",reason="secret"\} 2/);
  });

  await t.test('a turn on another pod runs on the holder socket: planning kept', async (t) => {
    const id = await pods.open(0);
    await eventually(() => pods.apps.slice(1).every((app) => app.conversationRegistry.ownership(id)?.owner.callerId === 'u-demo'));
    for (const pod of [1, 2, 0, 1]) {
      const answer = await pods.call(pod, 'POST', turnPath(id), { body: { line: 'planning?' } });
      t.equal(answer.status, 200, `turn through pod ${pod}`);
      t.equal(answer.body.conversation.reconnected, false);
      t.equal(answer.body.conversation.planning_lost, false);
    }
    const last = await pods.call(2, 'POST', turnPath(id), { body: { line: 'planning?' } });
    t.match(planning(last), /^This socket has carried 5 of my turns/);
    t.equal(pods.engine.record.connections.length, 1, 'one engine socket');
    const metrics = await (await request(`${pods.urls[1]}/metrics`)).body.text();
    t.match(metrics, /agent_test_gateway_peer_forwarded_calls_total\{outcome="answered"\} [1-9]/);
    t.match(metrics, /agent_test_gateway_peer_lookup_duration_seconds_count\{result="held"\} 0/, 'the notice named the holder: no lookup');
    t.match(metrics, /agent_test_gateway_peer_ownership_notices_received_total [1-9]/);
    t.match(metrics, /agent_test_gateway_peers 2/);
    t.match(metrics, /agent_test_gateway_peer_lookup_duration_seconds_count\{result="error"\} 0/);

    t.equal(
      (await pods.call(1, 'POST', turnPath(id), { body: { line: 'Hi', locale: 'de-DE' } })).body.error,
      'conversation_settings_fixed',
      'settings decided by the holder',
    );
    const streamed = await pods.call(1, 'POST', turnPath(id), { body: { line: 'Hi' }, headers: { accept: 'application/x-ndjson' } });
    t.equal(streamed.status, 200);
    t.match(streamed.headers['content-type'], /application\/x-ndjson/);
    const lines = streamed.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.ok(lines.length > 3);
    t.same(
      lines.slice(0, -1).map((l) => Object.keys(l)),
      lines.slice(0, -1).map(() => ['element']),
      'elements streamed one per line',
    );
    t.equal(lines.at(-1).result.turn.outcome, 'exit');
    t.same(
      lines.slice(0, -1).map((l) => l.element),
      lines.at(-1).result.turn.elements,
    );

    const view = await pods.call(2, 'GET', conversationPath(id));
    t.equal(view.status, 200);
    t.equal(view.body.connection, 'open');
    t.equal(view.body.turns, 7, 'the refused turn is not one');
  });

  await t.test('another caller or agent is refused on every pod, and nothing reaches the engine', async (t) => {
    const id = await pods.open(1);
    await eventually(() => pods.apps.every((app) => app.conversationRegistry.ownership(id) !== undefined));
    const before = frames();
    for (const pod of [0, 1, 2]) {
      for (const [method, path, token, body] of [
        ['POST', turnPath(id), 'bob-token', { line: 'Hi' }],
        ['GET', conversationPath(id), 'bob-token', undefined],
        ['DELETE', conversationPath(id), 'bob-token', undefined],
        ['POST', turnPath(id, 'coach.2'), 'demo-token', { line: 'Hi' }],
      ] as const) {
        const answer = await pods.call(pod, method, path, { token, body });
        t.equal(answer.status, 403, `${method} ${path} on pod ${pod}`);
        t.equal(answer.body.error, 'conversation_not_yours');
      }
    }
    t.equal(frames(), before, 'no line sent');
    t.equal(pods.engine.openSockets(), 2);
  });

  await t.test('the caller hanging up cancels the forwarded turn on the holder', async (t) => {
    const id = await pods.open(0);
    const hangUp = new AbortController();
    const running = pods.call(1, 'POST', turnPath(id), { body: { line: 'sim:hang' }, signal: hangUp.signal }).catch((err: Error) => err);
    const conn = pods.engine.record.connections.find((c) => c.sessionId === id)!;
    await eventually(() => conn.frames.includes('sim:hang'));
    hangUp.abort();
    t.type(await running, Error);
    await eventually(() => conn.closeCode !== undefined);
    t.equal(conn.closeCode, 1000, 'a plain close');
    t.notOk(conn.frames.includes('#exit'));
    t.equal(pods.apps[0]!.conversationRegistry.ownership(id)?.owner.callerId, 'u-demo');
    const view = await pods.call(2, 'GET', conversationPath(id));
    t.equal(view.body.close_cause, 'cancelled', 'the holder closed it as cancelled');
  });

  await t.test('DELETE through another pod closes on the holder; the next turn reconnects with the first settings', async (t) => {
    const id = await pods.open(2, 'demo-token', { locale: 'de-DE', device_ref: 'peer-user' });
    const closed = await pods.call(0, 'DELETE', conversationPath(id));
    t.equal(closed.status, 204);
    t.match(closed.headers['x-conversation-note'], /caller's request/);
    const view = await pods.call(1, 'GET', conversationPath(id));
    t.equal(view.body.connection, 'closed');
    const again = await pods.call(1, 'POST', turnPath(id), { body: { line: 'Hi' } });
    t.equal(again.status, 200);
    t.equal(again.body.conversation.planning_lost, true);
    t.equal(again.body.conversation.locale, 'de-DE', 'first-turn settings from the peer that remembers it');
    t.equal(again.body.conversation.device_ref, 'mcp:peer-user');
  });

  await t.test('the holder moved: a stale memory of it costs one more lookup, never a wrong answer', async (t) => {
    const id = await pods.open(1);
    await eventually(() => pods.apps.every((app) => app.conversationRegistry.ownership(id) !== undefined));
    const port = (pod: number) => new URL(pods.urls[pod]!).port;
    await eventually(() => pods.apps[0]!.peers!.rememberedHolder(id)?.address === `127.0.0.1:${port(1)}`);
    t.equal((await pods.call(1, 'DELETE', conversationPath(id))).status, 204, 'closed on pod 1');
    await eventually(() => pods.apps[0]!.peers!.rememberedHolder(id) === undefined);
    t.pass("pod 1's close notice: pod 0 forgets it as the holder");
    const reconnected = await pods.call(2, 'POST', turnPath(id), { body: { line: 'planning?' } });
    t.equal(reconnected.body.conversation.reconnected, true, 'reconnected on pod 2');
    await eventually(() => pods.apps[0]!.peers!.rememberedHolder(id)?.address === `127.0.0.1:${new URL(pods.urls[2]!).port}`);
    // Pod 1's notice of its own connect arrives late (notices are fire-and-forget): pod 0 now believes pod 1 holds it.
    const owner = pods.apps[0]!.conversationRegistry.ownership(id)!.owner;
    const late = await postNotice(pods.urls[0]!, heldNotice(id, owner, 0), listedAs(pods.urls[1]!));
    t.equal(late.statusCode, 204);
    t.equal(pods.apps[0]!.peers!.rememberedHolder(id)?.address, `127.0.0.1:${new URL(pods.urls[1]!).port}`, 'pod 0 remembers pod 1');
    const connections = pods.engine.record.connections.length;

    const answer = await pods.call(0, 'POST', turnPath(id), { body: { line: 'planning?' } });
    t.equal(answer.status, 200);
    t.equal(answer.body.conversation.reconnected, false, 'ran on the holder, pod 2');
    t.match(planning(answer), /^This socket has carried 1 of my turns/, "pod 2's socket kept its planning");
    t.equal(pods.engine.record.connections.length, connections, 'no socket opened');
    t.equal(pods.apps[2]!.conversationRegistry.ownership(id)?.held, true, 'pod 2 still holds it');
    t.equal(pods.apps[1]!.conversationRegistry.ownership(id)?.held, false, 'pod 1 did not reconnect it');
    t.equal(pods.apps[0]!.peers!.rememberedHolder(id)?.address, `127.0.0.1:${new URL(pods.urls[2]!).port}`, 'pod 0 now remembers pod 2');
    const metrics = await (await request(`${pods.urls[0]}/metrics`)).body.text();
    t.match(metrics, /agent_test_gateway_peer_forwarded_calls_total\{outcome="moved"\} 1/);
  });

  await t.test('a sibling that reconnected a conversation this pod holds: this pod closes its socket once idle', async (t) => {
    const id = await pods.open(0);
    const conn = pods.engine.record.connections.find((c) => c.sessionId === id)!;
    const owner = pods.apps[0]!.conversationRegistry.ownership(id)!.owner;
    // Scaled by TEST_TIME_SCALE: the notice below must arrive while the turn still runs.
    const line = `sim:delay:${scaled(300)}`;
    const running = pods.call(0, 'POST', turnPath(id), { body: { line } });
    await eventually(() => conn.frames.includes(line));
    const notice = await postNotice(pods.urls[0]!, heldNotice(id, owner, 1), listedAs(pods.urls[1]!));
    t.equal(notice.statusCode, 204);
    t.equal(conn.closeCode, undefined, 'not while its turn runs');
    const finished = await running;
    t.equal(finished.body.turn.outcome, 'exit', 'the running turn ends normally');
    t.equal(finished.body.conversation.connection, 'closed');
    t.match(finished.body.notes.join(' '), /another gateway pod of the release reconnected/);
    await eventually(() => conn.closeCode !== undefined);
    t.equal(conn.closeCode, 1000, 'one socket per conversation: a plain close');
    t.same(pods.apps[0]!.conversationRegistry.ownership(id), { held: false, closedHere: false, owner: { ...owner, turns: 2 } });
  });

  await t.test('a holder shutting down: a sibling takes the call, nothing answers 5xx', async (t) => {
    const busy = await pods.open(1);
    const idle = await pods.open(1);
    await eventually(() => [busy, idle].every((id) => pods.apps[0]!.conversationRegistry.ownership(id) !== undefined));
    // Scaled by TEST_TIME_SCALE: the two calls below must reach pod 1 while its turn still runs.
    const line = `sim:delay:${scaled(600)}`;
    const running = pods.call(1, 'POST', turnPath(busy), { body: { line } });
    await eventually(
      () =>
        pods.apps[1]!.conversationRegistry.ownership(busy)?.held === true &&
        pods.engine.record.connections.some((c) => c.frames.includes(line)),
    );
    const drained = pods.apps[1]!.conversationRegistry.drain(scaled(5000));
    const idleTurn = await pods.call(0, 'POST', turnPath(idle), { body: { line: 'Hi' } });
    t.equal(idleTurn.status, 200, 'an idle conversation of a draining pod reconnects on a sibling');
    t.equal(idleTurn.body.conversation.planning_lost, true);
    const busyTurn = await pods.call(0, 'POST', turnPath(busy), { body: { line: 'Hi' } });
    t.equal(busyTurn.status, 200, 'a call the draining holder refuses (shutting_down) runs on the sibling');
    t.equal(busyTurn.body.conversation.planning_lost, true);
    t.equal((await running).status, 200, 'the running turn finished on the draining pod');
    await drained;
    const metrics = await (await request(`${pods.urls[0]}/metrics`)).body.text();
    t.match(metrics, /agent_test_gateway_peer_forwarded_calls_total\{outcome="fallback"\} 1/);
  });

  await t.test('a holder that goes away: the next turn reconnects elsewhere, the owner still holds', async (t) => {
    const id = await pods.open(2, 'tenant-token', { time_zone: 'Europe/Prague' });
    await eventually(() => pods.apps.slice(0, 2).every((app) => app.conversationRegistry.ownership(id) !== undefined));
    await pods.apps[2]!.close();
    t.equal((await pods.call(0, 'GET', conversationPath(id), { token: 'bob-token' })).status, 403);
    const known = await pods.call(0, 'GET', conversationPath(id), { token: 'tenant-token' });
    t.equal(known.body.connection, 'closed');
    t.match(known.body.notes.join(' '), /Another gateway pod/);
    const back = await pods.call(0, 'POST', turnPath(id), { token: 'tenant-token', body: { line: 'Hi' } });
    t.equal(back.status, 200);
    t.equal(back.body.conversation.planning_lost, true);
    t.equal(back.body.conversation.time_zone, 'Europe/Prague');
    t.match(back.body.notes[0], /another pod of the release held it/);
    t.equal((await pods.call(1, 'POST', turnPath(id), { token: 'bob-token', body: { line: 'Hi' } })).status, 403);

    const list = await pods.call(1, 'GET', '/v1/conversations', { token: 'tenant-token' });
    t.same(
      list.body.conversations.map((c: { session_id: string }) => c.session_id),
      [id],
      'listed once, from the pod that holds it',
    );
    t.equal(list.body.conversations[0].connection, 'open');
    const unknown = await pods.call(1, 'GET', conversationPath('99999999-2222-4333-8444-555555555555'));
    t.equal(unknown.status, 404, 'a pod that is down knows nothing, and costs no 5xx');
  });
});

t.test('a peer that hangs costs at most PEER_TIMEOUT_MS and changes no answer', async (t) => {
  const { port } = await startHangingPeer(t);
  // Scaled by TEST_TIME_SCALE: the siblings that do answer must answer within it on a busy machine.
  const timeoutMs = scaled(150);
  const pods = await startPods(t, 2, { env: { PEER_TIMEOUT_MS: String(timeoutMs) }, extraPeers: [`127.0.0.1:${port}`] });
  const unknown = await pods.call(1, 'GET', conversationPath('99999999-2222-4333-8444-555555555555'));
  t.equal(unknown.status, 404, 'a session no pod knows: the same 404 as a single pod');
  const metrics = await (await request(`${pods.urls[1]}/metrics`)).body.text();
  t.match(metrics, /agent_test_gateway_peer_lookup_duration_seconds_count\{result="error"\} 1/, 'the hanging peer counted as not knowing');
  const gaveUpAfter = 1000 * Number(/agent_test_gateway_peer_lookup_duration_seconds_sum\{result="error"\} (\S+)/.exec(metrics)?.[1]);
  t.ok(
    gaveUpAfter >= timeoutMs - 10 && gaveUpAfter < timeoutMs + scaled(850),
    `given up at the ${timeoutMs} ms timeout, not waited for (${Math.round(gaveUpAfter)} ms)`,
  );
  const id = await pods.open(0);
  const answer = await pods.call(1, 'POST', turnPath(id), { body: { line: 'planning?' } });
  t.equal(answer.status, 200);
  t.match(planning(answer), /^This socket has carried 1 of my turns/, 'still forwarded to the holder');
});

t.test('a short PEER_SECRET starts with a warning that never shows the value', async (t) => {
  const s = await startStack(t, { env: { PEERS: '127.0.0.1:1', PEER_SECRET: 'short-secret' } });
  const warning = s.logs.find((line) => line.includes('PEER_SECRET is shorter than 16 characters'));
  t.ok(warning, 'the start-up warning');
  t.notOk(
    s.logs.some((line) => line.includes('short-secret')),
    'the value is in no log line',
  );
  t.equal((await s.call('GET', '/readyz')).status, 200, 'the pod serves');
});
