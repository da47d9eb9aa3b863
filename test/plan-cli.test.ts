import t from 'tap';
import { main } from '../src/cli/plan.js';
import { createGate } from '../src/stats/index.js';
import { planComparison } from '../src/stats/plan.js';

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

t.test('the smallest max_attempts that catches the drop 80 % of the time, and what it spends', async (t) => {
  const request = { conversations: 3, baselineRate: 0.9, drop: 0.5, concurrency: 6, sessionSeconds: 10 };
  const plan = planComparison(request);
  const max = plan.max_attempts!;
  const power = (budget: number) => createGate({ conversations: 3, mode: { kind: 'sequential', max: budget } }).power(0.9, 0.4);
  t.ok(power(max) >= 0.8 && power(max - 1) < 0.8, `max_attempts ${max}: power ${power(max)}, one less ${power(max - 1)}`);
  t.equal(plan.power, power(max));
  t.equal(plan.sessions.at_most, 2 * 3 * max, 'two sessions a round, every conversation at its budget');
  t.ok(plan.sessions.unchanged < plan.sessions.at_most && plan.sessions.dropped < plan.sessions.at_most, JSON.stringify(plan.sessions));
  // 3 conversations at concurrency 6: each conversation's rounds one after another, two sessions of 10 s each.
  t.equal(plan.seconds.at_most, 2 * max * 10);

  const { code, stdout } = await run([
    '--conversations',
    '3',
    '--baseline-rate=0.9',
    '--drop',
    '0.5',
    '--concurrency',
    '6',
    '--session-seconds',
    '10',
  ]);
  t.equal(code, 0);
  t.equal(
    stdout,
    `plan: max_attempts: ${max} catches 0.9 → 0.4 80 % of the time among 3 conversations · ` +
      `sessions: about ${Math.round(plan.sessions.unchanged)} if nothing changed, at most ${plan.sessions.at_most} · ` +
      `wall time at concurrency 6 and 10 s a session: about ${Math.max(1, Math.round(plan.seconds.unchanged / 60))} min, ` +
      `at most ${Math.max(1, Math.round(plan.seconds.at_most / 60))} min\n`,
  );
});

t.test('a drop no budget catches: exit 1; usage mistakes: exit 2, naming the option', async (t) => {
  const none = await run(['--conversations', '20', '--baseline-rate', '0.9', '--drop', '0.02']);
  t.equal(none.code, 1);
  t.equal(none.stdout, 'plan: no max_attempts up to 200 catches 0.9 → 0.88 80 % of the time among 20 conversations\n');
  const missing = await run(['--conversations', '3', '--baseline-rate', '0.9']);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /^agent-test-gateway plan: name --drop\n/);
  const wrong = await run(['--conversations', '3', '--baseline-rate', '0.9', '--drop', '0.95']);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /^agent-test-gateway plan: drop 0.95: in \(0, 0.9\]/);
  t.match((await run(['--drop', 'much'])).stderr, /--drop needs a number/);
  t.match((await run(['--tries', '3'])).stderr, /unknown argument --tries/);
  t.equal((await run(['--help'])).code, 0);
});
