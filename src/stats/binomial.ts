/**
 * Exact binomial arithmetic for the gate: the fair-coin tail that every p-value of the gate is
 * made of, and binomial probability rows for the dynamic programs of power and conditional power.
 *
 * The tail is computed with integers (BigInt binomial coefficients, summed, then one division by
 * 2^m), so every value is the correctly rounded double of the exact rational: two mathematically
 * equal tails are the same double, which the boundary search relies on, and the relative error is
 * below 1e-15 for every m this module is asked about (no log-gamma, no series). No package: the
 * arithmetic is twenty lines, and exact, which a floating-point CDF is not.
 */

const fairTails = new Map<number, Float64Array>();

/**
 * The upper tails of Bin(m, ½) for one m: `row[s]` = P(Bin(m, ½) ≥ s) for s = 0…m + 1. Cached
 * per m (a row of m ≤ 400 costs a few hundred BigInt additions once).
 */
function fairTailRow(m: number): Float64Array {
  let row = fairTails.get(m);
  if (row) return row;
  row = new Float64Array(m + 2);
  const coefficients: bigint[] = [1n];
  for (let k = 1; k <= m; k++) coefficients.push((coefficients[k - 1]! * BigInt(m - k + 1)) / BigInt(k));
  const scale = 2 ** m; // a power of two: the division is exact, the only rounding is Number(sum)
  let sum = 0n;
  for (let s = m; s >= 0; s--) {
    sum += coefficients[s]!;
    row[s] = Number(sum) / scale;
  }
  row[m + 1] = 0;
  fairTails.set(m, row);
  return row;
}

/**
 * P(Bin(m, ½) ≥ s): the one-sided exact sign-test (McNemar) p-value of s "wins" among m
 * discordant pairs. 1 for s ≤ 0 (so m = 0 gives 1), 0 for s > m.
 */
export function fairTail(m: number, s: number): number {
  if (!Number.isInteger(m) || m < 0 || !Number.isInteger(s)) throw new RangeError(`fairTail(${m}, ${s}): integers, m ≥ 0`);
  if (s <= 0) return 1;
  if (s > m) return 0;
  return fairTailRow(m)[s]!;
}

/**
 * The beta-binomial probabilities P(J = j), j = 0…n, of J successes in n trials whose success
 * rate is Beta(a, b): by the ratio of neighbours, (n − j)/(j + 1) · (a + j)/(b + n − j − 1),
 * from P(J = 0) = Π (b + i)/(a + b + i), in logarithms. O(n).
 */
export function betaBinomialRow(n: number, a: number, b: number): Float64Array {
  const row = new Float64Array(n + 1);
  let log = 0;
  for (let i = 0; i < n; i++) log += Math.log((b + i) / (a + b + i));
  for (let j = 0; j <= n; j++) {
    row[j] = Math.exp(log);
    if (j < n) log += Math.log(((n - j) / (j + 1)) * ((a + j) / (b + n - j - 1)));
  }
  return row;
}
