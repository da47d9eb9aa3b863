// Three real gateway processes of one release (PEERS, PEER_SECRET), the engine and platform
// simulators in this process, Debian's nginx in front (hashing on the Authorization header like
// the chart's ingress, and plain round robin), and a peer that accepts and never answers.
import t from 'tap';
import { request } from 'undici';
import { startEngineSimulator } from '../src/simulators/engine.js';
import { startPlatformSimulator } from '../src/simulators/platform.js';
import { demoWorld } from '../src/simulators/world.js';
import { startNginx, startPod, type Nginx, type Pod } from './support/cluster.js';
import { PEER_HEADER } from '../src/peers/secret.js';
import { PEER_SECRET, startHangingPeer } from './support/peers.js';
import { eventually } from './support/stack.js';
import { needs } from './support/tools.js';
import { callAt, conversationPath, freePort, turnPath, type Answer } from './support/http.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(150_000));

// Above the default 300 ms: the machine running the suite may be busy (and scaled by TEST_TIME_SCALE).
const PEER_TIMEOUT_MS = scaled(1000);

// A connection per call: nginx reloads (a pod leaving the upstreams) close idle keep-alive
// connections, which would race with a call sent on one.
const call = (base: string, method: string, path: string, token: string, body?: unknown): Promise<Answer> =>
  callAt(base, method, path, { token, body, reset: true });

/** "This socket has carried N of my turns" (or "is new (0 turns)"): the lines the engine socket carried before this one. */
const socketTurns = (answer: Answer): number => {
  const said = /^This socket (?:has carried (\d+) of my turns|is new \((0) turns\))/.exec(answer.body.turn.text);
  return Number(said?.[1] ?? said?.[2]);
};

