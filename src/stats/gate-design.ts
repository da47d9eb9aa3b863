import { normalCdf } from './intervals.js';
import { designSuite, type SuiteDesign } from './suite.js';
import { boundaryShape, criticalSearch, crossingTable, finish, finishYielding, pooledZ } from './unconditional.js';

/**
 * The release gate's decision rule, driven round by round by the runner.
 *
 * A comparison runs K conversations. Each conversation runs rounds; a round is one baseline
 * attempt and one candidate attempt (interleaved, as the runner already does). Per conversation:
 *
 * - **Data.** Attempts in `error` are left out (counted apart). Every judged attempt counts: when
 *   both revisions pass with the same probability p, all of them, on either side, are independent
 *   passes with probability p (the sessions of a round are independent; the pairing schedules
 *   them). The test is exact and unconditional: its false-alarm rate is held at the supremum over
 *   the unknown p (`unconditional.ts`). (It assumes whether an attempt errs does not depend on
 *   whether it would have passed.)
 * - **`repeat: N`** (fixed design): exactly N rounds, one look at the end, Barnard's one-sided
 *   p-values (pooled z) on each side's judged attempts, for a regression and for a fix.
 * - **Sequential** (`min_attempts` r0, `max_attempts` R): the k-th judged baseline attempt is
 *   paired with the k-th judged candidate attempt; after every round, from n = r0 pairs on, the
 *   pooled z of the n pairs' passes is held against the boundary C·(n/R)^(Δ − ½), Δ = 0.25 (between
 *   Pocock's flat boundary and O'Brien and Fleming's steep one), C calibrated exactly for the
 *   conversation's level α(1 − s)/K (s the suite test's share of α, `suite.ts`; α/K without it)
 *   over the looks n = r0…R at the supremum over p. Each direction on its own. A conversation stops:
 *   - `decided` when either direction crosses: at its Bonferroni level, which Holm's first step
 *     rejects anything at, so the final Holm verdict keeps every early decision;
 *   - `budget` after R rounds;
 *   - `futile` when, in both directions, the predictive power of crossing at the last look is
 *     below the futility threshold (default 0.04): the chance, averaged over what the pairs so far
 *     say about the difference (a flat prior, the normal approximation of the z's path), that the
 *     final z reaches C (Spiegelhalter, Freedman and Blackburn 1986: Φ((z − C√t)/√(1 − t)), t = n/R).
 *     Futility only ever stops a conversation without a rejection, so it cannot raise a false alarm
 *     (the boundary does not count on it); being a function of the counts alone, it is part of every
 *     power the gate computes. The boundary's shape and the threshold are the exact trade-off in
 *     docs/decisions.md (power for 0.9 → 0.6 at R = 60, K = 10: 0.859 alone, 0.823 beside the
 *     suite's test). A futile conversation still plays while the suite's test may yet find a
 *     regression (`Gate.goesOn`, `suiteFutile`): its own looks go on, which the boundary's
 *     calibration already covers.
 *   No conversation is looked at before r0 pairs (fewer looks only lower the crossing probability).
 * - **Verdicts** (`finalize`): Holm's step-down at α, weighted, over the regression p-values of
 *   the conversations that can be compared (weight (1 − s)/K each) and of the suite's test
 *   (weight s) → `regressed`; separately over the fix p-values → `fixed`; else `unchanged`.
 *   A conversation with no judged attempt on a side is `error` and
 *   is left out of Holm's count (its p-value does not exist; leaving it out only lowers the
 *   others' thresholds' divisor, and every conversation's stopping level used the full K,
 *   which is stricter). Holm keeps the chance of any false `regressed`, a conversation's or the
 *   suite's, ≤ α for any number of conversations (and is valid under any dependence between them).
 */

/** How a comparison spends attempts: `repeat` exactly N rounds; `sequential` from `min` (default 5) up to `max` rounds. */
export type GateMode = { kind: 'repeat'; attempts: number } | { kind: 'sequential'; min?: number; max: number };

export interface GateOptions {
  /** 1 − the false-alarm rate of the whole comparison; default 0.95. */
  confidence?: number;
  /** K: how many conversations the comparison compares (the divisor of the stopping level). */
  conversations: number;
  mode: GateMode;
  /** Futility threshold on predictive power (sequential only); default 0.04, 0 turns futility off. */
  futility?: number;
  /**
   * The suite test's share of α (`suite.ts`), the rest split evenly over the conversations; default
   * 0.4 (docs/decisions.md has the trade-off), 0 turns the suite's test off. None with one conversation.
   */
  suiteShare?: number;
}

