import { betaBinomialRow, fairTail } from './binomial.js';
import { criticalValue, crossingThresholds } from './sequential.js';

/**
 * The release gate's decision rule, driven round by round by the runner.
 *
 * A comparison runs K conversations. Each conversation runs rounds; a round is one baseline
 * attempt and one candidate attempt (interleaved, as the runner already does). Per conversation:
 *
 * - **Data.** Attempts in `error` are left out (counted apart). The k-th judged baseline attempt
 *   is paired with the k-th judged candidate attempt, by order, whatever their outcomes. A pair
 *   is discordant when exactly one side passed; S counts those the baseline won (evidence of a
 *   regression), C those the candidate won, m = S + C. When both revisions pass with the same
 *   probability, whatever it is, every discordant pair is the baseline's with probability ½,
 *   independently: the test on S given m (the exact sign test, McNemar's exact test) has no
 *   unknown parameter to estimate, so its false-alarm rate is exact, not asymptotic. (It assumes
 *   whether an attempt errs does not depend on whether it would have passed.)
 * - **`repeat: N`** (fixed design): exactly N rounds, one look at the end, one-sided p-values
 *   P(Bin(m, ½) ≥ S) for a regression and P(Bin(m, ½) ≥ C) for a fix.
 * - **Sequential** (`min_attempts` r0, `max_attempts` R): a Pocock-type boundary over
 *   N = max(⌈R/2⌉, r0) discordant pairs (see `sequential.ts`), looked at after every round from
 *   round r0 on, each direction on its own. ⌈R/2⌉ rather than R because R rounds rarely yield
 *   more than R/2 discordant pairs, and a boundary spread over looks that never come is paid for
 *   in power: for R = 60 at level 0.005, 0.9 → 0.6 is found with power 0.816 on N = 30 against
 *   0.762 on N = 60. At least r0, so that the first look (after r0 rounds, up to r0 pairs) can use
 *   every pair it has: with R = 6, five pairs one way decide (1/32) where N = 3 could never go
 *   below 1/8. A conversation stops:
 *   - `decided` when either direction's sequential p-value is ≤ α/K (α = 1 − confidence),
 *     Bonferroni's level: Holm's first step rejects anything at or below it, so the final Holm
 *     verdict keeps every early decision;
 *   - `cap` when m reaches N (the boundary has no looks beyond);
 *   - `budget` after R rounds;
 *   - `futile` when, in both directions, the predictive power of crossing within the rounds left
 *     is below the futility threshold (default 0.01): the chance of crossing, computed exactly
 *     over the remaining rounds, averaged over what the data so far say about the discordance
 *     rate and the direction's share (see `predictivePower`). Futility only ever stops a
 *     conversation without a rejection, so it cannot raise a false alarm (it is non-binding: the
 *     boundary does not count on it). The threshold is the bench's trade-off, exact figures for
 *     10 conversations, R = 60 (power for 0.9 → 0.6; mean rounds on identical revisions at 0.9):
 *     none 0.816, 60 rounds; 0.001 0.815, 34; 0.005 0.811, 29; 0.01 0.802, 25; 0.02 0.781, 21;
 *     0.1 0.607, 11. Futility on the point estimates ("if things go on as so far") lost 4 % of
 *     even a 0.95 → 0.3 regression, stopping after five rounds with one pair each way.
 *   No conversation stops before round r0 (nor is it looked at before: fewer looks only lower
 *   the crossing probability).
 * - **Verdicts** (`finalize`): Holm's step-down at α over the regression p-values of the
 *   conversations that can be compared → `regressed`; separately over the fix p-values →
 *   `fixed`; else `unchanged`. A conversation with no judged attempt on a side is `error` and
 *   is left out of Holm's count (its p-value does not exist; leaving it out only lowers the
 *   others' thresholds' divisor, and every conversation's stopping level α/K used the full K,
 *   which is stricter). Holm keeps the chance of any false `regressed` ≤ α for any number of
 *   conversations (and is valid under any dependence between them).
 */

