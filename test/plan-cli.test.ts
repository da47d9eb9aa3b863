import { once } from 'node:events';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { main } from '../src/cli/plan.js';
import { createGate } from '../src/stats/index.js';
import { planComparison } from '../src/stats/plan.js';
import { comparisonFixture, runFixture } from './support/report-fixtures.js';
// tap's time limit for this file, scaled for a busy machine (TEST_TIME_SCALE).
import './support/time.js';

// Plans here are exact computations (a gate's design per budget, up to 200): CPU-bound, seconds
// on a machine shared with other work. Every plan has two conversations, so that the designs
// one test computes are the next one's (src/stats caches them): a plan of other K would design
// them all again.

/** `agent-test-gateway plan`, in-process: the budget a drop needs, its sessions and its time, before any run. */
const run = async (args: string[]) => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    env: {},
    stdout: (s) => void out.push(s),
    stderr: (s) => void err.push(s),
    progress: false,
    progressEveryMs: 60_000,
    onInterrupt: () => () => undefined,
  });
  return { code, stdout: out.join(''), stderr: err.join('') };
};

/** A wall time as the line says it. */
const duration = (seconds: number) =>
  seconds < 90 ? `${Math.max(1, Math.round(seconds))} s` : `${Math.max(1, Math.round(seconds / 60))} min`;

t.test('the smallest max_attempts that catches the drop 80 % of the time, and what it spends', async (t) => {
  const request = { baselineRates: [0.9, 0.9], drop: 0.5, concurrency: 4, sessionSeconds: 10 };
  const plan = await planComparison(request);
  const max = plan.max_attempts!;
  const power = (budget: number) => createGate({ conversations: 2, mode: { kind: 'sequential', max: budget } }).power(0.9, 0.4);
  t.ok(power(max) >= 0.8 && power(max - 1) < 0.8, `max_attempts ${max}: power ${power(max)}, one less ${power(max - 1)}`);
  t.equal(plan.power, power(max));
  t.equal(plan.sessions.at_most, 2 * 2 * max, 'two sessions a round, every conversation at its budget');
  t.ok(plan.sessions.unchanged < plan.sessions.at_most && plan.sessions.dropped < plan.sessions.at_most, JSON.stringify(plan.sessions));
  // 2 conversations at concurrency 4: each conversation's rounds one after another, two sessions of 10 s each.
  t.equal(plan.seconds.at_most, 2 * max * 10);

  const { code, stdout } = await run([
    '--conversations',
    '2',
    '--baseline-rate=0.9',
    '--drop',
    '0.5',
    '--concurrency',
    '4',
    '--session-seconds',
    '10',
  ]);
  t.equal(code, 0);
  t.equal(
    stdout,
    `plan: max_attempts: ${max} catches 0.9 → 0.4 80 % of the time among 2 conversations · ` +
      `sessions: about ${Math.round(plan.sessions.unchanged)} if nothing changed, at most ${plan.sessions.at_most} · ` +
      `wall time at concurrency 4 and 10 s a session: about ${duration(plan.seconds.unchanged)}, ` +
      `at most ${duration(plan.seconds.at_most)}\n`,
  );
  const assumed = await run(['--conversations', '2', '--baseline-rate=0.9', '--drop', '0.5', '--concurrency', '4']);
  t.match(
    assumed.stdout,
    / · wall time at concurrency 4 and 30 s a session \(assumed\): about /,
    'no session length given: the line says it assumed one',
  );
});

t.test('rates that differ: the budget is the one the weakest conversation needs', async (t) => {
  const mixed = await planComparison({ baselineRates: [0.95, 0.6], drop: 0.4, concurrency: 10, sessionSeconds: 30 });
  const at = (rate: number) => (budget: number) =>
    createGate({ conversations: 2, mode: { kind: 'sequential', max: budget } }).power(rate, Math.max(0, rate - 0.4));
  const max = mixed.max_attempts!;
  t.ok(at(0.6)(max) >= 0.8 && at(0.95)(max) >= 0.8, 'both rates caught at the budget');
  t.ok(at(0.6)(max - 1) < 0.8 || at(0.95)(max - 1) < 0.8, 'one less misses one of them');
  t.equal(mixed.power, Math.min(at(0.6)(max), at(0.95)(max)), 'the weakest conversation’s power');
  t.ok(mixed.sessions.unchanged > 0 && mixed.sessions.unchanged < 2 * 2 * max);
});

