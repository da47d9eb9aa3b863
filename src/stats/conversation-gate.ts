import { type Design, boundaryStatistic, crossing, futile } from './gate-design.js';
import { type Interval, passHatK, wilson } from './intervals.js';
import type { SuiteLook } from './suite.js';
import { barnardPValue, crossingProbability } from './unconditional.js';

/*
 * One conversation of the release gate: its rounds, each side's counts, whether it goes on, and its
 * p-values; the `Gate` (gate.ts) holds them all and gives Holm's verdicts.
 */

/** Why a conversation stopped; null while it should go on. */
export type ComparisonStop = 'decided' | 'futile' | 'budget';

export type Verdict = 'regressed' | 'fixed' | 'unchanged' | 'error';

/** One side's attempts of one conversation, as a report shows them. */
export interface SideSummary {
  /** Judged attempts (passed or failed). */
  attempts: number;
  passed: number;
  /** Attempts in `error`, left out of everything else. */
  errors: number;
  /** Pass rate with its 95 % Wilson interval; `rate` null without a judged attempt. */
  rate: number | null;
  low: number;
  high: number;
  /** pass^k for k = 1…min(attempts, 8) (element k − 1). */
  pass_hat_k: number[];
}

/** One conversation's outcome of a comparison. */
export interface ConversationVerdict {
  verdict: Verdict;
  /**
   * The one-sided p-value for "the candidate passes less often" (Barnard's, or the sequential
   * p-value in sequential mode); null for `error`.
   */
  p_regressed: number | null;
  /** The same for "the candidate passes more often". */
  p_fixed: number | null;
  /** What the smaller of the two p-values had to be at or below for a verdict (Holm's threshold at its rank). */
  p_needed: number | null;
  /** Candidate − baseline pass rate with Newcombe's 95 % interval; null for `error`. */
  difference: Interval | null;
  baseline: SideSummary;
  candidate: SideSummary;
  /** Discordant pairs (shown, no longer the test's only data): won by the baseline (`baseline_only` passed) and by the candidate. */
  discordant: { baseline_only: number; candidate_only: number };
  /**
   * For `unchanged`: the smallest drop of the pass rate (a fraction, in steps of 0.01) from the
   * baseline's observed rate that the rule as designed (its budget, its early stops, futility
   * included) flags with probability ≥ 0.8 at the stopping level α/K — what an early stop relied
   * on; for a conversation cut short (stop null), the rule run for the rounds it ran. Null when
   * even a drop to 0 would not be (or for other verdicts).
   */
  detectable_drop: number | null;
  /** Rounds run (each one attempt per side). */
  rounds: number;
  stop: ComparisonStop | null;
}

interface Side {
  attempts: number;
  passed: number;
  errors: number;
}

/**
 * One conversation of a comparison: feed it each round's two outcomes with `record`, stop when it
 * returns a reason. Create it with `Gate.conversation()`.
 */
export class ConversationGate {
  readonly #design: Design;
  #rounds = 0;
  #baseline: Side = { attempts: 0, passed: 0, errors: 0 };
  #candidate: Side = { attempts: 0, passed: 0, errors: 0 };
  /** Judged outcomes not yet paired (only one side's is ever non-empty). */
  #unpairedBaseline: boolean[] = [];
  #unpairedCandidate: boolean[] = [];
  /** Pairs, and the passes among them of each side: what the sequential rule reads. */
  #pairs = 0;
  #pairedBaseline = 0;
  #pairedCandidate = 0;
  #baselineOnly = 0;
  #candidateOnly = 0;
  /** The largest z_n/g(n) over the looks taken, each direction (the sequential p-values' statistic). */
  #largestRegressed = 0;
  #largestFixed = 0;
  #stop: ComparisonStop | null = null;
  /** The side the boundary was crossed to, once it was (a `decided` stop). */
  #crossed: 'regressed' | 'fixed' | null = null;
  /** After each round: the pairs and discordant pairs so far (what the suite's looks add up). */
  #history: SuiteLook[] = [];

  /** @internal Use `Gate.conversation()`. */
  constructor(design: Design) {
    this.#design = design;
  }

  /** Rounds recorded so far. */
  get rounds(): number {
    return this.#rounds;
  }

  /**
   * Why its own rule stops it, null while that rule goes on. `futile` is the one a conversation
   * may be kept going past, while the suite's test may yet find a regression (`Gate.goesOn`).
   */
  get stop(): ComparisonStop | null {
    return this.#stop;
  }

  /**
   * The side its boundary was crossed to when it stopped `decided`, else null. A crossing's
   * p-value is within the first step of `Gate.finalize`'s Holm procedure, so it is the verdict.
   */
  get crossed(): 'regressed' | 'fixed' | null {
    return this.#crossed;
  }

  /** Whether no round can follow: decided, or out of budget. */
  get finished(): boolean {
    return this.#stop === 'decided' || this.#stop === 'budget';
  }

  /** The pairs and discordant pairs after `round` rounds (all of them when it ran fewer). */
  after(round: number): SuiteLook {
    return this.#history[Math.min(round, this.#rounds) - 1] ?? { round: 0, pairs: 0, baselineOnly: 0, candidateOnly: 0 };
  }

