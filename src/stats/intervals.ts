/**
 * The numbers a report shows beside a verdict: a pass rate with its interval, the difference of
 * two pass rates with its interval, pass^k, and whether a run met its `pass_rate`.
 *
 * These are fixed-sample intervals. After a sequential comparison stopped early they are
 * approximate (stopping when the difference looks large biases the estimate away from zero a
 * little); the verdict itself comes from the exact sequential test, not from them.
 */

/** Φ⁻¹(0.975): the 95 % two-sided normal quantile. */
export const Z95 = 1.959963984540054;

/** Φ, the standard normal distribution function (Abramowitz and Stegun 26.2.17, error below 7.5e-8). */
export function normalCdf(z: number): number {
  const t = 1 / (1 + 0.2316419 * Math.abs(z));
  const density = Math.exp((-z * z) / 2) / Math.sqrt(2 * Math.PI);
  const tail = density * t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  return z >= 0 ? 1 - tail : tail;
}

/** An estimate with its interval; `estimate` is null when there is nothing to estimate from. */
export interface Interval {
  estimate: number | null;
  low: number;
  high: number;
}

/**
 * Wilson's score interval (1927) for a pass rate, 95 %: never outside [0, 1], not degenerate at
 * 0/n or n/n, and close to its nominal coverage for small n, where the Wald interval is not
 * (Newcombe 1998, method 3). 0 attempts: estimate null, interval [0, 1].
 */
export function wilson(passed: number, attempts: number, z = Z95): Interval {
  if (attempts === 0) return { estimate: null, low: 0, high: 1 };
  const rate = passed / attempts;
  const z2 = z * z;
  const denominator = attempts + z2;
  const centre = (passed + z2 / 2) / denominator;
  const half = (z / denominator) * Math.sqrt((passed * (attempts - passed)) / attempts + z2 / 4);
  // At 0/n and n/n the bound is exactly 0 or 1; the formula gets there up to rounding.
  return { estimate: rate, low: passed === 0 ? 0 : centre - half, high: passed === attempts ? 1 : centre + half };
}

/**
 * Newcombe's hybrid score interval (1998, method 10) for the difference candidate − baseline of
 * two independent pass rates, 95 %: built from the two Wilson intervals, so it inherits their
 * behaviour at 0 and 1 and stays inside [−1, 1]. Null when a side has no judged attempt.
 */
export function newcombeDifference(
  candidate: { passed: number; attempts: number },
  baseline: { passed: number; attempts: number },
  z = Z95,
): Interval | null {
  if (candidate.attempts === 0 || baseline.attempts === 0) return null;
  const one = wilson(candidate.passed, candidate.attempts, z);
  const two = wilson(baseline.passed, baseline.attempts, z);
  const p1 = one.estimate!;
  const p2 = two.estimate!;
  const difference = p1 - p2;
  return {
    estimate: difference,
    low: difference - Math.sqrt((p1 - one.low) ** 2 + (two.high - p2) ** 2),
    high: difference + Math.sqrt((one.high - p1) ** 2 + (p2 - two.low) ** 2),
  };
}

/**
 * pass^k for k = 1…min(n, 8): the chance that k attempts in a row all pass, estimated without
 * bias from c passes in n attempts as C(c, k) / C(n, k) (as tau-bench reports it). Element k − 1
 * is pass^k; empty for n = 0.
 */
export function passHatK(passed: number, attempts: number, maxK = 8): number[] {
  const values: number[] = [];
  let value = 1;
  for (let k = 1; k <= Math.min(attempts, maxK); k++) {
    value *= (passed - (k - 1)) / (attempts - (k - 1));
    values.push(Math.max(0, value));
  }
  return values;
}

/** What the attempts of a run say about its `pass_rate`. */
export type PassRateCheck = 'met' | 'missed' | 'undecided';

/**
 * `met` when the 95 % Wilson interval lies at or above the target (its lower bound ≥ target),
 * `missed` when it lies below (upper bound < target), else `undecided`: the attempts cannot tell.
 * A target of 1 is never `met`: no finite number of passing attempts shows a rate of exactly 1
 * (the lower bound is below 1 for every n), so it is `missed` after a failure and `undecided`
 * otherwise.
 */
export function passRateCheck(passed: number, attempts: number, target: number): PassRateCheck {
  const { low, high } = wilson(passed, attempts);
  if (attempts > 0 && low >= target) return 'met';
  if (high < target) return 'missed';
  return 'undecided';
}
