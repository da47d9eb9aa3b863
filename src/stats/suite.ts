import { normalCdf, Z95, type Interval } from './intervals.js';

/**
 * The suite's own test: is the candidate worse (or better) over all conversations together?
 *
 * Each conversation is a stratum, and within it the gate pairs the k-th judged baseline attempt
 * with the k-th judged candidate attempt. When a conversation's two revisions pass with the same
 * probability p_i (whatever it is), a pair is "baseline only passed" or "candidate only passed"
 * with the same probability p_i(1 − p_i), so the side that won a discordant pair is a fair coin,
 * free of every p_i (the McNemar / Mantel–Haenszel test for matched strata). That stays so under
 * optional stopping: whether a conversation plays another round is decided from the rounds before,
 * so each new discordant pair's sign is a fair coin given the past. The suite's walk, S = (baseline
 * only) − (candidate only) summed over every conversation, is therefore a fair ±1 walk in d, the
 * discordant pairs so far, and the chance that it ever crosses a boundary b(d) is at most the
 * exact crossing probability of a fair walk up to D_max = K × max_attempts: a DP, no supremum over
 * nuisance rates needed.
 *
 * - **Looks.** The suite looks at the end of each round r (all conversations' pairs of rounds ≤ r):
 *   an order fixed by the rounds, not by which conversation finished first, so the Gate's state is
 *   a function of the rounds recorded.
 * - **Boundary** (sequential): S ≥ c·√d (a flat z), looked at only while d is within
 *   [D_max/10, D_max/2]: fewer than D_max/10 discordant pairs carry little evidence, and more than
 *   D_max/2 happen only when the revisions differ a lot (2p(1 − p) ≤ ½ when they do not), where
 *   the conversations' own tests have decided. c is calibrated exactly for the suite's level over
 *   that window; looks the rounds skip only lower the chance.
 * - **`repeat: N`**: one look after the last round, at a number of pairs fixed in advance; given
 *   the d discordant pairs, S is the sum of d fair signs: the exact sign test, no penalty.
 *
 * The sequential p-value of a walk is F(M), M the largest S/√d over its looks in the window and
 * F(m) the fair walk's chance of reaching m·√d somewhere in the window: P(F(M) ≤ u) ≤ u, so it
 * goes into Holm's procedure with the conversations' p-values.
 */

/** Where the suite looks, in discordant pairs, and where it decides. */
export interface SuiteDesign {
  readonly kind: 'repeat' | 'sequential';
  /** The suite's share of α: its Bonferroni level, where it stops as decided. */
  readonly level: number;
  /** First and last number of discordant pairs the boundary is looked at (sequential). */
  readonly first: number;
  readonly last: number;
  /** c: S/√d at or above it decides (Infinity: nothing can). */
  readonly critical: number;
}

/** Two values computed the same way may differ in the last bits: "at least" allows for it. */
const SLACK = 1e-9;

/**
 * The chance that a fair ±1 walk reaches `threshold`·√d for some d in [first, last], exactly, by
 * DP over its position. Cached (the design's calibration and the p-values ask for the same ones).
 */
export function walkCrossing(threshold: number, first: number, last: number): number {
  const key = `${threshold} ${first} ${last}`;
  const cached = crossings.get(key);
  if (cached !== undefined) return cached;
  const offset = last + 1;
  let mass = new Float64Array(2 * last + 3);
  let next = new Float64Array(2 * last + 3);
  mass[offset] = 1;
  let crossed = 0;
  for (let d = 1; d <= last; d++) {
    next.fill(0);
    for (let s = -d + 1; s <= d - 1; s++) {
      const m = mass[offset + s]!;
      if (m === 0) continue;
      next[offset + s + 1]! += m / 2;
      next[offset + s - 1]! += m / 2;
    }
    [mass, next] = [next, mass];
    if (d < first) continue;
    const bound = threshold * Math.sqrt(d) - SLACK;
    for (let s = Math.max(1, Math.ceil(bound)); s <= d; s++) {
      crossed += mass[offset + s]!;
      mass[offset + s] = 0;
    }
  }
  crossings.set(key, crossed);
  return crossed;
}