/** The futility threshold a sequential comparison uses unless told otherwise (docs/decisions.md has the trade-off). */
const DEFAULT_FUTILITY = 0.04;

/** The suite test's share of α unless told otherwise (docs/decisions.md has the trade-off). */
const DEFAULT_SUITE_SHARE = 0.4;

/**
 * The suite's futility threshold, on the predictive power of a regression (`suiteFutile`): above
 * the conversations' own, so that identical revisions spend at most half the budget
 * (docs/decisions.md has the trade-off, measured by `npm run bench:gate`).
 */
const SUITE_FUTILITY = 0.05;

/**
 * The numbers fixed once per comparison, before any round: what every conversation's state and
 * the verdicts read. Built by `designGate`, shared by `Gate` and its `ConversationGate`s.
 */
export interface Design {
  readonly kind: 'repeat' | 'sequential';
  readonly alpha: number;
  readonly conversations: number;
  /** A conversation's share of α, α(1 − suite share)/K: its Bonferroni level, where it stops as decided. */
  readonly stopLevel: number;
  /** The suite's own test (its share of α, its boundary); null with one conversation or a share of 0. */
  readonly suite: SuiteDesign | null;
  /** Rounds at most (R, or N for `repeat`): also the pairs at most, the boundary's last look. */
  readonly maxRounds: number;
  /** r0 (sequential); equal to maxRounds for `repeat`. The boundary's first look, in pairs. */
  readonly minRounds: number;
  /** C(α/K, r0, R): where z_n/g(n) decides (Infinity: nothing can be decided at this level). */
  readonly critical: number;
  /** C as a table of the smallest x − y that crosses, by pairs n and passes s (`crossingTable`). */
  readonly table: readonly Int32Array[];
  readonly futility: number;
  /** Where the suite no longer keeps a futile conversation playing (`suiteFutile`); 0 with futility off. */
  readonly suiteFutility: number;
}

/**
 * The design for one comparison's options, checked once here so that everything downstream can
 * trust it. Throws a RangeError on options out of range (confidence in (0, 1), K ≥ 1, 1 ≤ min ≤
 * max, attempts ≥ 1, futility in [0, 1)).
 */
export function designGate(options: GateOptions): Design {
  return finish(designSteps(options));
}

/**
 * `designGate` letting the event loop turn between the steps of the boundary's search (at
 * `max_attempts: 200` about a second in all): for a plan asked of the service.
 */
export function designGateYielding(options: GateOptions): Promise<Design> {
  return finishYielding(designSteps(options));
}

function* designSteps(options: GateOptions): Generator<void, Design> {
  const confidence = options.confidence ?? 0.95;
  const { conversations, mode } = options;
  const futility = options.futility ?? DEFAULT_FUTILITY;
  const share = conversations > 1 ? (options.suiteShare ?? DEFAULT_SUITE_SHARE) : 0;
  if (!(confidence > 0 && confidence < 1)) throw new RangeError(`confidence ${confidence}: between 0 and 1`);
  if (!Number.isInteger(conversations) || conversations < 1) throw new RangeError(`conversations ${conversations}: at least 1`);
  if (!(futility >= 0 && futility < 1)) throw new RangeError(`futility ${futility}: in [0, 1)`);
  if (!(share >= 0 && share < 1)) throw new RangeError(`suiteShare ${share}: in [0, 1)`);
  const alpha = 1 - confidence;
  const stopLevel = (alpha * (1 - share)) / conversations;
  const max = mode.kind === 'repeat' ? mode.attempts : mode.max;
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`${mode.kind === 'repeat' ? 'attempts' : 'max'} ${max}: at least 1`);
  const min = mode.kind === 'repeat' ? max : Math.min(mode.min ?? 5, max);
  if (!Number.isInteger(min) || min < 1) throw new RangeError(`min ${min}: at least 1`);
  const critical = yield* criticalSearch(stopLevel, min, max);
  return {
    kind: mode.kind,
    alpha,
    conversations,
    stopLevel,
    suite: designSuite(mode.kind, alpha * share, conversations, max),
    maxRounds: max,
    minRounds: min,
    critical,
    table: crossingTable(critical, min, max),
    futility: mode.kind === 'repeat' ? 0 : futility,
    suiteFutility: mode.kind === 'repeat' || futility === 0 ? 0 : SUITE_FUTILITY,
  };
}

