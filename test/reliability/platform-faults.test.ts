// Platform faults while many calls wait on the same authorization: the look-up is coalesced
// (one platform request per endpoint, counted at the simulator), one failure is answered to
// every waiter as 503 platform_unavailable, no call is left hanging past the platform timeout,
// nothing reaches the engine, and the open conversations go on once the platform is back.
import t from 'tap';
import type { Test } from 'tap';
import type { PlatformFaults } from '../../src/simulators/platform.js';
import { eventually, startStack } from '../support/stack.js';
import { newFigures, reportFigures, settleStack } from './figures.js';
import { conversationPath, turnPath, type Answer } from '../support/http.js';
import { scaled, sleep } from '../support/time.js';

// Scaled by TEST_TIME_SCALE: the thirty calls of a batch must all reach the gateway while its one
// look-up is in flight (a slow answer's delay, the timeout) or cached (the TTL), on a busy machine too.
const PLATFORM_TIMEOUT_MS = scaled(500);
const AUTH_CACHE_TTL_MS = scaled(400);
/** How late a platform that answers "slowly" answers: well inside the timeout. */
const SLOW_MS = scaled(200);
/** Timing slack past the timeout (scaled too): far above loopback latency on a busy machine. */
const SLACK_MS = scaled(1000);
const WAITERS = 30;

const figures = newFigures();

const s = await startStack(t, {
  env: {
    PLATFORM_TIMEOUT_MS: String(PLATFORM_TIMEOUT_MS),
    AUTH_CACHE_TTL_MS: String(AUTH_CACHE_TTL_MS),
    MAX_CONVERSATIONS_PER_CALLER: '100',
    LOG_LEVEL: 'warn',
  },
});
/** Open conversations whose turns wait on the same authorization as the new ones. */
const open = await Promise.all(Array.from({ length: WAITERS / 2 }, () => s.open()));
let turnNo = 0;

const ENDPOINTS = {
  me: /^\/api\/v1\/users\/me$/,
  revisions: /^\/api\/v1\/agents\/[^/]+\/revisions$/,
  agent: /^\/api\/v1\/agents\/[^/]+$/,
  context: /^\/api\/v1\/project\/[^/]+\/context$/,
  project: /^\/api\/v1\/project\/[^/]+$/,
};
const counts = () => Object.fromEntries(Object.entries(ENDPOINTS).map(([name, re]) => [name, s.platform.count(re)]));

/** WAITERS calls at once, all of one caller and one agent: half turns on open conversations, half starts. */
async function waiters(): Promise<Array<Answer & { ms: number; kind: string }>> {
  // Let the cached authorization expire, so that these calls all wait on one fresh look-up.
  await sleep(AUTH_CACHE_TTL_MS + 50);
  s.platform.reset();
  turnNo += 1;
  const timed = async (kind: string, call: () => Promise<Answer>) => {
    const started = Date.now();
    const answer = await call();
    return { ...answer, ms: Date.now() - started, kind };
  };
  return Promise.all([
    ...open.map(({ sessionId }) => timed('turn', () => s.call('POST', turnPath(sessionId), { body: { line: `turn ${turnNo}` } }))),
    ...open.map(() => timed('start', () => s.call('POST', '/v1/agents/coach/conversations', { body: {} }))),
  ]);
}

async function underFault(
  t: Test,
  fault: PlatformFaults,
  expect: { endpoint: keyof typeof ENDPOINTS; message: RegExp; withinMs: number },
): Promise<void> {
  const sockets = s.engine.record.connections.length;
  const frames = s.engine.record.connections.reduce((n, c) => n + c.frames.length, 0);
  s.platform.faults = fault;
  const answers = await waiters();
  s.platform.faults = {};
  figures.faults += 1;
  for (const answer of answers) {
    t.equal(answer.status, 503, `${answer.kind}: 503`);
    t.equal(answer.body?.error, 'platform_unavailable');
    t.match(answer.body?.message, expect.message);
  }
  t.equal(new Set(answers.map((a) => a.body?.message)).size, 1, 'one failure, answered to all');
  const slowest = Math.max(...answers.map((a) => a.ms));
  t.ok(slowest < expect.withinMs, `every call answered in time (slowest ${slowest} ms < ${expect.withinMs} ms)`);
  const c = counts();
  t.equal(c[expect.endpoint], 1, `${WAITERS} calls cost one ${expect.endpoint} request (${JSON.stringify(c)})`);
  t.ok(
    Object.values(c).every((n) => n <= 1),
    'and no endpoint was asked twice',
  );
  t.equal(s.engine.record.connections.length, sockets, 'no socket was opened');
  t.equal(
    s.engine.record.connections.reduce((n, conn) => n + conn.frames.length, 0),
    frames,
    'no line reached the engine',
  );
  t.equal(s.app.conversationRegistry.stats.busy, 0, 'no turn is left waiting');
  await recovered(t);
}

/** Once the platform answers again, the same calls go through, over the conversations' own sockets. */
async function recovered(t: Test): Promise<void> {
  const sockets = s.engine.record.connections.length;
  const turns = await Promise.all(open.map(({ sessionId }) => s.call('POST', turnPath(sessionId), { body: { line: 'after' } })));
  t.ok(
    turns.every((a) => a.status === 200 && a.body.conversation.reconnected === false),
    'the open conversations go on, not reconnected',
  );
  t.equal(s.engine.record.connections.length, sockets, 'over their own sockets');
}