  /** Discordant pairs so far: S (baseline only passed) and C (candidate only passed). */
  get discordant(): { baselineOnly: number; candidateOnly: number } {
    return { baselineOnly: this.#baselineOnly, candidateOnly: this.#candidateOnly };
  }

  /** Pairs so far and the passes among them of each side: the state the sequential rule goes on from. */
  get paired(): { pairs: number; baseline: number; candidate: number } {
    return { pairs: this.#pairs, baseline: this.#pairedBaseline, candidate: this.#pairedCandidate };
  }

  /**
   * One round: the baseline's and the candidate's attempt, `true` passed, `false` failed, `null`
   * in error. Returns whether its own rule stops the conversation here (and why); recording after
   * it was decided or ran out of budget throws.
   */
  record(baselinePassed: boolean | null, candidatePassed: boolean | null): { stop: ComparisonStop | null } {
    if (this.finished) throw new Error(`the conversation stopped (${this.#stop}): no more rounds`);
    const design = this.#design;
    this.#rounds++;
    tally(this.#baseline, baselinePassed, this.#unpairedBaseline);
    tally(this.#candidate, candidatePassed, this.#unpairedCandidate);
    while (this.#unpairedBaseline.length > 0 && this.#unpairedCandidate.length > 0) {
      const baseline = this.#unpairedBaseline.shift()!;
      const candidate = this.#unpairedCandidate.shift()!;
      this.#pairs++;
      if (baseline) this.#pairedBaseline++;
      if (candidate) this.#pairedCandidate++;
      if (baseline && !candidate) this.#baselineOnly++;
      if (candidate && !baseline) this.#candidateOnly++;
    }
    this.#history.push({ round: this.#rounds, pairs: this.#pairs, baselineOnly: this.#baselineOnly, candidateOnly: this.#candidateOnly });
    if (design.kind === 'repeat') {
      if (this.#rounds >= design.maxRounds) this.#stop = 'budget';
      return { stop: this.#stop };
    }
    const n = this.#pairs;
    if (n < design.minRounds) {
      if (this.#rounds >= design.maxRounds) this.#stop = 'budget';
      return { stop: this.#stop };
    }
    const [x, y] = [this.#pairedBaseline, this.#pairedCandidate];
    const statistic = boundaryStatistic(design, n, x, y);
    this.#largestRegressed = Math.max(this.#largestRegressed, statistic);
    this.#largestFixed = Math.max(this.#largestFixed, -statistic);
    this.#crossed = crossing(design, n, x, y);
    if (this.#crossed !== null) this.#stop = 'decided';
    else if (this.#rounds >= design.maxRounds) this.#stop = 'budget';
    else this.#stop = futile(design, n, x, y) ? 'futile' : null;
    return { stop: this.#stop };
  }

  /**
   * The two one-sided p-values as they stand (sequential p-values in sequential mode), or null
   * when a side has no judged attempt (the conversation cannot be compared). A sequential one
   * costs a DP over the design's looks the first time its statistic is seen (cached after).
   */
  pValues(): { regressed: number; fixed: number } | null {
    const baseline = this.#baseline;
    const candidate = this.#candidate;
    if (baseline.attempts === 0 || candidate.attempts === 0) return null;
    const design = this.#design;
    if (design.kind === 'repeat') {
      return {
        regressed: barnardPValue(baseline.attempts, baseline.passed, candidate.attempts, candidate.passed),
        fixed: barnardPValue(candidate.attempts, candidate.passed, baseline.attempts, baseline.passed),
      };
    }
    const pValue = (largest: number) => (largest > 0 ? crossingProbability(largest, design.minRounds, design.maxRounds) : 1);
    return { regressed: pValue(this.#largestRegressed), fixed: pValue(this.#largestFixed) };
  }

  /** A copy with the same state, to explore "what if" (the exact tests walk every path with it). */
  clone(): ConversationGate {
    const copy = new ConversationGate(this.#design);
    copy.#rounds = this.#rounds;
    copy.#baseline = { ...this.#baseline };
    copy.#candidate = { ...this.#candidate };
    copy.#unpairedBaseline = [...this.#unpairedBaseline];
    copy.#unpairedCandidate = [...this.#unpairedCandidate];
    copy.#pairs = this.#pairs;
    copy.#pairedBaseline = this.#pairedBaseline;
    copy.#pairedCandidate = this.#pairedCandidate;
    copy.#baselineOnly = this.#baselineOnly;
    copy.#candidateOnly = this.#candidateOnly;
    copy.#largestRegressed = this.#largestRegressed;
    copy.#largestFixed = this.#largestFixed;
    copy.#stop = this.#stop;
    copy.#crossed = this.#crossed;
    copy.#history = [...this.#history];
    return copy;
  }

  /** Each side's counts and pass rate as they stand: what `finalize` reports, and a live view shows once it stopped. */
  sides(): { baseline: SideSummary; candidate: SideSummary } {
    return { baseline: summarize(this.#baseline), candidate: summarize(this.#candidate) };
  }
}

function tally(side: Side, passed: boolean | null, unpaired: boolean[]): void {
  if (passed === null) {
    side.errors++;
    return;
  }
  side.attempts++;
  if (passed) side.passed++;
  unpaired.push(passed);
}

function summarize(side: Side): SideSummary {
  const { estimate, low, high } = wilson(side.passed, side.attempts);
  return { ...side, rate: estimate, low, high, pass_hat_k: passHatK(side.passed, side.attempts) };
}