t.test('the rates from an earlier report: a comparison’s baseline side, a run’s own', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plan-'));
  const comparison = await comparisonFixture(
    [
      { name: 'order', baseline: [true, true, true, true, false], candidate: [true] },
      { name: 'refund', baseline: [true], candidate: [true, false] },
      { name: 'broken', baseline: [null], candidate: [true] },
    ],
    { mode: { kind: 'repeat', attempts: 10 } },
  );
  const comparisonFile = join(dir, 'comparison.json');
  writeFileSync(comparisonFile, JSON.stringify([comparison])); // as compare --json writes it
  const fromComparison = await run(['--from-report', comparisonFile, '--drop', '0.5']);
  t.equal(fromComparison.code, 0, fromComparison.stderr);
  t.match(fromComparison.stdout, /catches a drop of 0\.5 from each baseline rate \(0\.8–1\) 80 % of the time among 2 conversations/);
  t.equal(fromComparison.stdout, (await run(['--from-report', comparisonFile, '--drop', '0.5'])).stdout, 'the same plan again');
  const direct = await planComparison({ baselineRates: [0.8, 1], drop: 0.5, concurrency: 10, sessionSeconds: 30 });
  t.match(fromComparison.stdout, `max_attempts: ${direct.max_attempts} `, 'the plan of the rates read, the broken conversation left out');

  t.match(fromComparison.stdout, / and 0\.1 s a session on average \(measured in the report\): /, 'the sessions the report measured');

  // A run's own rates, and each conversation's session length as its attempts took it.
  const runReport = runFixture([
    { name: 'a', outcomes: [true, true, false, true] },
    { name: 'b', outcomes: [true, true] },
  ]);
  const lengths = [2000, 6000];
  runReport.conversations.forEach((c, i) => c.attempts.forEach((a) => (a.duration_ms = lengths[i]!)));
  const runFile = join(dir, 'run.json');
  writeFileSync(runFile, JSON.stringify(runReport));
  const fromRun = await run(['--from-report', runFile, '--drop', '0.5']);
  t.match(fromRun.stdout, /a drop of 0\.5 from each baseline rate \(0\.75–1\) 80 % of the time among 2 conversations /);
  const timed = await planComparison({
    baselineRates: [0.75, 1],
    drop: 0.5,
    concurrency: 10,
    sessionSeconds: (4 * 2 + 2 * 6) / 6,
    sessionSecondsEach: [2, 6],
  });
  t.match(
    fromRun.stdout,
    `wall time at concurrency 10 and 3.3 s a session on average (measured in the report): ` +
      `about ${duration(timed.seconds.unchanged)}, at most ${duration(timed.seconds.at_most)}\n`,
    'each conversation’s rounds at its own session length; the line says their mean',
  );
  t.equal(timed.seconds.at_most, 2 * timed.max_attempts! * 6, 'the slowest conversation’s rounds, at its budget');
  t.match(
    (await run(['--from-report', runFile, '--drop', '0.5', '--session-seconds', '30'])).stdout,
    / and 30 s a session: /,
    '--session-seconds over the report’s',
  );

  writeFileSync(join(dir, 'two.json'), JSON.stringify([comparison, comparison]));
  t.match((await run(['--from-report', join(dir, 'two.json'), '--drop', '0.5'])).stderr, /holds 2 reports; give a file with one/);
  writeFileSync(join(dir, 'other.json'), JSON.stringify({ hello: 1 }));
  const other = await run(['--from-report', join(dir, 'other.json'), '--drop', '0.5']);
  t.equal(other.code, 2);
  t.match(other.stderr, /^agent-test-gateway plan: --from-report must be a run or comparison report/);
});