/** Which way n pairs with x baseline and y candidate passes cross the design's boundary, if any. */
export function crossing(design: Design, n: number, x: number, y: number): 'regressed' | 'fixed' | null {
  const needed = design.table[n]![x + y]!;
  if (x - y >= needed) return 'regressed';
  if (y - x >= needed) return 'fixed';
  return null;
}

/** z_n/g(n): where the pairs stand against the boundary's shape (C decides). */
export function boundaryStatistic(design: Design, n: number, x: number, y: number): number {
  return pooledZ(n, x, n, y) / boundaryShape(n, design.maxRounds);
}

/**
 * Whether a sequential conversation at n pairs (x and y passes, no crossing) stops as futile: the
 * predictive power Φ((±z − C√t)/√(1 − t)), t = n/R, is below the threshold in both directions.
 * Never at or after the last look, never before the first, never when futility is off; at the
 * first look when the boundary is out of reach of every count.
 */
export function futile(design: Design, n: number, x: number, y: number): boolean {
  if (design.futility === 0 || n < design.minRounds || n >= design.maxRounds) return false;
  // A boundary no count can reach: nothing left to hope for.
  if (!Number.isFinite(design.critical)) return true;
  const t = n / design.maxRounds;
  const z = pooledZ(n, x, n, y);
  const reach = design.critical * Math.sqrt(t);
  const spread = Math.sqrt(1 - t);
  return normalCdf((z - reach) / spread) < design.futility && normalCdf((-z - reach) / spread) < design.futility;
}

/**
 * The chance that the rule flags a regression in `rounds` rounds (at most R) when the baseline
 * passes with probability `baseline` and the candidate with `candidate` (no errors), exactly, by
 * DP over the pairs' counts (x, y): looks from r0 on, stopping on either direction's crossing and
 * on futility (the rule's own stops, so this is the power the rule has, early stops included);
 * `repeat` is the one look at N.
 */
export function regressionPower(design: Design, baseline: number, candidate: number, rounds: number): number {
  return operatingCharacteristics(design, baseline, candidate, rounds).power;
}

/** The power (see `regressionPower`) and the rounds the rule runs on average, from one DP. */
export function operatingCharacteristics(
  design: Design,
  baseline: number,
  candidate: number,
  rounds = design.maxRounds,
): { power: number; expectedRounds: number } {
  const last = Math.min(rounds, design.maxRounds);
  const width = last + 1;
  let grid = new Float64Array(width * width); // index x * width + y
  let next = new Float64Array(width * width);
  grid[0] = 1;
  const outcomes = [
    (1 - baseline) * (1 - candidate),
    baseline * (1 - candidate),
    (1 - baseline) * candidate,
    baseline * candidate,
  ] as const;
  let power = 0;
  let expectedRounds = 0;
  for (let n = 1; n <= last; n++) {
    next.fill(0, 0, (n + 1) * width);
    for (let x = 0; x < n; x++) {
      for (let y = 0; y < n; y++) {
        const mass = grid[x * width + y]!;
        if (mass === 0) continue;
        next[x * width + y]! += mass * outcomes[0];
        next[(x + 1) * width + y]! += mass * outcomes[1];
        next[x * width + y + 1]! += mass * outcomes[2];
        next[(x + 1) * width + y + 1]! += mass * outcomes[3];
      }
    }
    [grid, next] = [next, grid];
    if (n < design.minRounds) continue;
    for (let x = 0; x <= n; x++) {
      for (let y = 0; y <= n; y++) {
        const index = x * width + y;
        const mass = grid[index]!;
        if (mass === 0) continue;
        const crossed = crossing(design, n, x, y);
        if (crossed === 'regressed') power += mass;
        if (crossed !== null || futile(design, n, x, y)) {
          expectedRounds += mass * n;
          grid[index] = 0;
        }
      }
    }
  }
  for (const mass of grid) expectedRounds += mass * last;
  return { power, expectedRounds };
}

/**
 * The detectable drop (see `ConversationVerdict.detectable_drop`): the smallest δ in steps of
 * 0.01 with power ≥ 0.8 at the baseline's rate p and the candidate's p − δ, the rule's early stops
 * (futility included) counted as they are. Power is found by a bisection (it grows with δ: a lower
 * candidate rate only turns candidate passes into failures), then checked one step down, so the
 * answer is the smallest step meeting 0.8 even where rounding makes the curve flat.
 *
 * Each power is a DP of up to R³/3 cells (about 30 ms at max_attempts 200) and a search takes
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
