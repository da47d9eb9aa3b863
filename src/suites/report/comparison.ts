import type { components } from '../../api/report-shapes.js';
import type { ConversationGate, ConversationVerdict, Gate, SideSummary, SuiteVerdict } from '../../stats/index.js';
import { describeSuite, describeVerdict } from './wording.js';
import { differencesOf } from './differences.js';
import { addUsage, noUsage, type AttemptReport, type ConversationReport, type RunReport, type TurnReport } from './run-report.js';

/**
 * A baseline-versus-candidate comparison: the same suite run against two revisions, attempt by
 * attempt, and what differs between them per conversation — the verdict, the expectations and
 * criteria whose outcome differs, the first turn where the agent's replies differ, latency and
 * model usage per side. Pure: it reads the two sides' run reports.
 */

export type Side = 'baseline' | 'candidate';

type Schemas = components['schemas'];

/** Turn latency from the durations of the turns that ran; null when none did. */
export type Latency = Schemas['Latency'];
/** One side of a conversation's comparison; attempts in error are left out of the test, counted apart. */
export type SideResult = Schemas['ComparedSide'];
/** How one expectation or criterion came out on one side, over its attempts. */
export type Tally = Schemas['ComparisonTally'];
/** An expectation or a criterion whose outcome differs between the sides. */
export type Difference = Schemas['ComparisonDifference'];
/** A pass rate's estimate (null without a judged attempt) and its 95 % interval. */
export type RateInterval = Schemas['RateInterval'];
/**
 * Its verdict comes from the gate's test (src/stats): `regressed`, the candidate passes less often with
 * the comparison's confidence; `fixed`, more often; `unchanged`, no difference found; `error`, a side
 * has no attempt that could be judged, so the two cannot be compared.
 */
export type ConversationComparison = Schemas['ComparedConversation'];
/** A conversation the gate stopped while the comparison runs: its `decided` line, and its row in the run's progress. */
export type ConversationDecision = Schemas['ConversationDecision'];
export type DecidedSide = Schemas['DecidedSide'];
export type ComparedRevision = Schemas['ComparedRevision'];
export type ComparisonTotals = ComparisonReport['totals'];
export type ComparisonReport = Schemas['ComparisonReport'];

/** The nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function latencyOf(attempts: AttemptReport[]): Latency {
  const durations = attempts
    .flatMap((a) => a.turns.map((t) => t.duration_ms))
    .filter((d): d is number => d !== null)
    .sort((a, b) => a - b);
  return { p50_ms: percentile(durations, 50), p95_ms: percentile(durations, 95) };
}

const intervalOf = (summary: SideSummary): RateInterval => ({ estimate: summary.rate, low: summary.low, high: summary.high });

const decidedSide = (summary: SideSummary): DecidedSide => ({
  judged: summary.attempts,
  passed: summary.passed,
  errors: summary.errors,
  pass_rate_interval: intervalOf(summary),
});

/** What the gate read of conversation `index` when it stopped it (final: it runs no more rounds). */
export function conversationDecision(name: string, index: number, test: ConversationGate): ConversationDecision {
  const { baseline, candidate } = test.sides();
  return {
    conversation: name,
    conversation_index: index,
    stop: test.stop!,
    rounds: test.rounds,
    verdict: test.crossed,
    baseline: decidedSide(baseline),
    candidate: decidedSide(candidate),
  };
}

const sideOf = (conv: ConversationReport, summary: SideSummary): SideResult => ({
  status: conv.status,
  passed: conv.passed,
  pass_rate: conv.pass_rate,
  attempts_passed: conv.attempts_passed,
  attempts_total: conv.attempts_total,
  // The gate leaves both out; each is counted apart.
  attempts_error: conv.attempts.filter((a) => a.status === 'error').length,
  attempts_invalid: conv.attempts_invalid,
  attempts_cancelled: conv.attempts_cancelled,
  responsibility: conv.responsibility,
  pass_rate_interval: intervalOf(summary),
  pass_hat_k: summary.pass_hat_k,
  latency: latencyOf(conv.attempts),
  model_usage: conv.model_usage,
  ...(conv.attack === undefined ? {} : { attack: conv.attack }),
});

const replyOf = (turn: TurnReport | undefined): string =>
  turn === undefined || turn.status === 'skipped'
    ? ''
    : JSON.stringify([turn.outcome, turn.text, turn.tools, turn.shown, turn.ended_by_agent]);

/** The first turn where the agent's replies differ, in any pair of attempts with the same number. */
function divergedAt(baseline: AttemptReport[], candidate: AttemptReport[]): number | null {
  let first: number | null = null;
  for (const left of baseline) {
    const right = candidate.find((a) => a.attempt === left.attempt);
    if (right === undefined) continue;
    const turns = Math.max(left.turns.length, right.turns.length);
    for (let i = 0; i < turns; i++) {
      if (replyOf(left.turns[i]) !== replyOf(right.turns[i])) {
        first = first === null ? i + 1 : Math.min(first, i + 1);
        break;
      }
    }
  }
  return first;
}

/** What the gate decided: its rule, for the budget and the wording, each conversation's verdict and the suite's. */
export interface Decision {
  gate: Gate;
  confidence: number;
  verdicts: ConversationVerdict[];
  suite: SuiteVerdict | null;
  /** Why the comparison was cancelled before it ended; null when it ran to its end. */
  cancelled: string | null;
}

/**
 * The attempts a comparison reads: an invalid one (the simulated user spoiled it) or a cancelled one
 * (cut short) says nothing of the agent.
 */