t.test('the rates of a monitor from Prometheus’s HTTP API', async (t) => {
  // A small real HTTP server answering /api/v1/query as Prometheus does (Debian's prometheus
  // would need a week of the chart's hourly increases for the 7-day series).
  const queries: string[] = [];
  let result = [
    { metric: { conversation: 'refund' }, value: [1_700_000_000, '0.6'] },
    { metric: { conversation: 'order' }, value: [1_700_000_000, '0.95'] },
    { metric: { conversation: 'idle' }, value: [1_700_000_000, 'NaN'] },
  ];
  const server = createServer((request, response) => {
    const url = new URL(request.url!, 'http://x');
    queries.push(`${url.pathname} ${url.searchParams.get('query')}`);
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => void server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const answer = await run(['--from-prometheus', url, '--monitor', 'nightly', '--drop', '0.4']);
  t.equal(answer.code, 0, answer.stderr);
  t.same(queries, ['/api/v1/query avg by (conversation) (agent_test_gateway:monitor_conversation_pass_rate:7d{monitor="nightly"})']);
  const direct = await planComparison({ baselineRates: [0.95, 0.6], drop: 0.4, concurrency: 10, sessionSeconds: 30 });
  t.match(answer.stdout, `max_attempts: ${direct.max_attempts} catches a drop of 0.4 from each baseline rate (0.6–0.95)`);
  t.match(answer.stdout, 'among 2 conversations', 'a conversation without attempts in 7 days (NaN) is left out');
  t.match(answer.stdout, '30 s a session (assumed)', 'the monitor’s series hold no session times: the default, said as assumed');

  result = [];
  const none = await run(['--from-prometheus', url, '--monitor', 'nightly', '--drop', '0.4']);
  t.equal(none.code, 2);
  t.match(none.stderr, /has no agent_test_gateway:monitor_conversation_pass_rate:7d for monitor nightly/);
  t.match((await run(['--from-prometheus', url, '--drop', '0.4'])).stderr, /--from-prometheus and --monitor go together/);
  t.match((await run(['--from-prometheus', url, '--monitor', 'a b', '--drop', '0.4'])).stderr, /--monitor a b: 1 to 64 letters/);
});

t.test('a drop no budget catches: exit 1; usage mistakes: exit 2, naming the option', async (t) => {
  const none = await run(['--conversations', '2', '--baseline-rate', '0.9', '--drop', '0.02']);
  t.equal(none.code, 1);
  t.equal(none.stdout, 'plan: no max_attempts up to 200 catches 0.9 → 0.88 80 % of the time among 2 conversations\n');
  const missing = await run(['--conversations', '3', '--baseline-rate', '0.9']);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /^agent-test-gateway plan: name --drop\n/);
  const wrong = await run(['--conversations', '3', '--baseline-rate', '0.9', '--drop', '0.95']);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /^agent-test-gateway plan: --drop must be at most the highest baseline rate \(0\.9\)/);
  t.match((await run(['--conversations', '3', '--baseline-rate', '1.5', '--drop', '0.1'])).stderr, /--baseline-rate must be at most 1\n/);
  t.match((await run(['--baseline-rate', '0.9', '--drop', '0.1'])).stderr, /--conversations is required with baseline_rate/);
  t.match((await run(['--drop', '0.1'])).stderr, /give exactly one of baseline_rate/);
  t.match((await run(['--drop', 'much'])).stderr, /--drop needs a number/);
  t.match((await run(['--tries', '3'])).stderr, /unknown argument --tries/);
  t.equal((await run(['--help'])).code, 0);
});

t.test('a plan lets the event loop turn while it designs and computes', async (t) => {
  // Each design's boundary search and each power is a step of a few to tens of milliseconds at
  // budgets up to 200: a plan asked of the service must not hold the loop for all of them.
  let turns = 0;
  let planning = true;
  const turn = () => {
    if (!planning) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  const plan = await planComparison({ baselineRates: [0.9, 0.9], drop: 0.3, concurrency: 10, sessionSeconds: 30 });
  planning = false;
  t.ok(plan.max_attempts !== null);
  // Deterministic: about eight budgets, each a boundary search (its listing, its sort and a
  // bisection over thousands of values: more than ten steps) and a power, then the sessions' DPs.
  t.ok(turns >= 8 * 10, `the loop turned ${turns} times during the plan`);
});
