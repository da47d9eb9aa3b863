import t from 'tap';
import type { RunReport } from '../src/suites/report/run-report.js';
import { majority, voteSeed } from '../src/suites/run/judge.js';
import { startStack } from './support/stack.js';
import { runPath } from './support/http.js';

/**
 * Judge votes: a criterion ruled `votes` times per attempt with seeds derived from the run's, the
 * majority ruling; each ruling's agreement, split rulings marked, and per criterion the share of
 * split rulings over the run.
 */

const criterion = { id: 'c', text: 'The agent is helpful', votes: 3 };
const ballot = (verdict: 'passed' | 'failed' | 'inconclusive', reasoning: string = verdict) => ({ verdict, reasoning });

t.test('the majority decides; agreement and split', async (t) => {
  t.match(majority(criterion, [ballot('passed', 'a'), ballot('failed', 'b'), ballot('passed', 'c')]), {
    verdict: 'passed',
    passed: true,
    reasoning: 'a',
    votes: 3,
    agreement: 2,
    split: true,
  });
  t.match(majority(criterion, [ballot('failed'), ballot('failed'), ballot('failed')]), { verdict: 'failed', agreement: 3, split: false });
  t.match(majority(criterion, [ballot('passed'), ballot('failed'), ballot('inconclusive')]), {
    verdict: 'inconclusive',
    passed: false,
    agreement: 1,
    split: true,
    reasoning: "The judge's votes split with no majority: 1 passed, 1 failed, 1 inconclusive.",
  });
  const five = [ballot('failed'), ballot('passed'), ballot('passed'), ballot('failed'), ballot('passed')];
  t.match(majority({ ...criterion, votes: 5 }, five), { verdict: 'passed', agreement: 3, votes: 5, split: true });
  t.match(majority({ ...criterion, votes: 1 }, [ballot('failed')]), { verdict: 'failed', agreement: 1, votes: 1, split: false });
  t.equal(voteSeed(42, 0), 42, "the first vote's seed is the run's");
  t.not(voteSeed(42, 1), 42);
  t.equal(voteSeed(2 ** 31 - 1, 2), (2 ** 31 - 1 + 2 * 1_000_003) % 2 ** 31, 'seeds stay in range');
});

/** P(X = k) for X ~ Binomial(n, p), exactly enumerated. */
function binomialPmf(n: number, p: number): number[] {
  const pmf: number[] = [];
  let choose = 1;
  for (let k = 0; k <= n; k++) {
    pmf.push(choose * p ** k * (1 - p) ** (n - k));
    choose = (choose * (n - k)) / (k + 1);
  }
  return pmf;
}

/** The narrowest range [lo, hi] whose tails outside each hold at most `tail` of the mass. */
function centralRange(n: number, p: number, tail: number): [number, number] {
  const pmf = binomialPmf(n, p);
  let lo = 0;
  for (let below = pmf[0]!; below <= tail; below += pmf[++lo]!);
  let hi = n;
  for (let above = pmf[n]!; above <= tail; above += pmf[--hi]!);
  return [lo, hi];
}

t.test('a judge whose rulings are seeded coin flips: agreement and split shares within their exact binomial ranges', async (t) => {
  const s = await startStack(t, { model: true });
  const n = 20;
  const answer = await s.call('POST', runPath(), {
    body: {
      seed: 11,
      repeat: n,
      concurrency: 1,
      review: false,
      votes: 3,
      conversations: [{ name: 'coin', turns: [{ line: 'hi' }], expect: { criteria: [{ id: 'heads', text: 'The coin lands heads' }] } }],
    },
  });
  t.equal(answer.status, 200, answer.text);
  const report = answer.body as RunReport;
  const conv = report.conversations[0]!;
  const rulings = conv.attempts.map((a) => a.criteria[0]!);
  const judgeCalls = s.model!.requests.filter((r) => r.body.response_format?.json_schema?.name === 'judge_verdict');
  t.equal(judgeCalls.length, 3 * n, 'three votes per attempt');
  t.same([...new Set(judgeCalls.map((r) => r.body.seed))].sort(), [11, voteSeed(11, 1), voteSeed(11, 2)].sort(), 'each vote its own seed');
  for (const r of rulings) {
    t.equal(r.votes, 3);
    t.ok(r.agreement === 2 || r.agreement === 3, `agreement ${r.agreement} of 3`);
    t.equal(r.split, r.agreement === 2);
    t.equal(r.passed, r.verdict === 'passed');
  }
  // Three fair coins: unanimous with probability 1/4, so each ruling is split with probability 3/4,
  // and the majority passes with probability 1/2. Outside these ranges: at most 1 in 2000 each side.
  const split = rulings.filter((r) => r.split).length;
  const passed = rulings.filter((r) => r.passed).length;
  const [splitLo, splitHi] = centralRange(n, 0.75, 0.0005);
  const [passLo, passHi] = centralRange(n, 0.5, 0.0005);
  t.ok(split >= splitLo && split <= splitHi, `${split} split rulings of ${n}, within [${splitLo}, ${splitHi}]`);
  t.ok(passed >= passLo && passed <= passHi, `${passed} passed of ${n}, within [${passLo}, ${passHi}]`);
  t.same(conv.criteria_splits, [{ id: 'heads', text: 'The coin lands heads', rulings: n, split, split_share: split / n }]);
  t.equal(conv.attempts_passed, passed, 'the majority decides each attempt');
  t.equal(report.model_usage.calls, 3 * n);
});

t.test('votes: 1, 3 or 5, at the suite or on a criterion; one vote by default', async (t) => {
  const s = await startStack(t, { model: true });
  const body = (over: Record<string, unknown>, c: unknown = 'The agent said "delivered"') => ({
    ...over,
    conversations: [{ turns: [{ line: 'My order number is 12345' }], expect: { criteria: [c] } }],
  });
  const one = await s.call('POST', runPath(), { body: body({}) });
  t.match(one.body.conversations[0].attempts[0].criteria[0], { verdict: 'passed', votes: 1, agreement: 1, split: false });
  t.same(one.body.conversations[0].criteria_splits, [], 'no split share for a single vote');
  const own = await s.call('POST', runPath(), { body: body({ votes: 3 }, { id: 'date', text: 'The agent gave a date', votes: 5 }) });
  t.match(own.body.conversations[0].attempts[0].criteria[0], { id: 'date', verdict: 'passed', votes: 5, agreement: 5 });
  for (const [over, c, field] of [
    [{ votes: 2 }, undefined, 'votes'],
    [{ votes: 7 }, undefined, 'votes'],
    [{}, { id: 'date', text: 'The agent gave a date', votes: 4 }, 'conversations[0].expect.criteria[0]'],
  ] as const) {
    const answer = await s.call('POST', runPath(), { body: body(over, c) });
    t.equal(answer.status, 400, JSON.stringify(over ?? c));
    t.match(answer.text, field);
  }
});