const counted = (conv: ConversationReport): AttemptReport[] =>
  conv.attempts.filter((a) => a.status !== 'invalid' && a.status !== 'cancelled');

/** A conversation the cancel left undecided, in words: how far it got, and that nothing follows from it. */
function undecidedSummary(decided: ConversationVerdict): string {
  const { rounds, baseline, candidate } = decided;
  return (
    `not decided: the comparison was cancelled after ${rounds} round${rounds === 1 ? '' : 's'} of this conversation, ` +
    `before the gate could tell; so far the candidate passed ${candidate.passed} of ${candidate.attempts} against ` +
    `${baseline.passed} of ${baseline.attempts}`
  );
}

function compareConversation(
  baseline: ConversationReport,
  candidate: ConversationReport,
  decided: ConversationVerdict,
  decision: Decision,
): ConversationComparison {
  const conversations = decision.verdicts.length;
  // Cancelled before its gate stopped it: whatever its attempts so far would say, it was not decided.
  const undecided = decision.cancelled !== null && decided.stop === null;
  const verdict = undecided ? 'undecided' : decided.verdict;
  return {
    name: baseline.name,
    index: baseline.index,
    verdict,
    // Neither side met its pass rate: the gate lets it pass (not a regression), and the report says it fails on both.
    fails_on_both_sides: (verdict === 'unchanged' || verdict === 'fixed') && !baseline.passed && !candidate.passed,
    statistics: {
      summary: undecided ? undecidedSummary(decided) : describeVerdict(decided, conversations),
      difference: decided.difference,
      p_regressed: decided.p_regressed,
      p_fixed: decided.p_fixed,
      p_needed: decided.p_needed,
      detectable_drop: decided.detectable_drop,
      rounds: decided.rounds,
      stop: decided.stop,
      sessions: baseline.attempts_total + candidate.attempts_total,
      sessions_budget: 2 * decision.gate.maxRounds,
    },
    baseline: sideOf(baseline, decided.baseline),
    candidate: sideOf(candidate, decided.candidate),
    differences: differencesOf(counted(baseline), counted(candidate)),
    diverged_at_turn: divergedAt(counted(baseline), counted(candidate)),
  };
}

function totalsOfComparison(conversations: ConversationComparison[]): ComparisonTotals {
  const totals: ComparisonTotals = {
    conversations: conversations.length,
    regressed: 0,
    fixed: 0,
    unchanged: 0,
    error: 0,
    undecided: 0,
    fails_on_both_sides: 0,
  };
  for (const c of conversations) {
    totals[c.verdict] += 1;
    if (c.fails_on_both_sides) totals.fails_on_both_sides += 1;
  }
  return totals;
}

/** The comparison's report from both sides' run reports. */
export function comparisonReportOf(
  id: string,
  runs: Record<Side, RunReport>,
  decision: Decision,
  timing: { startedAt: number; finishedAt: number },
  notes: string[],
): ComparisonReport {
  const conversations = runs.baseline.conversations.map((conv, i) =>
    compareConversation(conv, runs.candidate.conversations[i]!, decision.verdicts[i]!, decision),
  );
  const { gate } = decision;
  const totals = totalsOfComparison(conversations);
  const attemptsOf = (run: RunReport) => run.conversations.flatMap((c) => c.attempts);
  const sessions = {
    spent: conversations.reduce((sum, c) => sum + c.statistics.sessions, 0),
    budget: conversations.reduce((sum, c) => sum + c.statistics.sessions_budget, 0),
  };
  const cancelled =
    decision.cancelled === null ? null : { reason: decision.cancelled, sessions: sessions.spent, sessions_budget: sessions.budget };
  // The suite's test not stopped when the comparison was cancelled: not decided either.
  const suite =
    decision.suite === null
      ? null
      : cancelled !== null && decision.suite.stop === null
        ? {
            ...decision.suite,
            verdict: 'undecided' as const,
            summary: 'not decided: the comparison was cancelled before the suite as a whole was',
          }
        : { ...decision.suite, summary: describeSuite(decision.suite, totals.regressed) };
  return {
    comparison_id: id,
    run_id: id,
    name: runs.candidate.name,
    baseline: { agent: runs.baseline.agent, revision: runs.baseline.revision },
    candidate: { agent: runs.candidate.agent, revision: runs.candidate.revision },
    // A cancelled comparison decided nothing as a whole, whatever it found before: the gate neither passes nor fails on it.
    regressed: cancelled === null ? totals.regressed > 0 || suite?.verdict === 'regressed' : null,
    cancelled,
    confidence: decision.confidence,
    attempts: { mode: gate.mode, min_attempts: gate.minRounds, max_attempts: gate.maxRounds },
    sessions,
    started_at: new Date(timing.startedAt).toISOString(),
    finished_at: new Date(timing.finishedAt).toISOString(),
    duration_ms: timing.finishedAt - timing.startedAt,
    seed: runs.candidate.seed,
    prompt_version: runs.candidate.prompt_version,
    repeat: runs.candidate.repeat,
    pass_rate: runs.candidate.pass_rate,
    totals,
    suite,
    latency: { baseline: latencyOf(attemptsOf(runs.baseline)), candidate: latencyOf(attemptsOf(runs.candidate)) },
    model_usage: {
      baseline: runs.baseline.model_usage,
      candidate: runs.candidate.model_usage,
      total: addUsage(addUsage(noUsage(), runs.baseline.model_usage), runs.candidate.model_usage),
    },
    conversations,
    runs,
    notes,
  };
}
