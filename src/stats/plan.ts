import { designGateYielding, detectableDrop, operatingCharacteristics, type Design, type GateMode } from './gate-design.js';

/**
 * A plan before the run: for K conversations, the pass rate a user expects of each on the
 * baseline and the drop they want caught, the sequential budget (`max_attempts`) whose rule
 * catches that drop in every conversation 80 % of the time, what it spends (sessions expected when
 * nothing changed and when every conversation dropped so, and at most) and how long it takes at
 * the run's concurrency. Or the other way round (`planBudget`): what a budget catches. Exact:
 * each figure is the design's own DP (`operatingCharacteristics`), early stops included; no
 * errors assumed. Asynchronous: the event loop turns between designs and DPs (a plan is asked of
 * the service too), each at most a few tens of milliseconds at budgets up to 200.
 */

export interface PlanRequest {
  /** The pass rate each conversation's baseline is expected to have (K = how many). */
  baselineRates: readonly number[];
  /** The drop to catch, in pass rate (0.2: from 0.9 to 0.7; a rate below it to 0). */
  drop: number;
  /** Default 0.95. */
  confidence?: number;
  /** Default 5. */
  minAttempts?: number;
  /** Conversations at once, both sides together (the suite's `concurrency`). */
  concurrency: number;
  /** How long one engine session takes, in seconds. */
  sessionSeconds: number;
  /** Where `sessionSeconds` comes from, said in the line: given (default), measured in a report, or assumed. */
  sessionTime?: SessionTime;
  /**
   * Each conversation's own session length (seconds, one per baseline rate) where a report
   * measured it: its rounds take that long. `sessionSeconds` (their mean) for the others.
   */
  sessionSecondsEach?: readonly number[];
}

/** Where a plan's session length comes from: the caller's, a report's mean session, or the default. */
export type SessionTime = 'given' | 'measured' | 'assumed';

/** What a budget spends: engine sessions (both sides) and wall time in seconds. */
export interface Spending {
  /** Expected when nothing changed, expected when every conversation dropped, at most. */
  sessions: { unchanged: number; dropped: number; at_most: number };
  /** Expected when nothing changed, at most. */
  seconds: { unchanged: number; at_most: number };
}

export interface ComparisonPlan extends Spending {
  /** The smallest `max_attempts` (≤ 200) whose rule catches the drop 80 % of the time in every conversation; null when none does. */
  max_attempts: number | null;
  /** The chance to flag the drop at that budget (or at 200), in the conversation where it is smallest. */
  power: number;
}

/** The largest budget a plan considers (`max_attempts`' own limit). */
const LARGEST = 200;
const TARGET = 0.8;

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** The candidate's rate a drop leads to (never below 0). */
const droppedFrom = (rate: number, drop: number): number => Math.max(0, rate - drop);