const crossings = new Map<string, number>();

/**
 * The smallest value of S/√d within the window whose crossing probability is at most `level`
 * (the chance only changes at those values); Infinity when none is. Cached.
 */
export function walkCritical(level: number, first: number, last: number): number {
  const key = `${level} ${first} ${last}`;
  const cached = criticals.get(key);
  if (cached !== undefined) return cached;
  const values: number[] = [];
  for (let d = first; d <= last; d++) for (let s = 1; s <= d; s++) values.push(s / Math.sqrt(d));
  const sorted = Float64Array.from(values).sort();
  let low = -1; // crosses too often
  let high = sorted.length; // rare enough (or past the end)
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (walkCrossing(sorted[middle]!, first, last) <= level) high = middle;
    else low = middle;
  }
  const critical = high < sorted.length ? sorted[high]! : Infinity;
  criticals.set(key, critical);
  return critical;
}

const criticals = new Map<string, number>();

/** P(Bin(d, ½) ≥ s): the exact sign test's one-sided p-value. */
export function signTail(d: number, s: number): number {
  if (s <= 0) return 1;
  if (s > d) return 0;
  let logTerm = -d * Math.LN2; // ln C(d, 0)/2^d
  let tail = 0;
  for (let k = 0; k <= d; k++) {
    if (k > 0) logTerm += Math.log((d - k + 1) / k);
    if (k >= s) tail += Math.exp(logTerm);
  }
  return Math.min(1, tail);
}

/** The window of discordant pairs the sequential boundary is looked at, for K conversations of R rounds. */
export function suiteWindow(conversations: number, maxRounds: number): { first: number; last: number } {
  const most = conversations * maxRounds;
  const first = Math.max(1, Math.ceil(most / 10));
  return { first, last: Math.max(first, Math.ceil(most / 2)) };
}

/** The suite's design, or null for a single conversation (its own test is the suite's). */
export function designSuite(kind: 'repeat' | 'sequential', level: number, conversations: number, maxRounds: number): SuiteDesign | null {
  if (conversations < 2 || level <= 0) return null;
  const { first, last } = suiteWindow(conversations, maxRounds);
  return { kind, level, first, last, critical: kind === 'repeat' ? Infinity : walkCritical(level, first, last) };
}

/** The suite's walk at one look: the pairs of every conversation up to a round. */
export interface SuiteLook {
  round: number;
  pairs: number;
  baselineOnly: number;
  candidateOnly: number;
}

/** Which way a look crosses the boundary, if any (sequential, within the window). */
export function suiteCrossing(design: SuiteDesign, look: SuiteLook): 'regressed' | 'fixed' | null {
  const d = look.baselineOnly + look.candidateOnly;
  if (design.kind === 'repeat' || d < design.first || d > design.last) return null;
  const walk = look.baselineOnly - look.candidateOnly;
  if (walk / Math.sqrt(d) >= design.critical - SLACK) return 'regressed';
  if (-walk / Math.sqrt(d) >= design.critical - SLACK) return 'fixed';
  return null;
}

/**
 * The suite's one-sided p-values from its looks (in order; the last is the final state): the
 * sequential p-value F(M) in sequential mode, the exact sign test on the final pairs in `repeat`.
 */
export function suitePValues(design: SuiteDesign, looks: readonly SuiteLook[]): { regressed: number; fixed: number } {
  const final = looks.at(-1);
  if (final === undefined) return { regressed: 1, fixed: 1 };
  if (design.kind === 'repeat') {
    const d = final.baselineOnly + final.candidateOnly;
    return { regressed: signTail(d, final.baselineOnly), fixed: signTail(d, final.candidateOnly) };
  }
  let largestRegressed = 0;
  let largestFixed = 0;
  for (const look of looks) {
    const d = look.baselineOnly + look.candidateOnly;
    if (d < design.first || d > design.last) continue;
    const z = (look.baselineOnly - look.candidateOnly) / Math.sqrt(d);
    largestRegressed = Math.max(largestRegressed, z);
    largestFixed = Math.max(largestFixed, -z);
  }
  const p = (largest: number) => (largest > 0 ? Math.min(1, walkCrossing(largest, design.first, design.last)) : 1);
  return { regressed: p(largestRegressed), fixed: p(largestFixed) };
}

