import { designGate, operatingCharacteristics, type Design } from './gate-design.js';

/**
 * A plan before the run: for K conversations, a baseline pass rate a user expects and the drop
 * they want caught, the sequential budget (`max_attempts`) whose rule catches that drop 80 % of
 * the time, what it spends (sessions expected when nothing changed and when every conversation
 * dropped so, and at most) and how long it takes at the run's concurrency. Exact: each figure is
 * the design's own DP (`operatingCharacteristics`), early stops included; no errors assumed.
 */

export interface PlanRequest {
  conversations: number;
  /** Default 0.95. */
  confidence?: number;
  /** The pass rate the baseline is expected to have (one for all conversations). */
  baselineRate: number;
  /** The drop to catch, in pass rate (0.2: from 0.9 to 0.7). */
  drop: number;
  /** Default 5. */
  minAttempts?: number;
  /** Conversations at once, both sides together (the suite's `concurrency`). */
  concurrency: number;
  /** How long one engine session takes, in seconds. */
  sessionSeconds: number;
}

export interface ComparisonPlan {
  /** The smallest `max_attempts` (≤ 200) whose rule catches the drop 80 % of the time; null when none does. */
  max_attempts: number | null;
  /** The chance to flag one conversation's drop at that budget. */
  power: number;
  /** Engine sessions, both sides: expected when nothing changed, expected when every conversation dropped, at most. */
  sessions: { unchanged: number; dropped: number; at_most: number };
  /** Wall time in seconds: expected when nothing changed, at most. */
  seconds: { unchanged: number; at_most: number };
}

/** The largest budget a plan considers (`max_attempts`' own limit). */
const LARGEST = 200;
const TARGET = 0.8;

/**
 * The plan for a request; throws a RangeError on a request out of range (rates in (0, 1], a drop
 * in (0, rate], K ≥ 1, concurrency ≥ 1, a session length > 0). Searching the budget designs a
 * gate per step (a bisection over 5…200: about eight), so it takes up to a few seconds.
 */
export function planComparison(request: PlanRequest): ComparisonPlan {
  const { conversations, baselineRate, drop, concurrency, sessionSeconds } = request;
  if (!(baselineRate > 0 && baselineRate <= 1)) throw new RangeError(`baseline rate ${baselineRate}: in (0, 1]`);
  if (!(drop > 0 && drop <= baselineRate)) throw new RangeError(`drop ${drop}: in (0, ${baselineRate}]`);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency ${concurrency}: at least 1`);
  if (!(sessionSeconds > 0)) throw new RangeError(`session length ${sessionSeconds}: more than 0 seconds`);
  const design = (max: number): Design =>
    designGate({
      confidence: request.confidence ?? 0.95,
      conversations,
      mode: { kind: 'sequential', min: request.minAttempts ?? 5, max },
    });
  const power = (max: number) => operatingCharacteristics(design(max), baselineRate, baselineRate - drop).power;
  const smallest = Math.min(request.minAttempts ?? 5, LARGEST);
  let chosen: number | null = null;
  if (power(LARGEST) >= TARGET) {
    let low = smallest - 1; // power below the target (or below the range)
    let high = LARGEST; // power at or above it
    while (high - low > 1) {
      const middle = (low + high) >> 1;
      if (power(middle) >= TARGET) high = middle;
      else low = middle;
    }
    chosen = high;
  }
  const max = chosen ?? LARGEST;
  const chosenDesign = design(max);
  const same = operatingCharacteristics(chosenDesign, baselineRate, baselineRate);
  const dropped = operatingCharacteristics(chosenDesign, baselineRate, baselineRate - drop);
  // Each round is two sessions one after the other (baseline, then candidate); conversations run
  // side by side up to the concurrency, both sides' sessions counting.
  const seconds = (rounds: number) => Math.max(2 * rounds, (2 * conversations * rounds) / concurrency) * sessionSeconds;
  return {
    max_attempts: chosen,
    power: dropped.power,
    sessions: {
      unchanged: 2 * conversations * same.expectedRounds,
      dropped: 2 * conversations * dropped.expectedRounds,
      at_most: 2 * conversations * max,
    },
    seconds: { unchanged: seconds(same.expectedRounds), at_most: seconds(max) },
  };
}
