import { ConversationGate, type ComparisonStop, type ConversationVerdict, type Verdict } from './conversation-gate.js';
import { type Design, type GateOptions, designGate, detectableDrop, regressionPower } from './gate-design.js';
import { type Interval, newcombeDifference } from './intervals.js';
import { pooledDifference, suiteCrossing, suiteFutile, suitePValues, type SuiteLook } from './suite.js';

/**
 * The release gate as the runner drives it: one `ConversationGate` per conversation
 * (conversation-gate.ts), fed round by round, and the `Gate` that turns them and the suite's test
 * into Holm's verdicts. The rule itself, and the numbers
 * fixed before any round (boundary, futility, power), are in `gate-design.ts`.
 */

/**
 * Holm's step-down procedure at level α, weighted (Holm 1979): hypothesis j carries weight w_j
 * (default 1 each). Among those not yet rejected, the one with the smallest p_j/w_j is rejected
 * while p_j ≤ α·w_j/W, W the remaining weight; stop at the first that is not. Equal weights give
 * the usual α/(K − i). Returns, per input, whether it is rejected and the threshold it was held to
 * (for those never reached, the threshold at the step where the procedure stopped).
 */
export function holm(
  pValues: readonly number[],
  alpha: number,
  weights: readonly number[] = pValues.map(() => 1),
): Array<{ rejected: boolean; threshold: number }> {
  const order = pValues
    .map((p, index) => ({ p, index, weight: weights[index]! }))
    .sort((a, b) => a.p / a.weight - b.p / b.weight || a.index - b.index);
  const result = pValues.map(() => ({ rejected: false, threshold: 0 }));
  let remaining = weights.reduce((sum, weight) => sum + weight, 0);
  let stopped = false;
  for (const { p, index, weight } of order) {
    const threshold = (alpha * weight) / remaining;
    if (!stopped && p <= threshold) {
      result[index] = { rejected: true, threshold };
      remaining -= weight;
    } else {
      stopped = true;
      result[index] = { rejected: false, threshold };
    }
  }
  return result;
}

/** The suite's outcome of a comparison: the test over all conversations together (`suite.ts`). */
export interface SuiteVerdict {
  verdict: Verdict;
  /** The one-sided p-values (sequential, or the exact sign test for `repeat`): the candidate worse, better. */
  p_regressed: number;
  p_fixed: number;
  /** What the smaller had to be at or below (Holm's threshold at its rank, the suite's weight). */
  p_needed: number;
  /** Candidate − baseline over every conversation's pairs, with its 95 % interval (`pooledDifference`). */
  difference: Interval | null;
  pairs: number;
  discordant: { baseline_only: number; candidate_only: number };
  /** `decided` when its boundary was crossed, `futile` when out of reach, `budget` when the conversations ran out; null if cut short. */
  stop: ComparisonStop | null;
}

/** A comparison's verdicts: each conversation's, in the order handed out, and the suite's (null with one conversation). */
export interface Verdicts {
  conversations: ConversationVerdict[];
  suite: SuiteVerdict | null;
}

/**
 * A comparison's decision rule: hands out one `ConversationGate` per conversation (in the suite's
 * order), says whether each goes on, and turns them into verdicts. Its state is a function of the
 * rounds recorded on its conversations: each conversation's in order, whatever the order between
 * conversations (the suite looks at round ends), so a comparison moved to another pod rebuilds it
 * by replaying them.
 */
export class Gate {
  readonly #design: Design;
  readonly #conversations: ConversationGate[] = [];
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

  /** α(1 − suite share)/K: where a conversation stops as decided. */
  get stopLevel(): number {
    return this.#design.stopLevel;
  }

