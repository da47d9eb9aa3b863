// The release gate's rule before issue 35, frozen for `npm run bench:gate`'s side-by-side: the
// exact sign test on the discordant pairs of each conversation (McNemar's), its Pocock-type
// sequential boundary over N = max(⌈R/2⌉, r0) pairs, and futility on the predictive power of the
// discordant walk (threshold 0.01). A copy of src/stats/ as it was (binomial.ts, sequential.ts,
// the rule's parts of gate-design.ts and gate.ts), trimmed to what a comparison needs: record
// and the p-values. Nothing in src/ uses it.
import type { GateMode } from '../src/stats/index.js';

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
function fairTail(m: number, s: number): number {
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
function betaBinomialRow(n: number, a: number, b: number): Float64Array {
  const row = new Float64Array(n + 1);
  let log = 0;
  for (let i = 0; i < n; i++) log += Math.log((b + i) / (a + b + i));
  for (let j = 0; j <= n; j++) {
    row[j] = Math.exp(log);
    if (j < n) log += Math.log(((n - j) / (j + 1)) * ((a + j) / (b + n - j - 1)));
  }
  return row;
}

const crossing = new Map<string, number>();
const criticals = new Map<string, number>();

/**
 * b[m] for m = 0…N: the smallest S with P(Bin(m, ½) ≥ S) ≤ c (the walk crosses at m when
 * S_m ≥ b[m]), m + 1 where no S is small enough.
 */
function crossingThresholds(critical: number, horizon: number): Int32Array {
  const thresholds = new Int32Array(horizon + 1);
  for (let m = 0; m <= horizon; m++) {
    let s = m + 1;
    while (s > 0 && fairTail(m, s - 1) <= critical) s--;
    thresholds[m] = s;
  }
  return thresholds;
}

/** F_N(c): the chance that a fair-coin walk's nominal p-value is ≤ c at some m ≤ N. Exact DP, cached. */
function crossingProbability(critical: number, horizon: number): number {
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
function criticalValue(level: number, horizon: number): number {
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

function predictivePower(wins: number, m: number, pairs: number, left: number, design: SignTestDesign): number {
  const steps = Math.min(design.horizon - m, left);
  const within = new Float64Array(steps + 1); // within[j]: crossed within j new discordant pairs
  let dist = new Float64Array(steps + 2); // by new wins w
  dist[0] = 1;
  for (let j = 1; j <= steps; j++) {
    const next = new Float64Array(steps + 2);
    const threshold = design.thresholds[m + j]! - wins;
    let crossed = 0;
    for (let w = 0; w < j; w++) {
      const mass = dist[w]!;
      if (mass === 0) continue;
      const up = (wins + w + 0.5) / (m + j);
      next[w + 1]! += mass * up;
      next[w]! += mass * (1 - up);
    }
    for (let w = Math.max(0, threshold); w <= j; w++) {
      crossed += next[w]!;
      next[w] = 0;
    }
    within[j] = within[j - 1]! + crossed;
    dist = next;
  }
  const counts = betaBinomialRow(left, m + 0.5, pairs - m + 0.5);
  let power = 0;
  for (let j = 0; j <= left; j++) power += counts[j]! * within[Math.min(j, steps)]!;
  return power;
}

interface SignTestDesign {
  kind: 'repeat' | 'sequential';
  stopLevel: number;
  maxRounds: number;
  minRounds: number;
  horizon: number;
  critical: number;
  thresholds: Int32Array;
  futility: number;
}

/** The old rule's design for K conversations at α = 1 − confidence. */
export function signTestDesign(alpha: number, conversations: number, mode: GateMode): SignTestDesign {
  const stopLevel = alpha / conversations;
  if (mode.kind === 'repeat') {
    const n = mode.attempts;
    return {
      kind: 'repeat',
      stopLevel,
      maxRounds: n,
      minRounds: n,
      horizon: Infinity,
      critical: 0,
      thresholds: new Int32Array(0),
      futility: 0,
    };
  }
  const min = Math.min(mode.min ?? 5, mode.max);
  const horizon = Math.max(Math.ceil(mode.max / 2), min);
  const critical = criticalValue(stopLevel, horizon);
  return {
    kind: 'sequential',
    stopLevel,
    maxRounds: mode.max,
    minRounds: min,
    horizon,
    critical,
    thresholds: crossingThresholds(critical, horizon),
    futility: 0.01,
  };
}

/** One conversation under the old rule (no errors: every attempt is judged, so the k-th attempts pair). */
export class SignTestConversation {
  rounds = 0;
  stop: 'decided' | 'futile' | 'cap' | 'budget' | null = null;
  #pairs = 0;
  #baselineOnly = 0;
  #candidateOnly = 0;
  #smallestRegressed = 1;
  #smallestFixed = 1;
  constructor(readonly design: SignTestDesign) {}

  record(baseline: boolean, candidate: boolean): { stop: SignTestConversation['stop'] } {
    const design = this.design;
    this.rounds++;
    this.#pairs++;
    if (baseline !== candidate && this.#baselineOnly + this.#candidateOnly < design.horizon) {
      if (baseline) this.#baselineOnly++;
      else this.#candidateOnly++;
    }
    if (design.kind === 'repeat') {
      if (this.rounds >= design.maxRounds) this.stop = 'budget';
      return { stop: this.stop };
    }
    if (this.rounds < design.minRounds) return { stop: null };
    const m = this.#baselineOnly + this.#candidateOnly;
    this.#smallestRegressed = Math.min(this.#smallestRegressed, fairTail(m, this.#baselineOnly));
    this.#smallestFixed = Math.min(this.#smallestFixed, fairTail(m, this.#candidateOnly));
    const left = design.maxRounds - this.rounds;
    if (this.#smallestRegressed <= design.critical || this.#smallestFixed <= design.critical) this.stop = 'decided';
    else if (m >= design.horizon) this.stop = 'cap';
    else if (this.rounds >= design.maxRounds) this.stop = 'budget';
    else if (
      predictivePower(this.#baselineOnly, m, this.#pairs, left, design) < design.futility &&
      predictivePower(this.#candidateOnly, m, this.#pairs, left, design) < design.futility
    )
      this.stop = 'futile';
    return { stop: this.stop };
  }

  /** The p-value for a regression (the sequential one in sequential mode). */
  pRegressed(): number {
    const m = this.#baselineOnly + this.#candidateOnly;
    if (this.design.kind === 'repeat') return fairTail(m, this.#baselineOnly);
    return crossingProbability(this.#smallestRegressed, this.design.horizon);
  }
}