/**
 * The pooled difference candidate − baseline over all conversations' pairs, with a 95 % interval:
 * the stratified paired difference (each conversation's pairs weighted by their number, the
 * Mantel–Haenszel weights of matched pairs), (C − S)/N, with the variance Σ_i (d_i − (c_i −
 * s_i)²/n_i)/N² summed over the strata, and Agresti and Min's adjustment (half a pair added to
 * each discordant cell of the pooled table) so that no discordant pair does not make it a point.
 * Null without a pair.
 */
export function pooledDifference(strata: ReadonlyArray<{ pairs: number; baselineOnly: number; candidateOnly: number }>): Interval | null {
  let pairs = 0;
  let net = 0;
  let variance = 0;
  for (const { pairs: n, baselineOnly: s, candidateOnly: c } of strata) {
    if (n === 0) continue;
    pairs += n;
    net += c - s;
    variance += s + c - (c - s) ** 2 / n;
  }
  if (pairs === 0) return null;
  const adjusted = pairs + 2;
  const centre = net / adjusted;
  const half = (Z95 * Math.sqrt(variance + 1)) / adjusted;
  return { estimate: net / pairs, low: Math.max(-1, centre - half), high: Math.min(1, centre + half) };
}

/**
 * Whether some path of the pairs still to come takes the suite's walk to its boundary the
 * regression way, exactly: the walk moves one step per discordant pair, at most `pairsToCome`
 * more pairs can come (a round adds at most one pair), so it can cross only at some d′ of the
 * window, d < d′ ≤ d + pairsToCome, with S + (d′ − d) ≥ c·√d′.
 */
export function suiteReachable(design: SuiteDesign, look: SuiteLook, pairsToCome: number): boolean {
  const d = look.baselineOnly + look.candidateOnly;
  const lead = look.baselineOnly - look.candidateOnly;
  const end = Math.min(design.last, d + pairsToCome);
  for (let next = Math.max(d + 1, design.first); next <= end; next++) {
    if (lead + (next - d) >= design.critical * Math.sqrt(next) - SLACK) return true;
  }
  return false;
}

/**
 * Whether the suite, at this look, can no longer hope to find the candidate worse: what a futile
 * conversation plays on for (a regression is what a gate is for; the suite may still find the
 * candidate better on the rounds played, but no session is bought for it). Exactly out of reach
 * when no path of the pairs still to come can cross (`suiteReachable`, `pairsToCome` the most
 * there can be); before that, on the odds: the discordant pairs still to come projected at the
 * rate seen (with one discordant pair in two pairs added, so that none so far is not "none
 * ever"), capped at the window's end, it stops when even all of them won by the baseline could
 * not cross, or when the predictive power Φ((z − c√t)/√(1 − t)), t the share of the projected
 * pairs seen, is below `threshold`. Only ever stops without a rejection, so it cannot raise a
 * false alarm (test/stats/suite.test.ts enumerates it).
 */
export function suiteFutile(design: SuiteDesign, look: SuiteLook, pairsToCome: number, threshold: number): boolean {
  const d = look.baselineOnly + look.candidateOnly;
  if (d > design.last || !Number.isFinite(design.critical)) return true;
  if (!suiteReachable(design, look, pairsToCome)) return true;
  if (threshold === 0) return false;
  const projected = Math.min(design.last, d + (pairsToCome * (d + 1)) / (look.pairs + 2));
  const lead = look.baselineOnly - look.candidateOnly;
  if (lead + (projected - d) < design.critical * Math.sqrt(projected)) return true;
  if (d === 0) return false;
  const t = d / projected;
  if (t >= 1) return true;
  return normalCdf((lead / Math.sqrt(d) - design.critical * Math.sqrt(t)) / Math.sqrt(1 - t)) < threshold;
}