  /** The suite test's level (its share of α), null when it has none (one conversation). */
  get suiteLevel(): number | null {
    return this.#design.suite?.level ?? null;
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

  /** The next conversation's state (the i-th call is conversation i). */
  conversation(): ConversationGate {
    const conversation = new ConversationGate(this.#design);
    this.#conversations.push(conversation);
    return conversation;
  }

  /** A copy with every conversation's state, to explore "what if" (the exact tests walk every path with it). */
  clone(): Gate {
    const copy = new Gate(this.#design);
    for (const conversation of this.#conversations) copy.#conversations.push(conversation.clone());
    return copy;
  }

  /** The i-th conversation's state. */
  state(index: number): ConversationGate {
    return this.#conversations[index]!;
  }

  /**
   * Whether conversation `index` plays another round: while its own rule goes on; past its own
   * futility stop, while the suite's test is still open at its round, a regression of the suite
   * within reach (it needs the attempts); never once it is decided or out of budget.
   */
  goesOn(index: number): boolean {
    const conversation = this.#conversations[index]!;
    if (conversation.stop === null) return true;
    return conversation.stop === 'futile' && this.#suiteOpen(conversation.rounds);
  }

  /**
   * Whether the suite's test is open at the end of `round` (neither crossed nor a regression out
   * of reach: `suiteFutile`), on the look a conversation at that round reads (`suiteLook`).
   */
  #suiteOpen(round: number): boolean {
    const design = this.#design;
    const suite = design.suite;
    if (suite === null || design.kind === 'repeat') return false;
    const { look, roundsLeft } = this.suiteLook(round);
    if (suiteCrossing(suite, look) !== null) return false;
    return round < design.minRounds || !suiteFutile(suite, look, roundsLeft, design.suiteFutility);
  }

  /**
   * The suite's walk at the end of `round` on the pairs of rounds ≤ `round` recorded so far — a
   * conversation running behind adds what it has — and the rounds the conversations not finished
   * have left (each adds at most one pair). A conversation's next round is thus decided on rounds
   * before it only (what the fair-coin argument needs), without waiting for the slowest one.
   */
  suiteLook(round: number): { look: SuiteLook; roundsLeft: number } {
    const look: SuiteLook = { round, pairs: 0, baselineOnly: 0, candidateOnly: 0 };
    let roundsLeft = 0;
    for (const conversation of this.#conversations) {
      const at = conversation.after(round);
      look.pairs += at.pairs;
      look.baselineOnly += at.baselineOnly;
      look.candidateOnly += at.candidateOnly;
      if (!conversation.finished) roundsLeft += this.#design.maxRounds - Math.min(round, conversation.rounds);
    }
    return { look, roundsLeft };
  }

  /** The chance of a regressed verdict at stopping level for given pass rates over `rounds` rounds (see `regressionPower`). */
  power(baseline: number, candidate: number, rounds = this.#design.maxRounds): number {
    return regressionPower(this.#design, baseline, candidate, rounds);
  }

  /** The suite's looks, one per round end, over every conversation's pairs of the rounds up to it. */
  #looks(): SuiteLook[] {
    const conversations = this.#conversations;
    const last = Math.max(0, ...conversations.map((c) => c.rounds));
    return Array.from({ length: last }, (_, r) => {
      const look: SuiteLook = { round: r + 1, pairs: 0, baselineOnly: 0, candidateOnly: 0 };
      for (const conversation of conversations) {
        const at = conversation.after(r + 1);
        look.pairs += at.pairs;
        look.baselineOnly += at.baselineOnly;
        look.candidateOnly += at.candidateOnly;
      }
      return look;
    });
  }

  /**
   * The verdicts of a finished comparison (or of one cut short: each conversation as far as it
   * got). Holm's procedure, weighted, runs over the conversations that can be compared and the
   * suite's test: each conversation weighs (1 − suite share)/K, the suite its share, so that the
   * chance of any false `regressed`, at either level, is at most α. Asynchronous only because the
   * detectable drops yield to the event loop while they are searched (see `detectableDrop`).
   */
  async finalize(): Promise<Verdicts> {
    const design = this.#design;
    const conversations = this.#conversations;
    const pValues: Array<{ regressed: number; fixed: number } | null> = [];
    for (const conversation of conversations) {
      // A sequential p-value is a DP over the design's looks (up to about 0.2 s at max_attempts 200): one per turn of the loop.
      await new Promise((resolve) => setImmediate(resolve));
      pValues.push(conversation.pValues());
    }
    const looks = this.#looks();
    const final = looks.at(-1);
    const suite = design.suite !== null && final !== undefined && final.pairs > 0 ? suitePValues(design.suite, looks) : null;
    const decided = decide(pValues, suite, design);
    const verdicts: ConversationVerdict[] = [];
    // One conversation after another: searches run side by side would each take a power per
    // turn of the loop, and hold it for all of them at once.
    for (const [index, conversation] of conversations.entries()) {
      const { baseline, candidate } = conversation.sides();
      const p = pValues[index];
      const outcome = decided.conversations[index];
      const verdict = outcome?.verdict ?? 'error';
      const { baselineOnly, candidateOnly } = conversation.discordant;
      const baselineRate = baseline.passed / baseline.attempts;
      verdicts.push({
        verdict,
        p_regressed: p?.regressed ?? null,
        p_fixed: p?.fixed ?? null,
        p_needed: outcome?.needed ?? null,
        difference: newcombeDifference(candidate, baseline),
        baseline,
        candidate,
        discordant: { baseline_only: baselineOnly, candidate_only: candidateOnly },
        detectable_drop:
          verdict === 'unchanged'
            ? await this.detectableDrop(baselineRate, conversation.stop === null ? conversation.rounds : design.maxRounds)
            : null,
        rounds: conversation.rounds,
        stop: conversation.stop,
      });
    }
    if (design.suite === null) return { conversations: verdicts, suite: null };
    const cutShort = conversations.some((c) => c.stop === null);
    // Decided at a look that crossed; out of reach when it let a futile conversation stop; else the conversations ran out.
    const suiteStop = this.suiteCrossed() !== null ? 'decided' : conversations.some((c) => c.stop === 'futile') ? 'futile' : 'budget';
    const strata = conversations.map((c) => c.after(c.rounds));
    const totals = final ?? { pairs: 0, baselineOnly: 0, candidateOnly: 0 };
    return {
      conversations: verdicts,
      suite: {
        verdict: decided.suite?.verdict ?? 'error',
        p_regressed: suite?.regressed ?? 1,
        p_fixed: suite?.fixed ?? 1,
        p_needed: decided.suite?.needed ?? design.suite.level,
        difference: pooledDifference(strata),
        pairs: totals.pairs,
        discordant: { baseline_only: totals.baselineOnly, candidate_only: totals.candidateOnly },
        stop: cutShort ? null : suiteStop,
      },
    };
  }

  /** Which way the suite's boundary was crossed at a look, if it was (what its Bonferroni level decides, cheaply). */
  suiteCrossed(): 'regressed' | 'fixed' | null {
    const suite = this.#design.suite;
    if (suite === null) return null;
    for (const look of this.#looks()) {
      const crossed = suiteCrossing(suite, look);
      if (crossed !== null) return crossed;
    }
    return null;
  }

  /** The verdicts alone, without the report's numbers (what the exact tests enumerate): see `finalize`. */
  decide(): { conversations: Array<Verdict>; suite: Verdict | null } {
    const design = this.#design;
    const pValues = this.#conversations.map((c) => c.pValues());
    const looks = this.#looks();
    const final = looks.at(-1);
    const suite = design.suite !== null && final !== undefined && final.pairs > 0 ? suitePValues(design.suite, looks) : null;
    const decided = decide(pValues, suite, design);
    return {
      conversations: this.#conversations.map((_, index) => decided.conversations[index]?.verdict ?? 'error'),
      suite: design.suite === null ? null : (decided.suite?.verdict ?? 'error'),
    };
  }
}

interface Decided {
  verdict: Verdict;
  needed: number;
}

/**
 * Weighted Holm over the conversations that can be compared (p-values not null) and the suite
 * (when it has a test), once for "regressed" and once for "fixed": the verdict of each, and the
 * threshold its smaller p-value was held to.
 */
function decide(
  pValues: ReadonlyArray<{ regressed: number; fixed: number } | null>,
  suite: { regressed: number; fixed: number } | null,
  design: Design,
): { conversations: Array<Decided | undefined>; suite: Decided | undefined } {
  const share = design.suite?.level ?? 0;
  const tested = pValues.flatMap((p, index) => (p ? [{ index, p, weight: design.stopLevel }] : []));
  if (suite !== null) tested.push({ index: -1, p: suite, weight: share });
  const weights = tested.map(({ weight }) => weight);
  const regressed = holm(
    tested.map(({ p }) => p.regressed),
    design.alpha,
    weights,
  );
  const fixed = holm(
    tested.map(({ p }) => p.fixed),
    design.alpha,
    weights,
  );
  const conversations: Array<Decided | undefined> = pValues.map(() => undefined);
  let suiteDecided: Decided | undefined;
  tested.forEach(({ index, p }, position) => {
    const down = regressed[position]!;
    const up = fixed[position]!;
    // Both directions at once cannot happen in a fixed design (the two p-values sum to more
    // than 1) and needs a path that swung from one extreme to the other in a sequential one;
    // then the stronger evidence decides.
    let verdict: Verdict = 'unchanged';
    if (down.rejected && (!up.rejected || p.regressed <= p.fixed)) verdict = 'regressed';
    else if (up.rejected) verdict = 'fixed';
    const needed = verdict === 'fixed' || (verdict === 'unchanged' && p.fixed < p.regressed) ? up.threshold : down.threshold;
    if (index < 0) suiteDecided = { verdict, needed };
    else conversations[index] = { verdict, needed };
  });
  return { conversations, suite: suiteDecided };
}

/**
 * The rule for one comparison. `conversations` is K; `mode` picks the fixed or the sequential
 * design. Throws a RangeError on options out of range (see `designGate`).
 */
export function createGate(options: GateOptions): Gate {
  return new Gate(designGate(options));
}
