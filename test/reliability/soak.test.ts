// Soak: thousands of conversations opened and closed (on request, by the agent, by a failed
// turn, by the idle timer), after which nothing is held: no open socket at the gateway or the
// engine, no busy turn, the open-conversations gauge at 0, remembered conversations at their
// bound — and the objects of closed conversations and their sockets really collected.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import type { Conversation } from '../../src/conversations/conversation.js';
import type { EngineSocket } from '../../src/engine/socket.js';
import { eventually, startStack, type Stack } from '../support/stack.js';
import { newFigures, reportFigures, settleStack } from './figures.js';
import { conversationPath } from '../support/http.js';
import { scaledEnv } from '../support/time.js';

const WARMUP = 500;
const SOAK = 2500;
const WORKERS = 25;
const REMEMBERED_MAX = 500;
// Short, so that the idle timer closes a tenth of the conversations quickly; one it closes early on
// a busy machine (before that conversation's turn or DELETE) is reconnected or closed again, which
// changes no status or count here.
const IDLE_CLOSE_MS = 100;
const HEAP_BOUND_MB = 8;

const figures = newFigures();
const TOKENS = ['demo-token', 'bob-token', 'tenant-token'] as const;

/** A real gc: tap runs this file in a process of its own, without --expose-gc, so expose it here. */
function exposeGc(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}
const gc = exposeGc();

async function collect(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc?.();
  }
  return process.memoryUsage().heapUsed;
}

interface Sampled {
  conversations: Array<WeakRef<Conversation>>;
  sockets: Array<WeakRef<EngineSocket>>;
}