/** How a comparison spends attempts: `repeat` exactly N rounds; `sequential` from `min` (default 5) up to `max` rounds. */
export type GateMode = { kind: 'repeat'; attempts: number } | { kind: 'sequential'; min?: number; max: number };

export interface GateOptions {
  /** 1 − the false-alarm rate of the whole comparison; default 0.95. */
  confidence?: number;
  /** K: how many conversations the comparison compares (the divisor of the stopping level). */
  conversations: number;
  mode: GateMode;
  /** Futility threshold on conditional power (sequential only); default 0.01, 0 turns futility off. */
  futility?: number;
}

/**
 * The numbers fixed once per comparison, before any round: what every conversation's state and
 * the verdicts read. Built by `designGate`, shared by `Gate` and its `ConversationGate`s.
 */
export interface Design {
  readonly kind: 'repeat' | 'sequential';
  readonly alpha: number;
  readonly conversations: number;
  /** α/K. */
  readonly stopLevel: number;
  /** Rounds at most (R, or N for `repeat`). */
  readonly maxRounds: number;
  /** r0 (sequential); equal to maxRounds for `repeat`. */
  readonly minRounds: number;
  /** N = max(⌈R/2⌉, r0) discordant pairs (sequential only; Infinity for `repeat`). */
  readonly horizon: number;
  /** c(α/K, N) and its crossing thresholds b[m] (sequential only). */
  readonly critical: number;
  readonly thresholds: Int32Array;
  readonly futility: number;
}

/**
 * The design for one comparison's options, checked once here so that everything downstream can
 * trust it. Throws a RangeError on options out of range (confidence in (0, 1), K ≥ 1, 1 ≤ min ≤
 * max, attempts ≥ 1, futility in [0, 1)).
 */
export function designGate(options: GateOptions): Design {
  const confidence = options.confidence ?? 0.95;
  const { conversations, mode } = options;
  const futility = options.futility ?? 0.01;
  if (!(confidence > 0 && confidence < 1)) throw new RangeError(`confidence ${confidence}: between 0 and 1`);
  if (!Number.isInteger(conversations) || conversations < 1) throw new RangeError(`conversations ${conversations}: at least 1`);
  if (!(futility >= 0 && futility < 1)) throw new RangeError(`futility ${futility}: in [0, 1)`);
  const alpha = 1 - confidence;
  const stopLevel = alpha / conversations;
  if (mode.kind === 'repeat') {
    if (!Number.isInteger(mode.attempts) || mode.attempts < 1) throw new RangeError(`attempts ${mode.attempts}: at least 1`);
    return {
      kind: 'repeat',
      alpha,
      conversations,
      stopLevel,
      maxRounds: mode.attempts,
      minRounds: mode.attempts,
      horizon: Infinity,
      critical: 0,
      thresholds: new Int32Array(0),
      futility: 0,
    };
  }
  const max = mode.max;
  const min = Math.min(mode.min ?? 5, max);
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`max ${max}: at least 1`);
  if (!Number.isInteger(min) || min < 1) throw new RangeError(`min ${min}: at least 1`);
  const horizon = Math.max(Math.ceil(max / 2), min);
  const critical = criticalValue(stopLevel, horizon);
  return {
    kind: 'sequential',
    alpha,
    conversations,
    stopLevel,
    maxRounds: max,
    minRounds: min,
    horizon,
    critical,
    thresholds: crossingThresholds(critical, horizon),
    futility,
  };
}

/**
 * Predictive power: the chance that one direction crosses the boundary within `left` more
 * rounds, from `wins` of m discordant pairs, averaged over what the data so far say about the
 * unknown rates (Jeffreys priors, so Beta posteriors and Pólya-urn predictions):
 *
 * - the number J of discordant pairs among the `left` rounds is beta-binomial with
 *   Beta(m + ½, n − m + ½), n the judged pairs so far;
 * - each new discordant pair goes this direction's way with the urn probability
 *   (wins + w + ½)/(m + j + 1) after w of j new ones did.
 *
 * Every future round is a look (futility is only asked from round r0 on), and J is capped at
 * N − m. Exact, by DP over the walk, then averaged over J. Unlike the power under the point
 * estimates, it stays high while the data are few: five rounds of an 0.95 → 0.3 regression with
 * one pair each way are no reason to give up.
 */
