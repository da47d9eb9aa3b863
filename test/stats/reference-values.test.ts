import t from 'tap';
import { fairTail, newcombeDifference, passHatK, passRateCheck, wilson } from '../../src/stats/index.js';

/** p-values and intervals against published reference values. */

t.test('sign-test tails: exact rationals and published tables', async (t) => {
  // P(Bin(m, ½) ≥ s) as exact fractions (binom.test(s, m, alternative = "greater") in R).
  t.equal(fairTail(10, 9), 11 / 1024);
  t.equal(fairTail(10, 10), 1 / 1024);
  t.equal(fairTail(5, 5), 1 / 32);
  t.equal(fairTail(6, 3), 42 / 64);
  t.equal(fairTail(20, 15), 21700 / 1048576);
  t.equal(fairTail(0, 0), 1, 'no discordant pair: p = 1');
  t.equal(fairTail(7, 0), 1);
  t.equal(fairTail(7, 8), 0);
  // Sign-test tables (lower tail = upper tail by symmetry): n = 20, x ≤ 5: 0.0207; n = 25, x ≤ 7: 0.0216;
  // R: pbinom(59, 100, 0.5, lower.tail = FALSE) = 0.02844397.
  t.equal(fairTail(20, 15).toFixed(4), '0.0207');
  t.equal(fairTail(25, 18).toFixed(4), '0.0216');
  t.equal(fairTail(100, 60).toFixed(8), '0.02844397');
});

t.test('tails are exact to 1e-12 relative up to m = 400 (against an independent recursion)', async (t) => {
  // Pascal's rule on probabilities, P_m(k) = (P_{m-1}(k) + P_{m-1}(k-1)) / 2: all terms positive, no cancellation.
  let row = [1];
  let worst = 0;
  for (let m = 1; m <= 400; m++) {
    row = Array.from({ length: m + 1 }, (_, k) => ((row[k] ?? 0) + (row[k - 1] ?? 0)) / 2);
    if (m % 25 !== 0 && m > 30) continue;
    let tail = 0;
    for (let s = m; s >= 0; s--) {
      tail += row[s]!;
      worst = Math.max(worst, Math.abs(fairTail(m, s) - tail) / tail);
    }
  }
  t.ok(worst < 1e-12, `worst relative difference ${worst}`);
});

t.test("Wilson's score interval (Newcombe 1998, Table I)", async (t) => {
  const cases: Array<[number, number, string, string]> = [
    [81, 263, '0.2553', '0.3662'],
    [15, 148, '0.0624', '0.1605'],
    [0, 20, '0.0000', '0.1611'],
    [1, 29, '0.0061', '0.1718'],
  ];
  for (const [x, n, low, high] of cases) {
    const interval = wilson(x, n);
    t.same([interval.low.toFixed(4), interval.high.toFixed(4)], [low, high], `${x}/${n}`);
    t.equal(interval.estimate, x / n);
  }
  t.same(wilson(0, 0), { estimate: null, low: 0, high: 1 }, 'no attempt: nothing known');
  t.equal(wilson(29, 29).high, 1);
});

t.test("Newcombe's hybrid score interval for a difference (1998, method 10, Table II)", async (t) => {
  const cases: Array<[number, number, number, number, string, string]> = [
    [56, 70, 48, 80, '0.0524', '0.3339'],
    [9, 10, 3, 10, '0.1705', '0.8090'],
    [5, 56, 0, 29, '-0.0381', '0.1926'],
    [0, 10, 0, 20, '-0.1611', '0.2775'],
    [0, 10, 0, 10, '-0.2775', '0.2775'],
  ];
  for (const [a, m, b, n, low, high] of cases) {
    const difference = newcombeDifference({ passed: a, attempts: m }, { passed: b, attempts: n })!;
    t.same([difference.low.toFixed(4), difference.high.toFixed(4)], [low, high], `${a}/${m} − ${b}/${n}`);
    t.equal(difference.estimate, a / m - b / n);
  }
  const mirrored = newcombeDifference({ passed: 48, attempts: 80 }, { passed: 56, attempts: 70 })!;
  t.same([mirrored.low.toFixed(4), mirrored.high.toFixed(4)], ['-0.3339', '-0.0524'], 'candidate − baseline: the sign follows');
  t.equal(newcombeDifference({ passed: 0, attempts: 0 }, { passed: 3, attempts: 4 }), null);
});

t.test('pass^k = C(c, k) / C(n, k)', async (t) => {
  t.same(passHatK(3, 4), [3 / 4, 1 / 2, 1 / 4, 0]);
  t.same(passHatK(10, 10).length, 8, 'k up to 8');
  t.ok(passHatK(10, 10).every((v) => v === 1));
  const [one, two, three] = passHatK(9, 10);
  t.equal(one, 0.9);
  t.ok(Math.abs(two! - 36 / 45) < 1e-15, 'C(9,2)/C(10,2) = 0.8');
  t.ok(Math.abs(three! - 84 / 120) < 1e-15, 'C(9,3)/C(10,3) = 0.7');
  t.same(passHatK(0, 0), []);
  t.same(passHatK(2, 3), [2 / 3, 1 / 3, 0]);
});

t.test('pass_rate: met, missed or undecided from the Wilson interval', async (t) => {
  t.equal(passRateCheck(20, 20, 0.8), 'met', '20/20: lower bound 0.839 ≥ 0.8');
  t.equal(passRateCheck(10, 10, 0.8), 'undecided', '10/10: lower bound 0.722');
  t.equal(passRateCheck(2, 10, 0.8), 'missed', '2/10: upper bound 0.51');
  t.equal(passRateCheck(1000, 1000, 1), 'undecided', 'a target of 1 is never met');
  t.equal(passRateCheck(999, 1000, 1), 'missed');
  t.equal(passRateCheck(0, 0, 0.5), 'undecided', 'no attempt: cannot tell');
});
