import { fairTail } from './binomial.js';

/**
 * The group-sequential sign test of the gate: a Pocock-type boundary on the nominal p-value.
 *
 * Per conversation, the gate pairs the k-th judged baseline attempt with the k-th judged
 * candidate attempt and keeps only the discordant pairs (one side passed, the other not). When
 * both revisions pass with the same probability p, whatever p, each discordant pair is the
 * baseline's with probability exactly ½, independently of the others: the count S of pairs won
 * by the baseline after m discordant pairs is the fair-coin walk S_m. That makes the test exact
 * and free of the unknown p (the exact conditional sign test, McNemar's exact test).
 *
 * After each look at m ≤ N discordant pairs the nominal p-value is P(Bin(m, ½) ≥ S_m). The rule
 * rejects as soon as it is ≤ c, where c = c(level, N) is the largest value with
 *
 *   F_N(c) := P_fair(∃ m ≤ N : P(Bin(m, ½) ≥ S_m) ≤ c) ≤ level,
 *
 * F_N computed exactly by dynamic programming over the fair-coin walk (paths that cross are
 * absorbed). The boundary depends on m only, so however many rounds the gate runs, whichever
 * rounds it looks at, and wherever it stops, the looks it takes are a subset of the N looks that
 * F_N counts: the chance of a false rejection stays ≤ F_N(c) ≤ level for every pass rate.
 *
 * The sequential p-value of a path is F_N(q), q the smallest nominal p-value over the looks
 * taken: P(F_N(q) ≤ x) ≤ x for every x (F_N is the distribution function of the smallest nominal
 * p-value over all N looks, and looking less, or stopping early, only raises q), so it can be fed
 * to Holm's procedure like any p-value, and F_N(q) ≤ level exactly when q ≤ c(level, N).
 */

const crossing = new Map<string, number>();
const criticals = new Map<string, number>();

/**
 * b[m] for m = 0…N: the smallest S with P(Bin(m, ½) ≥ S) ≤ c (the walk crosses at m when
 * S_m ≥ b[m]), m + 1 where no S is small enough.
 */
export function crossingThresholds(critical: number, horizon: number): Int32Array {
  const thresholds = new Int32Array(horizon + 1);
  for (let m = 0; m <= horizon; m++) {
    let s = m + 1;
    while (s > 0 && fairTail(m, s - 1) <= critical) s--;
    thresholds[m] = s;
  }
  return thresholds;
}

/** F_N(c): the chance that a fair-coin walk's nominal p-value is ≤ c at some m ≤ N. Exact DP, cached. */
export function crossingProbability(critical: number, horizon: number): number {
  const key = `${horizon}:${critical}`;
  const cached = crossing.get(key);
  if (cached !== undefined) return cached;
  const thresholds = crossingThresholds(critical, horizon);
  let dist = new Float64Array(horizon + 2);
  dist[0] = 1;
  let crossed = thresholds[0]! <= 0 ? 1 : 0;
  if (crossed === 1) dist[0] = 0;
  for (let m = 1; m <= horizon && crossed < 1; m++) {
    const next = new Float64Array(horizon + 2);
    for (let s = 0; s <= m; s++) next[s] = ((dist[s] ?? 0) + (s > 0 ? dist[s - 1]! : 0)) / 2;
    for (let s = thresholds[m]!; s <= m; s++) {
      crossed += next[s]!;
      next[s] = 0;
    }
    dist = next;
  }
  crossing.set(key, crossed);
  return crossed;
}

/**
 * c(level, N): the largest nominal p-value threshold whose crossing probability over N
 * discordant pairs is ≤ level. F_N is a step function that moves only at the values
 * P(Bin(m, ½) ≥ s), so the search runs over those (sorted, bisected, each step one exact DP).
 * 0 when even the smallest of them crosses too often (the rule then never rejects: too few pairs
 * for that level). Cached per (level, N).
 */
export function criticalValue(level: number, horizon: number): number {
  const key = `${horizon}:${level}`;
  const cached = criticals.get(key);
  if (cached !== undefined) return cached;
  const values = new Set<number>();
  for (let m = 1; m <= horizon; m++) for (let s = 1; s <= m; s++) values.add(fairTail(m, s));
  const sorted = [...values].sort((a, b) => a - b);
  let low = -1; // index of the largest value known to satisfy F ≤ level (-1: none)
  let high = sorted.length; // index of the smallest value known not to
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (crossingProbability(sorted[middle]!, horizon) <= level) low = middle;
    else high = middle;
  }
  const critical = low < 0 ? 0 : sorted[low]!;
  criticals.set(key, critical);
  return critical;
}

/** The sequential p-value F_N(q) of a path whose smallest nominal p-value over its looks is q. */
export function sequentialPValue(smallestNominal: number, horizon: number): number {
  return crossingProbability(smallestNominal, horizon);
}
