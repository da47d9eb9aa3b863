// Load: 200 conversations at once, each with several turns, one socket each; and the per-caller
// and per-pod limits under racing requests, sampled continuously at the gateway's registry and
// at the engine's own sockets: never above the limit.
import t from 'tap';
import { startStack, type Stack } from '../support/stack.js';
import { newFigures, reportFigures, settleStack } from './figures.js';
import { conversationPath, turnPath } from '../support/http.js';
import { scaledEnv } from '../support/time.js';

const figures = newFigures();
const TOKENS = ['demo-token', 'bob-token', 'tenant-token'] as const;
/**
 * Hundreds of calls at once in this one process queue behind each other: a connect, a platform
 * look-up or a turn that should succeed waits its turn on a busy machine. Generous budgets
 * (scaled by TEST_TIME_SCALE), which no call here waits out, unless a test cuts turns on purpose.
 */
const GENEROUS = { ENGINE_CONNECT_TIMEOUT_MS: scaledEnv(15_000), PLATFORM_TIMEOUT_MS: scaledEnv(15_000) };

/** Open engine sockets per simulated-user prefix (one prefix per caller), as the engine sees them. */
function engineSocketsByCaller(s: Stack): Map<string, number> {
  const by = new Map<string, number>();
  for (const c of s.engine.record.connections) {
    if (c.status !== 101 || c.closedAt !== undefined) continue;
    const caller = /^mcp:([a-z]+)-/.exec(c.query.deviceId ?? '')?.[1] ?? '?';
    by.set(caller, (by.get(caller) ?? 0) + 1);
  }
  return by;
}

/** Samples on every turn of the event loop until stopped: the peaks seen at the registry and the engine. */
function sampler(s: Stack) {
  const peak = { registry: 0, engine: 0, busy: 0, callerAtEngine: 0, samples: 0 };
  let running = true;
  const tick = () => {
    peak.samples += 1;
    peak.registry = Math.max(peak.registry, s.app.conversationRegistry.stats.open);
    peak.busy = Math.max(peak.busy, s.app.conversationRegistry.stats.busy);
    peak.engine = Math.max(peak.engine, s.engine.openSockets());
    for (const n of engineSocketsByCaller(s).values()) peak.callerAtEngine = Math.max(peak.callerAtEngine, n);
    if (running) setImmediate(tick);
  };
  tick();
  return {
    peak,
    stop: () => {
      running = false;
    },
  };
}

t.test('200 concurrent conversations, five turns each: all answered, one socket each', async (t) => {
  const CONVERSATIONS = 200;
  const TURNS = 5;
  const s = await startStack(t, {
    env: {
      ...GENEROUS,
      TURN_BUDGET_MS: scaledEnv(15_000),
      MAX_CONVERSATIONS_PER_CALLER: String(CONVERSATIONS),
      MAX_CONVERSATIONS_PER_POD: String(CONVERSATIONS),
      LOG_LEVEL: 'warn',
    },
  });
  let peakEngine = 0;
  let peakRegistry = 0;
  const sample = setInterval(() => {
    peakEngine = Math.max(peakEngine, s.engine.openSockets());
    peakRegistry = Math.max(peakRegistry, s.app.conversationRegistry.stats.open);
  }, 2);
  const started = Date.now();
  const results = await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, i) => {
      const token = TOKENS[i % TOKENS.length]!;
      const body = { device_ref: `${token.split('-')[0]}-${i}` };
      const opened = await s.call('POST', '/v1/agents/coach/conversations', { token, body });
      const statuses = [opened.status];
      const mixups: string[] = [];
      const reconnects: boolean[] = [];
      for (let k = 1; k <= TURNS && opened.status === 201; k++) {
        const line = `conversation ${i} turn ${k}${k % 2 === 0 ? ' order' : ''}`;
        const turn = await s.call('POST', turnPath(opened.body.session_id), { token, body: { line } });
        statuses.push(turn.status);
        reconnects.push(turn.body?.conversation?.reconnected);
        if (!String(turn.body?.turn?.text).includes(`You said: ${line}`)) mixups.push(line);
        if (turn.body?.conversation?.turns !== k + 1) mixups.push(`turn count at ${line}`);
      }
      return { sessionId: opened.body?.session_id as string, statuses, mixups, reconnects };
    }),
  );
  const took = Date.now() - started;
  clearInterval(sample);
  const calls = results.flatMap((r) => r.statuses);
  t.equal(calls.length, CONVERSATIONS * (TURNS + 1), 'every call was made');
  t.ok(
    calls.every((status, i) => status === (i % (TURNS + 1) === 0 ? 201 : 200)),
    'every start 201, every turn 200',
  );
  t.same(
    results.flatMap((r) => r.mixups),
    [],
    "every turn got its own answer, never another conversation's",
  );
  t.ok(
    results.every((r) => r.reconnects.every((x) => x === false)),
    'no turn reconnected',
  );
  const sessions = new Set(results.map((r) => r.sessionId));
  t.equal(sessions.size, CONVERSATIONS, 'distinct sessions');
  const sockets = s.engine.record.connections;
  t.equal(sockets.length, CONVERSATIONS, 'one socket per conversation, opened once');
  t.ok(
    sockets.every((c) => c.status === 101 && c.frames.length === TURNS + 1 && c.closedAt === undefined),
    'every socket carried all its turns and is open',
  );
  t.equal(s.app.conversationRegistry.stats.open, CONVERSATIONS);
  t.equal(s.engine.openSockets(), CONVERSATIONS);
  t.ok(
    peakEngine <= CONVERSATIONS && peakRegistry <= CONVERSATIONS,
    `never above the pod limit (engine ${peakEngine}, registry ${peakRegistry})`,
  );
  t.equal(s.app.conversationRegistry.stats.busy, 0);
  const metrics = (await s.call('GET', '/metrics')).text;
  t.match(metrics, new RegExp(`agent_test_gateway_open_conversations ${CONVERSATIONS}\\b`));
  t.match(metrics, new RegExp(`agent_test_gateway_turn_duration_seconds_count\\{outcome="exit"\\} ${CONVERSATIONS * (TURNS + 1)}\\b`));
  t.comment(`200 conversations × ${TURNS + 1} calls in ${took} ms`);

  const deletes = await Promise.all(
    results.map((r, i) => s.call('DELETE', conversationPath(r.sessionId), { token: TOKENS[i % TOKENS.length]! })),
  );
  t.ok(
    deletes.every((d) => d.status === 204),
    'every conversation closed on request',
  );
  const { leaked } = await settleStack(s, figures);
  t.equal(leaked, 0, 'no socket leaked');
  t.ok(
    s.engine.record.connections.every((c) => c.closeCode === 1000),
    'every socket closed plainly (1000)',
  );
});

