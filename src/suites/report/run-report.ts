import type { components } from '../../api/report-shapes.js';
import { passRateCheck, wilson } from '../../stats/index.js';
// The report of a suite run (openapi: RunReport): per conversation its attempts, per attempt
// every turn's transcript, every expectation with its evidence and every criterion with the
// judge's reasoning; totals, model usage, the seed, the revision that ran and one `passed`.
// Its shapes are declared once, in openapi.yaml; src/api/report-shapes.ts is generated from it.

type Schemas = components['schemas'];

/** What one expectation checks; `turn_completed` and `conversation_continues` are implicit, never written in a suite. */
export type ExpectationKind = ExpectationResult['kind'];
/** `passed` is null when the turn was skipped and the expectation never evaluated. */
export type ExpectationResult = Schemas['RunExpectation'];
export type CriterionVerdict = CriterionResult['verdict'];
/** A judge's ruling on one criterion; `inconclusive` fails. */
export type CriterionResult = Schemas['RunCriterion'];
export type ModelUsage = Schemas['ModelUsage'];
export type TurnSource = TurnReport['source'];
export type TurnReport = Schemas['RunTurn'];
export type AttemptStatus = AttemptReport['status'];
export type StopReason = AttemptReport['stop_reason'];
export type AttemptReport = Schemas['RunAttempt'];
/** Who is responsible for a failed attempt, and why (see review.ts). */
export type AttemptReview = Schemas['AttemptReview'];
export type Responsibility = AttemptReview['responsible'];
export type ResponsibilityCount = Schemas['ResponsibilityCount'];
export type CriterionSplits = Schemas['CriterionSplits'];
export type ConversationStatus = ConversationReport['status'];
/**
 * `pass_rate_check`: whether the agent's pass rate meets `required_pass_rate`, as far as the attempts tell
 * (a required rate of 1 is never `met`: no finite number of attempts proves it).
 */
export type ConversationReport = Schemas['RunConversation'];
export type MemoryReport = Schemas['RunMemory'];
/** What an attempt left in the simulated user's memory, and its `expect.memory` checks. */
export type AttemptMemoryReport = Schemas['RunAttemptMemory'];
export type Count = Schemas['RunCount'];
export type RunTotals = Schemas['RunTotals'];
/** The revision that actually ran, as the platform resolved the agent ref. */
export type RevisionReport = Schemas['RunRevision'];
export type RunReport = Schemas['RunReport'];
/** One NDJSON progress line of a streamed run: a turn as soon as it has been evaluated. */
export type TurnEvent = Schemas['RunStreamTurnLine']['turn'];

export const noUsage = (): ModelUsage => ({ calls: 0, prompt_tokens: 0, completion_tokens: 0, duration_ms: 0 });

export function addUsage(into: ModelUsage, more: ModelUsage): ModelUsage {
  into.calls += more.calls;
  into.prompt_tokens += more.prompt_tokens;
  into.completion_tokens += more.completion_tokens;
  into.duration_ms += more.duration_ms;
  return into;
}

type TurnHead = Pick<TurnReport, 'index' | 'line' | 'source'>;

/** The one way a turn's report is made: what it showed over a blank, skipped turn. */
export function turnReport(head: TurnHead, fields: Partial<Omit<TurnReport, keyof TurnHead>>): TurnReport {
  return {
    ...head,
    status: 'skipped',
    outcome: null,
    text: null,
    tools: [],
    shown: [],
    ended_by_agent: false,
    duration_ms: null,
    reconnected: false,
    expectations: [],
    criteria: [],
    notes: [],
    error: null,
    skipped_reason: null,
    ...fields,
  };
}

/** A criterion that was never ruled on (the judge could not be asked): inconclusive, with why. */
export const unjudged = (c: { id: string; text: string }, why: string): CriterionResult => ({
  id: c.id,
  text: c.text,
  verdict: 'inconclusive',
  passed: false,
  reasoning: `not judged: ${why}`,
  votes: 0,
  agreement: 0,
  split: false,
});

/** An attempt's status: error when it could not go on or be judged, else whether everything held. */
export function attemptStatus(attempt: Pick<AttemptReport, 'error' | 'turns' | 'expectations' | 'criteria' | 'memory'>): AttemptStatus {
  if (attempt.error !== null) return 'error';
  const memory = attempt.memory;
  const held =
    attempt.turns.every((t) => t.status !== 'failed') &&
    attempt.expectations.every((e) => e.passed !== false) &&
    attempt.criteria.every((c) => c.passed) &&
    (memory === null ||
      memory.status === 'not_checked' ||
      (memory.expectations.every((e) => e.passed !== false) && memory.criteria.every((c) => c.passed)));
  return held ? 'passed' : 'failed';
}

/** Reviewed attempts by who was found responsible. */
function responsibilityOf(attempts: AttemptReport[]): ResponsibilityCount {
  const count: ResponsibilityCount = { agent: 0, simulated_user: 0, judge: 0, unclear: 0 };
  for (const a of attempts) if (a.review !== null) count[a.review.responsible] += 1;
  return count;
}

