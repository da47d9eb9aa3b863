import {
  type Design,
  type GateOptions,
  boundaryStatistic,
  crossing,
  designGate,
  detectableDrop,
  futile,
  regressionPower,
} from './gate-design.js';
import { type Interval, newcombeDifference, passHatK, wilson } from './intervals.js';
import { barnardPValue, crossingProbability } from './unconditional.js';

/**
 * The release gate as the runner drives it: one `ConversationGate` per conversation, fed round by
 * round, and the `Gate` that turns them into Holm's verdicts. The rule itself, and the numbers
 * fixed before any round (boundary, futility, power), are in `gate-design.ts`.
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

  /** @internal Use `Gate.conversation()`. */
  constructor(design: Design) {
    this.#design = design;
  }

  /** Rounds recorded so far. */
  get rounds(): number {
    return this.#rounds;
  }

  /** Why it stopped, null while it goes on. */
  get stop(): ComparisonStop | null {
    return this.#stop;
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
   * in error. Returns whether the conversation stops here (and why); recording after a stop
   * throws.
   */
  record(baselinePassed: boolean | null, candidatePassed: boolean | null): { stop: ComparisonStop | null } {
    if (this.#stop !== null) throw new Error(`the conversation stopped (${this.#stop}): no more rounds`);
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
    if (crossing(design, n, x, y) !== null) this.#stop = 'decided';
    else if (this.#rounds >= design.maxRounds) this.#stop = 'budget';
    else if (futile(design, n, x, y)) this.#stop = 'futile';
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
    return copy;
  }

  /** @internal The summary `finalize` reports, before Holm. */
  summary(): { baseline: Side; candidate: Side; pairs: number } {
    return { baseline: { ...this.#baseline }, candidate: { ...this.#candidate }, pairs: this.#pairs };
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

/**
 * Holm's step-down procedure at level α: sort the p-values, reject the i-th smallest
 * (i = 0, 1, …) while it is ≤ α/(K − i), stop at the first that is not. Returns, per input,
 * whether it is rejected and the threshold it was held to (for those never reached, the
 * threshold of the step where the procedure stopped).
 */
export function holm(pValues: readonly number[], alpha: number): Array<{ rejected: boolean; threshold: number }> {
  const order = pValues.map((p, index) => ({ p, index })).sort((a, b) => a.p - b.p || a.index - b.index);
  const result = pValues.map(() => ({ rejected: false, threshold: 0 }));
  let stopped: number | null = null;
  order.forEach(({ p, index }, rank) => {
    const threshold = stopped ?? alpha / (pValues.length - rank);
    if (stopped === null && p <= threshold) result[index] = { rejected: true, threshold };
    else {
      stopped = threshold;
      result[index] = { rejected: false, threshold };
    }
  });
  return result;
}

/** A comparison's decision rule: hands out one `ConversationGate` per conversation and turns them into verdicts. */
export class Gate {
  readonly #design: Design;
  /** Detectable drops found so far, by baseline rate and rounds. */
  readonly #drops = new Map<string, Promise<number | null>>();

  /** @internal Use `createGate`. */
  constructor(design: Design) {
    this.#design = design;
  }

  /** `repeat`: exactly `maxRounds` rounds, tested once; `sequential`: rounds until each conversation is decided. */
  get mode(): 'repeat' | 'sequential' {
    return this.#design.kind;
  }

  /** α = 1 − confidence: the comparison's false-alarm rate at most. */
  get alpha(): number {
    return this.#design.alpha;
  }

  /** α/K: where a conversation stops as decided. */
  get stopLevel(): number {
    return this.#design.stopLevel;
  }

  /** Rounds per conversation at most (the budget: each round is one attempt per side). */
  get maxRounds(): number {
    return this.#design.maxRounds;
  }

  /** Rounds before which no conversation stops. */
  get minRounds(): number {
    return this.#design.minRounds;
  }

  /**
   * The smallest drop from a baseline pass rate that the rule, run for `rounds` rounds, flags
   * with probability ≥ 0.8 (see `ConversationVerdict.detectable_drop`); null if none.
   */
  detectableDrop(baselineRate: number, rounds: number): Promise<number | null> {
    // Conversations often share a baseline rate and a length: each drop is found once.
    const key = `${baselineRate} ${rounds}`;
    if (!this.#drops.has(key)) this.#drops.set(key, detectableDrop(this.#design, baselineRate, rounds));
    return this.#drops.get(key)!;
  }

  /** A new conversation's state. */
  conversation(): ConversationGate {
    return new ConversationGate(this.#design);
  }

  /** The chance of a regressed verdict at stopping level for given pass rates over `rounds` rounds (see `regressionPower`). */
  power(baseline: number, candidate: number, rounds = this.#design.maxRounds): number {
    return regressionPower(this.#design, baseline, candidate, rounds);
  }

  /**
   * The verdicts of a finished comparison (or of one cut short: each conversation as far as it
   * got), in the order given. Holm's procedure runs over the conversations given that can be
   * compared. Asynchronous only because the detectable drops yield to the event loop while they
   * are searched (see `detectableDrop`).
   */
  async finalize(conversations: readonly ConversationGate[]): Promise<ConversationVerdict[]> {
    const design = this.#design;
    const pValues: Array<{ regressed: number; fixed: number } | null> = [];
    for (const conversation of conversations) {
      // A sequential p-value is a DP over the design's looks (up to about 0.2 s at max_attempts 200): one per turn of the loop.
      await new Promise((resolve) => setImmediate(resolve));
      pValues.push(conversation.pValues());
    }
    const comparable = pValues.flatMap((p, index) => (p ? [{ index, p }] : []));
    const regressed = holm(
      comparable.map(({ p }) => p.regressed),
      design.alpha,
    );
    const fixed = holm(
      comparable.map(({ p }) => p.fixed),
      design.alpha,
    );
    const decided = new Map<number, { verdict: Verdict; needed: number }>();
    comparable.forEach(({ index, p }, position) => {
      const down = regressed[position]!;
      const up = fixed[position]!;
      // Both directions at once cannot happen in a fixed design (the two p-values sum to more
      // than 1) and needs a path that swung from one extreme to the other in a sequential one;
      // then the stronger evidence decides.
      let verdict: Verdict = 'unchanged';
      if (down.rejected && (!up.rejected || p.regressed <= p.fixed)) verdict = 'regressed';
      else if (up.rejected) verdict = 'fixed';
      const needed = verdict === 'fixed' || (verdict === 'unchanged' && p.fixed < p.regressed) ? up.threshold : down.threshold;
      decided.set(index, { verdict, needed });
    });
    // One conversation after another: searches run side by side would each take a power per
    // turn of the loop, and hold it for all of them at once.
    const verdicts: ConversationVerdict[] = [];
    for (const [index, conversation] of conversations.entries()) {
      const { baseline, candidate } = conversation.summary();
      const p = pValues[index];
      const outcome = decided.get(index);
      const verdict = outcome?.verdict ?? 'error';
      const { baselineOnly, candidateOnly } = conversation.discordant;
      const baselineRate = baseline.passed / baseline.attempts;
      verdicts.push({
        verdict,
        p_regressed: p?.regressed ?? null,
        p_fixed: p?.fixed ?? null,
        p_needed: outcome?.needed ?? null,
        difference: newcombeDifference(candidate, baseline),
        baseline: summarize(baseline),
        candidate: summarize(candidate),
        discordant: { baseline_only: baselineOnly, candidate_only: candidateOnly },
        detectable_drop:
          verdict === 'unchanged'
            ? await this.detectableDrop(baselineRate, conversation.stop === null ? conversation.rounds : design.maxRounds)
            : null,
        rounds: conversation.rounds,
        stop: conversation.stop,
      });
    }
    return verdicts;
  }
}

function summarize(side: Side): SideSummary {
  const { estimate, low, high } = wilson(side.passed, side.attempts);
  return { ...side, rate: estimate, low, high, pass_hat_k: passHatK(side.passed, side.attempts) };
}

/**
 * The rule for one comparison. `conversations` is K; `mode` picks the fixed or the sequential
 * design. Throws a RangeError on options out of range (see `designGate`).
 */
export function createGate(options: GateOptions): Gate {
  return new Gate(designGate(options));
}