export function predictivePower(wins: number, m: number, pairs: number, left: number, design: Design): number {
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

/**
 * The chance that the rule flags a regression in `rounds` rounds when the baseline passes with
 * probability `baseline` and the candidate with `candidate` (no errors), exactly, by DP over the
 * rounds: sequential with the boundary at α/K, looks from r0, stopping on either direction's
 * crossing and at the cap (futility is left out: it is not known in advance); `repeat` with the
 * fixed test at α/K after the rounds.
 */
export function regressionPower(design: Design, baseline: number, candidate: number, rounds: number): number {
  const win = baseline * (1 - candidate);
  const lose = (1 - baseline) * candidate;
  const horizon = Math.min(design.horizon, rounds);
  const width = horizon + 1;
  let grid = new Float64Array(width * width); // index S * width + C
  grid[0] = 1;
  let power = 0;
  for (let r = 1; r <= rounds; r++) {
    const next = new Float64Array(width * width);
    // Before round r at most r − 1 pairs are discordant: the cells beyond hold nothing yet.
    const before = Math.min(r - 1, horizon);
    for (let S = 0; S <= before; S++) {
      for (let C = 0; S + C <= before; C++) {
        const mass = grid[S * width + C]!;
        if (mass === 0) continue;
        if (S + C >= horizon) {
          next[S * width + C]! += mass;
          continue;
        }
        next[(S + 1) * width + C]! += mass * win;
        next[S * width + C + 1]! += mass * lose;
        next[S * width + C]! += mass * (1 - win - lose);
      }
    }
    grid = next;
    if (design.kind === 'sequential' && r >= design.minRounds) {
      const after = Math.min(r, horizon);
      for (let S = 0; S <= after; S++) {
        for (let C = 0; S + C <= after; C++) {
          const index = S * width + C;
          const mass = grid[index]!;
          if (mass === 0) continue;
          const m = S + C;
          if (S >= design.thresholds[m]!) power += mass;
          if (S >= design.thresholds[m]! || C >= design.thresholds[m]! || m >= design.horizon) grid[index] = 0;
        }
      }
    }
  }
  if (design.kind === 'repeat') {
    for (let S = 0; S <= horizon; S++) {
      for (let C = 0; S + C <= horizon; C++) if (fairTail(S + C, S) <= design.stopLevel) power += grid[S * width + C]!;
    }
  }
  return power;
}

/**
 * The detectable drop (see `ConversationVerdict.detectable_drop`): the smallest δ in steps of
 * 0.01 with power ≥ 0.8 at the baseline's rate p and the candidate's p − δ. Power is found by a
 * bisection (it grows with δ: a lower candidate rate only turns candidate passes into failures),
 * then checked one step down, so the answer is the smallest step meeting 0.8 even where
 * rounding makes the curve flat.
 *
 * Each power is a DP of up to R·N²/2 cells (3–31 ms at max_attempts 200, median 7.5) and a search takes
 * about nine: it yields to the event loop before each, so that the end of a long comparison
 * holds the pod's live conversations for one power at a time, never for the whole search.
 */
export async function detectableDrop(design: Design, baselineRate: number, rounds: number, target = 0.8): Promise<number | null> {
  const steps = Math.floor(baselineRate * 100 + 1e-9);
  const power = async (step: number): Promise<number> => {
    await new Promise((resolve) => setImmediate(resolve));
    return regressionPower(design, baselineRate, Math.max(0, baselineRate - step / 100), rounds);
  };
  if (steps < 1 || (await power(steps)) < target) return null;
  let low = 0; // power(low) < target (0: no drop, no power beyond α)
  let high = steps; // power(high) ≥ target
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if ((await power(middle)) >= target) high = middle;
    else low = middle;
  }
  while (high > 1 && (await power(high - 1)) >= target) high--;
  return high / 100;
}