t.test('three gateway pods behind nginx act as one', needs('nginx'), async (t) => {
  const world = demoWorld();
  const LOAD_CALLERS = 30;
  for (let i = 0; i < LOAD_CALLERS; i++) {
    world.users[`u-load-${i}`] = {
      id: `u-load-${i}`,
      email: `load${i}@example.com`,
      projectRoles: { 'p-open': 'Viewer' },
      tenantRoles: {},
    };
    world.tokens[`load-token-${i}`] = `u-load-${i}`;
  }
  const engine = await startEngineSimulator({ world, sessionEndDelayMs: 50 });
  const platform = await startPlatformSimulator({ world });
  const { port: hangingPort } = await startHangingPeer(t);

  const ports = [await freePort(), await freePort(), await freePort()];
  const env = {
    PROMETHIST_MCP_ENGINE_URL: engine.url,
    PROMETHIST_PLATFORM_URL: platform.url,
    PEERS: [...ports, hangingPort].map((p) => `127.0.0.1:${p}`).join(','),
    PEER_SECRET,
    PEER_TIMEOUT_MS: String(PEER_TIMEOUT_MS),
    // The turns running at a SIGTERM of the rolling restart must end inside the grace.
    SHUTDOWN_GRACE_MS: String(scaled(1500)),
    // Generous: the machine running the suite may be busy, and no turn here should be cut off.
    TURN_BUDGET_MS: String(scaled(20_000)),
    ENGINE_CONNECT_TIMEOUT_MS: String(scaled(20_000)),
    PLATFORM_TIMEOUT_MS: String(scaled(10_000)),
    AUTH_CACHE_TTL_MS: '60000',
  };
  const spawned: Pod[] = [];
  let nginx: Nginx | undefined;
  t.teardown(async () => {
    for (const pod of spawned) pod.child.kill('SIGKILL');
    await nginx?.stop();
    await engine.close();
    await platform.close();
  });
  const start = (port: number) => startPod(port, env, (pod) => spawned.push(pod));
  const pods: Pod[] = await Promise.all(ports.map(start));
  nginx = await startNginx(ports);
  const fronts = { hashed: nginx.hashed, 'round robin': nginx.roundRobin };
  const frames = () => engine.record.connections.reduce((n, c) => n + c.frames.length, 0);
  /** Every pod has heard of the owner (the notice is fire-and-forget). */
  const knownEverywhere = async (id: string) => {
    for (const pod of pods) {
      const until = Date.now() + scaled(2000);
      for (;;) {
        const res = await request(`${pod.url}/internal/peer/sessions/${id}`, { headers: { [PEER_HEADER]: PEER_SECRET } });
        if (((await res.body.json()) as { state: string }).state !== 'unknown') break;
        if (Date.now() > until) throw new Error('the ownership notice did not arrive');
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const socketsOf = (id: string) => engine.record.connections.filter((c) => c.sessionId === id);

  await t.test('1. another caller is refused everywhere, and nothing reaches the engine', async (t) => {
    for (const [name, front] of Object.entries(fronts)) {
      const started = await call(front, 'POST', '/v1/agents/coach/conversations', 'demo-token', {});
      t.equal(started.status, 201, `started through ${name}`);
      const id = started.body.session_id as string;
      await knownEverywhere(id);
      const before = { frames: frames(), connections: engine.record.connections.length };
      const targets = [front, front, front, ...pods.map((p) => p.url)];
      for (const target of targets) {
        for (const [method, path, body] of [
          ['POST', turnPath(id), { line: 'Hi' }],
          ['GET', conversationPath(id), undefined],
          ['DELETE', conversationPath(id), undefined],
        ] as const) {
          const answer = await call(target, method, path, 'bob-token', body);
          t.equal(answer.status, 403, `${method} through ${target === front ? name : 'a pod'}`);
          t.equal(answer.body.error, 'conversation_not_yours');
        }
      }
      t.same({ frames: frames(), connections: engine.record.connections.length }, before, 'nothing sent, nothing connected');
    }
  });

  const forwardedCounts = () =>
    Promise.all(
      pods.map(async (pod) => {
        const text = await (await request(`${pod.url}/metrics`)).body.text();
        return Number(/agent_test_gateway_peer_forwarded_calls_total\{outcome="answered"\} (\d+)/.exec(text)?.[1]);
      }),
    );

  await t.test('2. round robin: a 10-turn conversation keeps one engine socket', async (t) => {
    const before = await forwardedCounts();
    const started = await call(nginx.roundRobin, 'POST', '/v1/agents/coach/conversations', 'tenant-token', {});
    const id = started.body.session_id as string;
    let last: Answer | undefined;
    for (let i = 1; i <= 10; i++) {
      last = await call(nginx.roundRobin, 'POST', turnPath(id), 'tenant-token', { line: 'planning?' });
      t.equal(last.status, 200);
      t.equal(last.body.conversation.planning_lost, false);
    }
    t.equal(socketTurns(last!), 10, 'the tenth line is the tenth on the socket after the opening');
    t.equal(socketsOf(id).length, 1, 'one engine socket from start to end');
    const forwarded = (await forwardedCounts()).map((n, i) => n - before[i]!);
    t.same(forwarded.filter((n) => n > 0).length, 2, 'the two pods that do not hold it forwarded its calls');
    t.ok([6, 7].includes(forwarded.reduce((a, b) => a + b, 0)), 'two calls in three were forwarded');
  });

  await t.test('3. SIGKILL of the holder: a survivor reconnects, ownership holds, others untouched', async (t) => {
    const ids = await Promise.all(
      pods.map(
        async (pod) => (await call(pod.url, 'POST', '/v1/agents/coach/conversations', 'demo-token-2', {})).body.session_id as string,
      ),
    );
    await Promise.all(ids.map(knownEverywhere));
    pods[0]!.child.kill('SIGKILL');
    await pods[0]!.exited;
    const [lost, ...kept] = ids;
    const back = await call(nginx.roundRobin, 'POST', turnPath(lost!), 'demo-token', { line: 'planning?' });
    t.equal(back.status, 200, 'the next turn of the dead pod conversation');
    t.equal(back.body.conversation.reconnected, true);
    t.equal(back.body.conversation.planning_lost, true);
    t.equal(socketTurns(back), 0);
    for (const target of [nginx.roundRobin, nginx.roundRobin, pods[1]!.url, pods[2]!.url]) {
      t.equal((await call(target, 'POST', turnPath(lost!), 'bob-token', { line: 'Hi' })).status, 403, 'still refused to another caller');
    }
    for (const id of kept) {
      const turn = await call(nginx.roundRobin, 'POST', turnPath(id), 'demo-token', { line: 'planning?' });
      t.equal(turn.status, 200);
      t.equal(turn.body.conversation.planning_lost, false, 'a survivor conversation keeps its planning');
      t.equal(socketTurns(turn), 1);
    }
    pods[0] = await start(ports[0]!);
  });

  await t.test('5. the peer that hangs counts as not knowing and changes no answer', async (t) => {
    const lookups = async (pod: Pod) => {
      const text = await (await request(`${pod.url}/metrics`)).body.text();
      const count = (result: string) =>
        Number(new RegExp(`agent_test_gateway_peer_lookup_duration_seconds_count\\{result="${result}"\\} (\\d+)`).exec(text)?.[1]);
      return { error: count('error'), unknown: count('unknown') };
    };
    const before = await lookups(pods[1]!);
    const unknown = await call(pods[1]!.url, 'GET', conversationPath('99999999-2222-4333-8444-555555555555'), 'demo-token');
    t.equal(unknown.status, 404, 'a session no pod knows: the single-pod answer');
    t.equal(unknown.body.error, 'not_found');
    const after = await lookups(pods[1]!);
    t.same(
      { error: after.error - before.error, unknown: after.unknown - before.unknown },
      { error: 1, unknown: 2 },
      'the hanging peer gave up on, the two siblings asked',
    );
  });

  await t.test('4. rolling restart under 30 callers x 3 conversations', async (t) => {
    const statuses: string[] = [];
    const wrong: string[] = [];
    let rolling = true;
    const conversation = async (caller: number, k: number) => {
      const token = `load-token-${caller}`;
      const front = k === 0 ? nginx.hashed : nginx.roundRobin;
      let started: Answer;
      do {
        started = await call(front, 'POST', '/v1/agents/coach/conversations', token, {});
        statuses.push(String(started.status));
      } while (started.status === 503 && started.body.error === 'shutting_down');
      if (started.status !== 201) return (wrong.push(`start ${started.status} ${JSON.stringify(started.body)}`), undefined);
      const id = started.body.session_id as string;
      let lines = 1;
      let turns = 0;
      while (rolling || turns < 3) {
        const answer = await call(front, 'POST', turnPath(id), token, { line: 'planning?' });
        statuses.push(answer.status === 503 ? `503 ${answer.body.error}` : String(answer.status));
        if (answer.status !== 200) {
          if (answer.status !== 503) wrong.push(`turn ${answer.status} ${JSON.stringify(answer.body)}`);
          continue;
        }
        turns += 1;
        const expected = answer.body.conversation.planning_lost ? 0 : lines;
        if (socketTurns(answer) !== expected)
          wrong.push(`planning: ${answer.body.turn.text} expected ${expected}, lost ${answer.body.conversation.planning_lost}`);
        lines = expected + 1;
        // Bounded: each conversation about four turns a second at most.
        await new Promise((r) => setTimeout(r, 250));
      }
      return id;
    };
    const load = Promise.all(
      Array.from({ length: LOAD_CALLERS * 3 }, (_, i) =>
        conversation(i % LOAD_CALLERS, Math.floor(i / LOAD_CALLERS)).catch((err: Error) => void wrong.push(`call failed: ${err.message}`)),
      ),
    );
    await new Promise((r) => setTimeout(r, 500));
    // As Kubernetes does it: out of the endpoints (and preStop), SIGTERM, the replacement ready, back in.
    for (let i = 0; i < pods.length; i++) {
      await nginx.route(ports[i]!, false);
      pods[i]!.child.kill('SIGTERM');
      t.equal(await pods[i]!.exited, 0, `pod ${i} drained and exited 0`);
      pods[i] = await start(ports[i]!);
      await nginx.route(ports[i]!, true);
    }
    rolling = false;
    const ids = (await load).filter((id): id is string => id !== undefined);
    if (wrong.length > 0) t.comment(nginx.errors());
    t.same(wrong, [], 'every answer a 2xx or 503 shutting_down, and every conversation kept its planning or says planning_lost');
    t.equal(ids.length, LOAD_CALLERS * 3);
    t.notOk(
      statuses.some((s) => s.startsWith('5') && s !== '503 shutting_down'),
      'no 5xx but 503 shutting_down',
    );
    t.ok(statuses.filter((s) => s === '200').length >= LOAD_CALLERS * 3 * 3);

    const open = await Promise.all(
      pods.map(async (pod) => {
        const text = await (await request(`${pod.url}/metrics`)).body.text();
        return Number(/^agent_test_gateway_open_conversations (\d+)/m.exec(text)?.[1]);
      }),
    );
    await eventually(() => engine.openSockets() === open.reduce((a, b) => a + b, 0), 3000);
    for (const [i, id] of ids.entries()) {
      const closed = await call(nginx.roundRobin, 'DELETE', conversationPath(id), `load-token-${i % LOAD_CALLERS}`);
      t.equal(closed.status, 204);
    }
    t.equal(engine.openSockets() <= 6, true, 'only the earlier scenarios conversations stay open');
  });
});
