import t, { type Test } from 'tap';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { startStack } from './support/stack.js';

/**
 * The statistical gate through the service, against an agent whose sessions pass at random
 * (`sim:chance:P,Q`: yes with probability P on revisions before 3, Q on 3 and later, one seeded
 * draw per session). The rule's error rates are proven exactly in test/stats/; this holds the
 * wiring: rounds, stops, verdicts and what the report says, on real sessions.
 */
const chance = (name: string, line: string) => ({ name, turns: [{ line, expect: { text_contains: 'Yes' } }] });
const compare = async (t: Test, candidate: string, body: Record<string, unknown>) => {
  const s = await startStack(t);
  const answer = await s.call('POST', `/v1/agents/${candidate}/comparisons`, { body: { baseline: 'coach', ...body } });
  t.equal(answer.status, 200, answer.text);
  return { s, report: answer.body as ComparisonReport };
};

t.test('identical revisions: unchanged, with the drop the attempts could have caught, and the budget not spent', async (t) => {
  const { report } = await compare(t, 'coach', {
    max_attempts: 40,
    conversations: [chance('ninety', 'sim:chance:0.9'), chance('seventy', 'sim:chance:0.7')],
  });
  t.equal(report.regressed, false);
  t.match(report.totals, { conversations: 2, regressed: 0, fixed: 0, unchanged: 2, error: 0 });
  t.equal(
    report.totals.fails_on_both_sides,
    report.conversations.filter((c) => !c.baseline.passed && !c.candidate.passed).length,
    'under pass_rate 1, a conversation with a failed attempt on each side fails on both sides',
  );
  for (const c of report.conversations) {
    t.equal(c.verdict, 'unchanged', c.statistics.summary);
    t.match(c.statistics.summary, /^no difference found/);
    t.ok(c.statistics.stop === 'futile' || c.statistics.stop === 'budget');
    t.ok(c.statistics.p_regressed! > c.statistics.p_needed!, 'the p-value stayed above what was needed');
    t.ok(c.baseline.pass_rate_interval.low <= c.baseline.pass_rate_interval.estimate!);
    t.ok(c.baseline.pass_rate_interval.estimate! <= c.baseline.pass_rate_interval.high);
  }
  t.ok(report.sessions.spent < report.sessions.budget, `${report.sessions.spent} of ${report.sessions.budget} sessions`);
});

t.test('a candidate at 0.3 where the baseline is at 0.95: regressed long before max_attempts', async (t) => {
  const { s, report } = await compare(t, 'coach.3', { max_attempts: 40, conversations: [chance('booking', 'sim:chance:0.95,0.3')] });
  const [booking] = report.conversations;
  t.equal(booking!.verdict, 'regressed', booking!.statistics.summary);
  t.equal(report.regressed, true);
  t.equal(booking!.statistics.stop, 'decided');
  t.ok(booking!.statistics.rounds < 20, `decided after ${booking!.statistics.rounds} of 40 rounds`);
  t.ok(booking!.statistics.p_regressed! <= 0.05, 'significant at 95 % confidence with one conversation');
  t.ok(booking!.statistics.difference!.high < 0, 'the whole interval of the difference is below 0');
  t.equal(report.sessions.spent, 2 * booking!.statistics.rounds);
  t.ok(report.sessions.spent < report.sessions.budget);
  t.equal(s.engine.record.connections.length, report.sessions.spent, 'one engine session per attempt');
});

t.test('repeat means exactly N attempts, tested at the end on every attempt', async (t) => {
  const { report } = await compare(t, 'coach.3', { repeat: 3, conversations: [chance('booking', 'sim:chance:1,0')] });
  const [booking] = report.conversations;
  t.same(report.attempts, { mode: 'repeat', min_attempts: 3, max_attempts: 3 });
  t.equal(booking!.statistics.rounds, 3);
  // Barnard's test on 3 of 3 against 0 of 3: sup p³(1 − p)³ = 1/64 (the sign test on the three
  // discordant pairs could never go below 1/8).
  t.ok(Math.abs(booking!.statistics.p_regressed! - 1 / 64) < 1e-12, `p ${booking!.statistics.p_regressed}`);
  t.equal(booking!.verdict, 'regressed', '1/64 ≤ 0.05 with one conversation');
});

/**
 * Ten conversations, each with its own `sim:chance` stream (the suffix names it), so that every
 * conversation's k-th session on each side draws the same number on every run (the simulator's
 * seed, 1). `concurrency: 1` runs the conversations one after another, so that what each one saw
 * of the others when it asked whether to go on is the same on every run too: the whole comparison
 * is deterministic. (Computed offline first: these streams give the same verdicts whether the
 * conversations run one after another or side by side.)
 */
const diffuse = (rates: string) => Array.from({ length: 10 }, (_, i) => chance(`conversation ${i + 1}`, `sim:chance:${rates},${41 + i}`));

t.test('a candidate 10 points worse everywhere: no single conversation is worse, but the suite as a whole is', async (t) => {
  const { report } = await compare(t, 'coach.3', { max_attempts: 40, concurrency: 1, conversations: diffuse('0.9,0.8') });
  t.same(
    report.conversations.map((c) => c.verdict),
    Array.from({ length: 10 }, () => 'unchanged'),
    'every conversation unchanged on its own',
  );
  t.match(report.suite, { verdict: 'regressed', stop: 'decided' });
  t.equal(report.regressed, true, 'the suite’s verdict is the comparison’s');
  const suite = report.suite!;
  t.ok(suite.p_regressed <= suite.p_needed, `p ${suite.p_regressed} ≤ ${suite.p_needed}`);
  t.ok(suite.difference!.high < 0, `the pooled interval below 0: ${JSON.stringify(suite.difference)}`);
  t.match(
    suite.summary,
    /^no single conversation is worse, but the suite as a whole is: −\d+ points \(95 % interval −\d+ to −\d+\); p [=<] /,
  );
  t.equal(
    suite.pairs,
    report.conversations.reduce((sum, c) => sum + c.statistics.rounds, 0),
    'every round a pair (no attempt in error)',
  );
});

t.test('identical revisions: unchanged at both levels', async (t) => {
  const { report } = await compare(t, 'coach', { max_attempts: 40, concurrency: 1, conversations: diffuse('0.9') });
  t.same(
    report.conversations.map((c) => c.verdict),
    Array.from({ length: 10 }, () => 'unchanged'),
  );
  t.match(report.suite, { verdict: 'unchanged' });
  t.equal(report.regressed, false);
  t.match(report.suite!.summary, /^no difference over the suite as a whole: [−+]?\d+ points/);
  t.ok(report.sessions.spent < report.sessions.budget, `${report.sessions.spent} of ${report.sessions.budget} sessions`);
});