t.test('racing requests never take a caller or the pod above its limit', async (t) => {
  const PER_CALLER = 3;
  const PER_POD = 7;
  const s = await startStack(t, {
    env: {
      ...GENEROUS,
      MAX_CONVERSATIONS_PER_CALLER: String(PER_CALLER),
      MAX_CONVERSATIONS_PER_POD: String(PER_POD),
      // Short, to cut the hanging turns (sim:hang) and free their places; a legitimate turn it cuts
      // on a busy machine changes no status here (a cut turn still answers 200).
      TURN_BUDGET_MS: '300',
      LOG_LEVEL: 'warn',
    },
  });
  const { peak, stop } = sampler(s);
  const statuses = new Map<number, number>();
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const lines = ['sim:delay:5', 'hello', 'sim:delay:25', 'sim:drop', 'bye', 'sim:hang', 'sim:error', 'sim:delay:15'];
  await Promise.all(
    Array.from({ length: 360 }, async (_, i) => {
      const token = TOKENS[i % TOKENS.length]!;
      const device = `${token.split('-')[0]}-${i}`;
      const opened = await s.call('POST', '/v1/agents/coach/conversations', {
        token,
        body: { device_ref: device, line: `sim:delay:${(i % 5) * 5}` },
      });
      count(opened.status);
      if (opened.status !== 201) return;
      const line = lines[i % lines.length]!;
      const turn = await s.call('POST', turnPath(opened.body.session_id), { token, body: { line } });
      count(turn.status);
      if (i % 3 === 0) count((await s.call('DELETE', conversationPath(opened.body.session_id), { token })).status);
    }),
  );
  stop();
  const seen = Object.fromEntries(statuses);
  t.comment(`statuses ${JSON.stringify(seen)}; ${peak.samples} samples`);
  t.ok(
    [...statuses.keys()].every((status) => [200, 201, 204, 429, 503].includes(status)),
    `only 200/201/204/429/503 (${JSON.stringify(seen)})`,
  );
  t.ok((statuses.get(201) ?? 0) > 0 && (statuses.get(429) ?? 0) + (statuses.get(503) ?? 0) > 0, 'some were admitted, some refused');
  t.ok(peak.registry <= PER_POD, `registry: never above ${PER_POD} on the pod (peak ${peak.registry})`);
  t.ok(peak.engine <= PER_POD, `engine: never above ${PER_POD} open sockets (peak ${peak.engine})`);
  t.ok(peak.callerAtEngine <= PER_CALLER, `engine: never above ${PER_CALLER} sockets of one caller (peak ${peak.callerAtEngine})`);
  const evictions = /agent_test_gateway_evictions_total\{limit="caller"\} (\d+)/.exec((await s.call('GET', '/metrics')).text)?.[1];
  t.ok(Number(evictions) > 0, `the limits were reached by evicting idle conversations (${evictions} caller evictions)`);
  const { leaked } = await settleStack(s, figures);
  t.equal(leaked, 0, 'no socket leaked');
});

t.test('figures', async (t) => {
  reportFigures(t, import.meta.url, figures);
});