/** Checks what every plan shares; throws a RangeError naming the value and its range. */
function checkCommon(rates: readonly number[], concurrency: number, sessionSeconds: number): void {
  if (rates.length < 1) throw new RangeError('conversations: at least 1');
  for (const rate of rates) if (!(rate >= 0 && rate <= 1)) throw new RangeError(`baseline rate ${rate}: in [0, 1]`);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency ${concurrency}: at least 1`);
  if (!(sessionSeconds > 0)) throw new RangeError(`session length ${sessionSeconds}: more than 0 seconds`);
}

/**
 * The sessions and wall time of a design over these rates. Each round is two sessions one after
 * the other (baseline, then candidate); conversations run side by side up to the concurrency, both
 * sides' sessions counting, so the time is the longer of the slowest conversation's rounds (each
 * at its own session length, where one was measured) and all the sessions' time spread over the
 * concurrency.
 */
async function spending(
  design: Design,
  rates: readonly number[],
  drop: number,
  concurrency: number,
  lengths: { sessionSeconds: number; sessionSecondsEach?: readonly number[] | undefined },
): Promise<Spending> {
  const rounds = new Map<number, { same: number; dropped: number }>();
  for (const rate of new Set(rates)) {
    await turn();
    const same = operatingCharacteristics(design, rate, rate).expectedRounds;
    await turn();
    rounds.set(rate, { same, dropped: operatingCharacteristics(design, rate, droppedFrom(rate, drop)).expectedRounds });
  }
  const sessions = (which: 'same' | 'dropped') => rates.reduce((sum, rate) => sum + 2 * rounds.get(rate)![which], 0);
  const K = rates.length;
  const max = design.maxRounds;
  const length = (i: number) => lengths.sessionSecondsEach?.[i] ?? lengths.sessionSeconds;
  /** The wall time when conversation i plays `played(i)` rounds. */
  const wall = (played: (i: number) => number): number => {
    const times = rates.map((_, i) => 2 * played(i) * length(i));
    return Math.max(...times, times.reduce((sum, time) => sum + time, 0) / concurrency);
  };
  return {
    sessions: { unchanged: sessions('same'), dropped: sessions('dropped'), at_most: 2 * K * max },
    seconds: { unchanged: wall((i) => rounds.get(rates[i]!)!.same), at_most: wall(() => max) },
  };
}

/**
 * The plan for a request; throws a RangeError on a request out of range (rates in [0, 1], one
 * above 0; a drop in (0, the largest rate]; K ≥ 1, concurrency ≥ 1, a session length > 0).
 * Searching the budget designs a gate per step: doubling up from `minAttempts` until a budget
 * catches the drop (or 200 does not), then a bisection below it. Designing a budget of 200 takes
 * seconds of CPU and one of 20 milliseconds, and most drops need tens: starting low spares the
 * large designs a plan does not need. A
 * conversation whose baseline never passes (rate 0) cannot drop: it spends sessions but is left
 * out of the power.
 */
export async function planComparison(request: PlanRequest): Promise<ComparisonPlan> {
  const { baselineRates: rates, drop, concurrency, sessionSeconds } = request;
  checkCommon(rates, concurrency, sessionSeconds);
  const highest = Math.max(...rates);
  if (!(drop > 0 && drop <= highest)) throw new RangeError(`drop ${drop}: in (0, ${highest}]`);
  const targets = [...new Set(rates)].filter((rate) => rate > 0);
  const design = (max: number): Promise<Design> =>
    designGateYielding({
      confidence: request.confidence ?? 0.95,
      conversations: rates.length,
      mode: { kind: 'sequential', min: request.minAttempts ?? 5, max },
    });
  const powers = new Map<number, number>();
  /** The power in the conversation where it is smallest. */
  const power = async (max: number): Promise<number> => {
    const known = powers.get(max);
    if (known !== undefined) return known;
    const built = await design(max);
    let weakest = 1;
    for (const rate of targets) {
      await turn();
      weakest = Math.min(weakest, operatingCharacteristics(built, rate, droppedFrom(rate, drop)).power);
    }
    powers.set(max, weakest);
    return weakest;
  };
  const smallest = Math.min(request.minAttempts ?? 5, LARGEST);
  let low = smallest - 1; // power below the target (or below the range)
  let high: number | null = null; // power at or above it
  for (let budget = smallest; high === null; budget = Math.min(2 * budget, LARGEST)) {
    if ((await power(budget)) >= TARGET) high = budget;
    else if (budget === LARGEST) break;
    else low = budget;
  }
  while (high !== null && high - low > 1) {
    const middle = (low + high) >> 1;
    if ((await power(middle)) >= TARGET) high = middle;
    else low = middle;
  }
  const chosen = high;
  const max = chosen ?? LARGEST;
  return {
    max_attempts: chosen,
    power: await power(max),
    ...(await spending(await design(max), rates, drop, concurrency, request)),
  };
}

export interface BudgetRequest {
  conversations: number;
  /** The pass rate every conversation's baseline is expected to have. */
  baselineRate: number;
  mode: GateMode;
  confidence?: number;
  concurrency: number;
  sessionSeconds: number;
  sessionTime?: SessionTime;
}

export interface BudgetPlan extends Spending {
  /** The smallest drop (in steps of 0.01) the budget catches 80 % of the time; null when none. */
  drop: number | null;
}

/** What a comparison's own budget catches and spends (what `compare` says before it starts). */
export async function planBudget(request: BudgetRequest): Promise<BudgetPlan> {
  const rates = Array.from({ length: request.conversations }, () => request.baselineRate);
  checkCommon(rates, request.concurrency, request.sessionSeconds);
  const design = await designGateYielding({ confidence: request.confidence, conversations: request.conversations, mode: request.mode });
  const drop = await detectableDrop(design, request.baselineRate, design.maxRounds);
  return { drop, ...(await spending(design, rates, drop ?? 0, request.concurrency, request)) };
}

/** Seconds, minutes or hours and minutes for a person: "20 s", "48 min", "1 h 47 min". */
function duration(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.max(1, Math.round(seconds / 60));
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

const rounded = (value: number) => Number(value.toFixed(4));

/** "0.9 → 0.7", or for rates that differ "a drop of 0.2 from each baseline rate (0.62–0.95)". */
function target(rates: readonly number[], drop: number): string {
  const low = Math.min(...rates);
  const high = Math.max(...rates);
  if (low === high) return `${high} → ${rounded(droppedFrom(high, drop))}`;
  return `a drop of ${drop} from each baseline rate (${low}–${high})`;
}

const among = (conversations: number) => `among ${conversations} conversation${conversations === 1 ? '' : 's'}`;

/** A session's length as the line says it: to a tenth of a second below 10 s, and where it comes from. */
function sessionLength(seconds: number, from: SessionTime): string {
  const length = `${seconds < 10 ? Number(seconds.toFixed(1)) || 0.1 : Math.round(seconds)} s a session`;
  return from === 'measured' ? `${length} on average (measured in the report)` : from === 'assumed' ? `${length} (assumed)` : length;
}

function spent(plan: Spending, request: { concurrency: number; sessionSeconds: number; sessionTime?: SessionTime }): string {
  const sessions = `sessions: about ${Math.round(plan.sessions.unchanged)} if nothing changed, at most ${plan.sessions.at_most}`;
  const time =
    `wall time at concurrency ${request.concurrency} and ${sessionLength(request.sessionSeconds, request.sessionTime ?? 'given')}: ` +
    `about ${duration(plan.seconds.unchanged)}, at most ${duration(plan.seconds.at_most)}`;
  return `${sessions} · ${time}`;
}

/** The plan in one line, as `plan` prints it and the REST route and MCP tool answer it. */
export function planLine(request: PlanRequest, plan: ComparisonPlan): string {
  const what = `${target(request.baselineRates, request.drop)} 80 % of the time ${among(request.baselineRates.length)}`;
  if (plan.max_attempts === null) return `plan: no max_attempts up to ${LARGEST} catches ${what}`;
  return `plan: max_attempts: ${plan.max_attempts} catches ${what} · ${spent(plan, request)}`;
}

/** What a budget catches and spends in one line, as `compare` prints it before it starts. */
export function budgetLine(request: BudgetRequest, plan: BudgetPlan): string {
  const { mode, baselineRate } = request;
  const budget = mode.kind === 'repeat' ? `repeat: ${mode.attempts}` : `max_attempts: ${mode.max}`;
  const caught =
    plan.drop === null
      ? `catches no drop from ${baselineRate} 80 % of the time`
      : `catches ${baselineRate} → ${rounded(baselineRate - plan.drop)} 80 % of the time`;
  return `plan: ${budget} ${caught} ${among(request.conversations)} · ${spent(plan, request)}`;
}