/** Per criterion ruled on with more than one vote, over the attempts (in the order first seen): rulings, split ones, their share. */
function splitsOf(attempts: AttemptReport[]): CriterionSplits[] {
  const byId = new Map<string, CriterionSplits>();
  for (const a of attempts) {
    for (const c of [...a.turns.flatMap((t) => t.criteria), ...a.criteria]) {
      if (c.votes < 2) continue;
      const entry = byId.get(c.id) ?? { id: c.id, text: c.text, rulings: 0, split: 0, split_share: null };
      entry.rulings += 1;
      if (c.split) entry.split += 1;
      entry.split_share = entry.split / entry.rulings;
      byId.set(c.id, entry);
    }
  }
  return [...byId.values()];
}

/**
 * A conversation's attempts, summed up over those neither invalid (the simulated user spoiled them)
 * nor cancelled (the run's cancel cut them short): both left out, counted apart. `passed` all
 * passed, `flaky` some did, `failed` none did, `error` none could run or be judged; `cancelled`
 * when the run was cancelled before it was decided (`undecided`), whatever its attempts so far say.
 */
export function conversationReportOf(
  spec: { name: string; index: number },
  attempts: AttemptReport[],
  requiredPassRate: number,
  undecided = false,
): ConversationReport {
  const counted = attempts.filter((a) => a.status !== 'invalid' && a.status !== 'cancelled');
  const passed = attempts.filter((a) => a.status === 'passed').length;
  const failed = attempts.filter((a) => a.status === 'failed').length;
  const cancelled = attempts.filter((a) => a.status === 'cancelled').length;
  const rate = counted.length === 0 ? 0 : passed / counted.length;
  const status: ConversationStatus = undecided
    ? 'cancelled'
    : counted.length > 0 && passed === counted.length
      ? 'passed'
      : passed > 0
        ? 'flaky'
        : failed > 0
          ? 'failed'
          : 'error';
  const judged = passed + failed;
  return {
    name: spec.name,
    index: spec.index,
    status,
    passed: status === 'passed' || (status === 'flaky' && rate >= requiredPassRate),
    pass_rate: rate,
    required_pass_rate: requiredPassRate,
    pass_rate_interval: wilson(passed, judged),
    pass_rate_check: passRateCheck(passed, judged, requiredPassRate),
    attempts_passed: passed,
    attempts_total: attempts.length,
    attempts_invalid: attempts.length - counted.length - cancelled,
    attempts_cancelled: cancelled,
    responsibility: responsibilityOf(attempts),
    criteria_splits: splitsOf(attempts),
    model_usage: attempts.reduce((sum, a) => addUsage(sum, a.model_usage), noUsage()),
    attempts,
    ...attackRateOf(attempts),
  };
}

/** An attack conversation's success rate: the judged attempts (errors left out) in which the agent broke, with its interval. */
function attackRateOf(attempts: AttemptReport[]): Pick<ConversationReport, 'attack'> {
  if (!attempts.some((a) => a.attack !== undefined)) return {};
  const judged = attempts.filter((a) => a.attack?.outcome === 'held' || a.attack?.outcome === 'broke');
  const broke = judged.filter((a) => a.attack!.outcome === 'broke').length;
  return {
    attack: {
      attempts: judged.length,
      broke,
      success_rate: judged.length === 0 ? null : broke / judged.length,
      success_rate_interval: wilson(broke, judged.length),
    },
  };
}

export function totalsOf(conversations: ConversationReport[]): RunTotals {
  const count = (): Count => ({ total: 0, passed: 0, failed: 0, skipped: 0 });
  const totals: RunTotals = {
    conversations: { total: 0, passed: 0, flaky: 0, failed: 0, error: 0, cancelled: 0 },
    attempts: { total: 0, passed: 0, failed: 0, error: 0, invalid: 0, cancelled: 0 },
    turns: count(),
    expectations: count(),
    criteria: count(),
  };
  const tally = (into: Count, passed: boolean | null) => {
    into.total += 1;
    into[passed === null ? 'skipped' : passed ? 'passed' : 'failed'] += 1;
  };
  for (const conv of conversations) {
    totals.conversations.total += 1;
    totals.conversations[conv.status] += 1;
    for (const attempt of conv.attempts) {
      totals.attempts.total += 1;
      totals.attempts[attempt.status] += 1;
      const judged = attempt.status !== 'error' && attempt.status !== 'cancelled';
      for (const turn of attempt.turns) {
        totals.turns.total += 1;
        totals.turns[turn.status] += 1;
        for (const e of turn.expectations) tally(totals.expectations, e.passed);
        for (const c of turn.criteria)
          tally(totals.criteria, judged && turn.status !== 'skipped' && turn.outcome !== 'error' ? c.passed : null);
      }
      for (const e of [...attempt.expectations, ...(attempt.memory?.expectations ?? [])]) tally(totals.expectations, e.passed);
      const checked = judged && attempt.memory?.status !== 'not_checked';
      for (const c of attempt.criteria) tally(totals.criteria, judged ? c.passed : null);
      for (const c of attempt.memory?.criteria ?? []) tally(totals.criteria, checked ? c.passed : null);
    }
  }
  return totals;
}