t.test('platform times out on the identity look-up', (t) =>
  underFault(
    t,
    { hang: true, match: ENDPOINTS.me },
    {
      endpoint: 'me',
      message: new RegExp(`did not answer /api/v1/users/me within ${PLATFORM_TIMEOUT_MS} ms`),
      withinMs: PLATFORM_TIMEOUT_MS + SLACK_MS,
    },
  ),
);

t.test('platform times out on the last hop of the authorization', (t) =>
  underFault(
    t,
    { hang: true, match: ENDPOINTS.project },
    {
      endpoint: 'project',
      message: new RegExp(`did not answer /api/v1/project/\\{id\\} within ${PLATFORM_TIMEOUT_MS} ms`),
      withinMs: PLATFORM_TIMEOUT_MS + SLACK_MS,
    },
  ),
);

for (const status of [500, 502, 503]) {
  t.test(`platform answers ${status}, slowly`, (t) =>
    underFault(
      t,
      { status, delayMs: SLOW_MS, match: ENDPOINTS.revisions },
      {
        endpoint: 'revisions',
        message: new RegExp(`answered /api/v1/agents/\\{ref\\}/revisions with HTTP ${status}`),
        withinMs: PLATFORM_TIMEOUT_MS + SLACK_MS,
      },
    ),
  );
}

t.test('platform answers malformed JSON, slowly', (t) =>
  underFault(
    t,
    { malformed: true, delayMs: SLOW_MS, match: ENDPOINTS.agent },
    {
      endpoint: 'agent',
      message: /answered \/api\/v1\/agents\/\{id\} with a body that is not JSON/,
      withinMs: PLATFORM_TIMEOUT_MS + SLACK_MS,
    },
  ),
);

t.test('platform slower than its timeout on one hop', (t) =>
  underFault(
    t,
    { delayMs: PLATFORM_TIMEOUT_MS * 3, match: ENDPOINTS.context },
    {
      endpoint: 'context',
      message: new RegExp(`did not answer /api/v1/project/\\{id\\}/context within ${PLATFORM_TIMEOUT_MS} ms`),
      withinMs: PLATFORM_TIMEOUT_MS + SLACK_MS,
    },
  ),
);

t.test('platform slow but within its timeout on every hop: all answered, five requests in all', async (t) => {
  const sockets = s.engine.record.connections.length;
  const hopMs = scaled(150);
  s.platform.faults = { delayMs: hopMs };
  const answers = await waiters();
  s.platform.faults = {};
  figures.faults += 1;
  t.same(
    answers.map((a) => a.status),
    [...Array(WAITERS / 2).fill(200), ...Array(WAITERS / 2).fill(201)],
    'every turn and start answered',
  );
  t.same(counts(), { me: 1, revisions: 1, agent: 1, context: 1, project: 1 }, `${WAITERS} calls, one request per endpoint`);
  const slowest = Math.max(...answers.map((a) => a.ms));
  t.ok(slowest < 4 * hopMs + scaled(800), `no call waited longer than the chain of look-ups (slowest ${slowest} ms)`);
  t.equal(s.engine.record.connections.length, sockets + WAITERS / 2, 'one socket per start, none per turn');
  await Promise.all(answers.filter((a) => a.kind === 'start').map((a) => s.call('DELETE', conversationPath(a.body.session_id))));
});

t.test('a platform fault for one caller is not answered to another', async (t) => {
  await sleep(AUTH_CACHE_TTL_MS + 50);
  s.platform.reset();
  // bob's identity look-up hangs; the fault is lifted before another caller asks for its own.
  s.platform.faults = { hang: true, match: ENDPOINTS.me };
  const bobCall = s
    .call('POST', '/v1/agents/coach/conversations', { token: 'bob-token', body: {} })
    .then((a) => ({ ...a, at: Date.now() }));
  await eventually(() => s.platform.count(ENDPOINTS.me) === 1);
  s.platform.faults = {};
  const other = await s.call('POST', '/v1/agents/coach/conversations', { token: 'tenant-token', body: {} });
  const answeredAt = Date.now();
  const bob = await bobCall;
  figures.faults += 1;
  t.equal(bob.status, 503, "bob's look-up timed out");
  t.equal(other.status, 201, 'another caller, asking while it hung, was answered');
  t.ok(answeredAt <= bob.at, 'before the hung look-up gave up');
  t.equal(s.platform.count(ENDPOINTS.me), 2, 'two callers, two identity look-ups');
});

t.test('platform unreachable: 503 at once, for every waiter', async (t) => {
  await s.platform.close();
  const answers = await waiters();
  figures.faults += 1;
  for (const answer of answers) {
    t.equal(answer.status, 503);
    t.equal(answer.body.error, 'platform_unavailable');
    t.match(answer.body.message, /could not be reached for \/api\/v1\/users\/me/);
  }
  const slowest = Math.max(...answers.map((a) => a.ms));
  t.ok(slowest < PLATFORM_TIMEOUT_MS + SLACK_MS, `every call answered (slowest ${slowest} ms), refused rather than timed out`);
  t.equal(s.app.conversationRegistry.stats.busy, 0);
  t.equal(s.app.conversationRegistry.stats.open, open.length + 1, 'the open conversations are still held');
});

t.test('figures', async (t) => {
  const { leaked } = await settleStack(s, figures);
  t.equal(leaked, 0, 'no socket leaked');
  reportFigures(t, import.meta.url, figures);
});
