import t from 'tap';
import { barnardPValue, newcombeDifference, passHatK, passRateCheck, wilson } from '../../src/stats/index.js';

/** p-values and intervals against published reference values. */

t.test("Barnard's exact unconditional test (pooled z): published values, and ties counted", async (t) => {
  // scipy.stats.barnard_exact(table, alternative='greater'), pooled: the outcomes of both sides
  // with z at least the observed, at the supremum over the common pass rate. Baseline x of nB,
  // candidate y of nC.
  const close = (actual: number, expected: number, digits: number) => t.equal(actual.toFixed(digits), expected.toFixed(digits));
  close(barnardPValue(20, 14, 15, 8), 0.2102917144472538, 10);
  close(barnardPValue(60, 50, 60, 38), 0.006825452028596091, 10);
  t.ok(Math.abs(barnardPValue(5, 5, 5, 0) - 1 / 1024) < 1e-15, '5/5 against 0/5: sup p⁵(1 − p)⁵ = 1/1024');
  t.ok(Math.abs(barnardPValue(3, 3, 3, 0) - 1 / 64) < 1e-15);
  t.equal(barnardPValue(5, 0, 5, 5), 1, 'the other direction: nothing to flag');
  t.equal(barnardPValue(0, 0, 5, 5), 1, 'a side without attempts');
  // scipy's documented example ([[7, 12], [8, 3]], alternative 'less') prints 0.03407; 8 of 15
  // against 3 of 15 has exactly the same z as 12 of 15 against 7 of 15 (checked in rationals), and
  // floating point drops it there. Counting it, the exact supremum is 0.0341092 (a grid of 20,000
  // rates over the exact polynomial); the same holds for 9/10 against 3/10 (tied with 7/10 against
  // 1/10: 0.0039778, scipy 0.0034654).
  close(barnardPValue(15, 12, 15, 7), 0.0341092, 7);
  close(barnardPValue(10, 9, 10, 3), 0.0039778, 7);
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