/** `count` conversations, `WORKERS` at a time, each closed one of four ways; every tenth one's objects are watched. */
async function openAndClose(s: Stack, count: number, sampled: Sampled): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const tally = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  let next = 0;
  const worker = async (w: number) => {
    for (let i = next++; i < count; i = next++) {
      const token = TOKENS[i % TOKENS.length]!;
      const opened = await s.call('POST', '/v1/agents/coach/conversations', { token, body: { device_ref: `soak-${w}` } });
      tally(opened.status);
      if (opened.status !== 201) continue;
      const sessionId = opened.body.session_id as string;
      if (i % 10 === 0) {
        const conv = s.app.conversationRegistry.all().find((c) => c.sessionId === sessionId);
        if (conv) sampled.conversations.push(new WeakRef(conv));
        if (conv?.socket) sampled.sockets.push(new WeakRef(conv.socket));
      }
      const path = conversationPath(sessionId);
      switch (i % 10) {
        case 7: // the agent ends it
        case 8: // the turn fails
          tally((await s.call('POST', `${path}/turns`, { token, body: { line: i % 10 === 7 ? 'goodbye' : 'sim:error' } })).status);
          break;
        case 9: // the idle timer closes it
          await eventually(() => closed(s, token, sessionId), IDLE_CLOSE_MS * 30);
          break;
        default:
          tally((await s.call('POST', `${path}/turns`, { token, body: { line: `hello ${i}` } })).status);
          tally((await s.call('DELETE', path, { token })).status);
      }
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  return statuses;
}

const CALLERS: Record<string, string> = { 'demo-token': 'u-demo', 'bob-token': 'u-bob', 'tenant-token': 'u-tenant' };

function closed(s: Stack, token: string, sessionId: string): boolean {
  try {
    return s.app.conversationRegistry.get({ id: CALLERS[token]!, token }, 'coach', sessionId).state === 'closed';
  } catch {
    return true; // no longer remembered: closed long ago
  }
}

t.test(`soak: ${SOAK} conversations opened and closed, nothing left behind`, async (t) => {
  const s = await startStack(t, {
    env: {
      REMEMBERED_CONVERSATIONS_MAX: String(REMEMBERED_MAX),
      MAX_CONVERSATIONS_PER_CALLER: String(WORKERS),
      IDLE_CLOSE_MS: String(IDLE_CLOSE_MS),
      // 25 workers' calls queue in this one process: generous budgets (scaled by TEST_TIME_SCALE)
      // that no connect, look-up or turn here waits out, however busy the machine.
      ENGINE_CONNECT_TIMEOUT_MS: scaledEnv(15_000),
      PLATFORM_TIMEOUT_MS: scaledEnv(15_000),
      TURN_BUDGET_MS: scaledEnv(15_000),
      LOG_LEVEL: 'warn',
    },
  });
  let peakRemembered = 0;
  let peakOpen = 0;
  const sample = setInterval(() => {
    peakRemembered = Math.max(peakRemembered, s.app.conversationRegistry.stats.remembered);
    peakOpen = Math.max(peakOpen, s.engine.openSockets());
  }, 5);

  // Warm up: JIT, pools, and the remembered conversations filled to their bound.
  const warm: Sampled = { conversations: [], sockets: [] };
  await openAndClose(s, WARMUP, warm);
  await eventually(() => s.engine.openSockets() === 0 && s.app.conversationRegistry.stats.open === 0, 5000);
  s.engine.reset();
  s.logs.length = 0;
  const baseline = await collect();

  const sampled: Sampled = { conversations: [], sockets: [] };
  const started = Date.now();
  const statuses = await openAndClose(s, SOAK, sampled);
  const took = Date.now() - started;
  clearInterval(sample);
  const seen = Object.fromEntries(statuses);
  t.comment(`${SOAK} conversations in ${took} ms: ${JSON.stringify(seen)}`);
  t.ok(
    [...statuses.keys()].every((status) => [200, 201, 204].includes(status)),
    `only 200/201/204 (${JSON.stringify(seen)})`,
  );
  t.equal(statuses.get(201), SOAK, 'every conversation opened');

  await eventually(() => s.engine.openSockets() === 0 && s.app.conversationRegistry.stats.open === 0, 5000);
  const stats = s.app.conversationRegistry.stats;
  t.equal(stats.open, 0, 'the registry holds no open conversation');
  t.equal(stats.busy, 0, 'no turn is running');
  t.equal(s.engine.openSockets(), 0, 'the engine holds no socket');
  t.equal(stats.remembered, REMEMBERED_MAX, `remembered conversations at their bound of ${REMEMBERED_MAX}`);
  t.ok(peakRemembered <= REMEMBERED_MAX, `and never above it (peak ${peakRemembered})`);
  t.ok(peakOpen <= 2 * WORKERS, `no sockets pile up: at most one per worker, and one closing (peak ${peakOpen}, ${WORKERS} workers)`);
  const metrics = (await s.call('GET', '/metrics')).text;
  t.match(metrics, /\nagent_test_gateway_open_conversations 0\n/, 'the open-conversations gauge is 0');
  t.match(metrics, /\nagent_test_gateway_busy_conversations 0\n/, 'the busy gauge is 0');
  t.match(metrics, new RegExp(`\\nagent_test_gateway_remembered_conversations ${REMEMBERED_MAX}\\n`));
  const closes: Record<string, number> = Object.fromEntries(
    [...metrics.matchAll(/agent_test_gateway_conversation_closes_total\{cause="([a-z_]+)"\} (\d+)/g)].map((m) => [m[1], Number(m[2])]),
  );
  t.comment(`closes by cause: ${JSON.stringify(closes)}`);
  const connects = [...metrics.matchAll(/agent_test_gateway_engine_connects_total\{result="ok",kind="[a-z]+"\} (\d+)/g)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  const closed = Object.values(closes).reduce((n, c) => n + c, 0);
  t.ok(connects >= WARMUP + SOAK, `${connects} sockets opened for ${WARMUP + SOAK} conversations (a turn after an idle close reconnects)`);
  t.equal(closed, connects, 'every socket opened was closed exactly once');
  t.equal(closes.caller! + closes.agent_ended! + closes.turn_failed! + closes.idle!, closed, 'by one of the four causes');
  t.ok(closes.idle! > 0 && closes.agent_ended! > 0 && closes.turn_failed! > 0, 'each way of closing happened');
  t.ok(
    s.engine.record.connections.every((c) => c.closedBy === 'engine' || c.closeCode === 1000),
    'the gateway closed every socket plainly (1000)',
  );
  t.ok(
    s.engine.record.connections.every((c) => !c.frames.some((f) => f.startsWith('#') && f !== '#intro')),
    'never #exit',
  );

  s.engine.reset();
  s.logs.length = 0;
  const after = await collect();
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const perConversation = Math.round((after - baseline) / SOAK);
  t.comment(
    `heap (gc ${gc ? 'forced' : 'not available'}): baseline ${mb(baseline)} MB, after ${mb(after)} MB, ` +
      `${perConversation} bytes per conversation`,
  );
  t.ok(
    after - baseline < HEAP_BOUND_MB * 1024 * 1024,
    `heap back near its baseline (+${mb(after - baseline)} MB, bound ${HEAP_BOUND_MB} MB; the simulator keeps every session)`,
  );
  if (gc) {
    const remembered = new Set(s.app.conversationRegistry.all());
    const alive = sampled.conversations.map((w) => w.deref()).filter((c): c is Conversation => c !== undefined);
    t.same(
      alive.filter((c) => !remembered.has(c)).length,
      0,
      'every watched conversation no longer remembered was collected ' +
        `(${sampled.conversations.length} watched, ${alive.length} still remembered)`,
    );
    t.equal(
      sampled.sockets.filter((w) => w.deref() !== undefined).length,
      0,
      `every watched engine socket was collected (${sampled.sockets.length} watched)`,
    );
  } else {
    t.comment('gc is not available: the collection of watched objects is not checked, only the heap bound');
  }

  const { leaked } = await settleStack(s, figures);
  figures.conversations += WARMUP + SOAK; // the engine record was reset on the way
  t.equal(leaked, 0, 'no socket leaked');
});

t.test('figures', async (t) => {
  t.pass('reported');
  reportFigures(t, import.meta.url, figures);
});
