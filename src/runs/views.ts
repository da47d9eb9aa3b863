import type { ConversationDecision } from '../suites/report/comparison.js';
import { conversationReportOf, type AttemptReport } from '../suites/report/run-report.js';
import type { Run, RunError, RunKind, RunMove, RunStatus } from './run.js';

/** One side's attempts of one conversation so far. */
interface SideProgress {
  attempts: number;
  passed: number;
  errors: number;
}

/** openapi.yaml's RunProgress: one conversation of a run as it stands. */
export interface ConversationProgress {
  conversation: string;
  conversation_index: number;
  /** Attempts (a run) or rounds (a comparison: one attempt per side) completed. */
  rounds: number;
  /** The most it may take. */
  budget: number;
  /** Engine sessions its completed attempts held. */
  sessions: number;
  /** A run's attempts; null in a comparison. */
  attempts: SideProgress | null;
  /** A comparison's sides; null in a run. */
  baseline: SideProgress | null;
  candidate: SideProgress | null;
  /**
   * Where it stands: `running`; a run's conversation once its attempts are done, by its status;
   * a comparison's once the gate stopped it, by why (`decided`, `futile`, `budget`); `cancelled`
   * when the run was cancelled before it got there.
   */
  state: string;
  /** A comparison's conversation once the gate stopped it: what its test read (its `decided` line); null before, and in a run. */
  decision: ConversationDecision | null;
}

/** openapi.yaml's Run: what `GET /v1/runs/{id}` answers. */
export interface RunView {
  id: string;
  kind: RunKind;
  status: RunStatus;
  agent: string;
  baseline: string | null;
  monitor: string | null;
  /** The suite's name (see RunOutline.suite). */
  suite: string | null;
  /** Who started it, as the platform's users/me answered for its caller's token. */
  started_by: { id: string; email: string | null };
  created_at: string;
  ended_at: string | null;
  /** The pod running it now (or where it ended). */
  pod: string;
  moves: Array<Omit<RunMove, 'at'> & { at: string }>;
  progress: {
    conversations: ConversationProgress[];
    sessions: number;
    sessions_budget: number;
    decided: number;
    /** Rounds in flight now, whose attempts run again if the run moves. */
    attempts_in_flight: number;
  };
  report: Record<string, unknown> | null;
  error: RunError | null;
}

/** An attempt into its side's count; one the run's cancel cut short is no attempt of the conversation's. */
const tally = (side: SideProgress, attempt: AttemptReport): void => {
  if (attempt.status === 'cancelled') return;
  side.attempts += 1;
  if (attempt.status === 'passed') side.passed += 1;
  if (attempt.status === 'error') side.errors += 1;
};

const blank = (): SideProgress => ({ attempts: 0, passed: 0, errors: 0 });

/** Each conversation's progress, from the rounds the run completed. */
function progressOf(run: Run): ConversationProgress[] {
  const { outline } = run.spec;
  const comparison = run.spec.kind === 'comparison';
  const byConversation = outline.names.map((name, i) => ({
    name,
    i,
    run: blank(),
    baseline: blank(),
    candidate: blank(),
    attempts: [] as AttemptReport[],
    /** every attempt's session, one the cancel cut short included */
    sessions: 0,
    /** a comparison's rounds it took part in (an invalid attempt run again within a round is still one round) */
    rounds: new Set<string>(),
  }));
  for (const round of run.rounds) {
    round.attempts.forEach((attempt, j) => {
      const entry = byConversation[round.conversations[j]!];
      if (entry === undefined) return;
      entry.sessions += 1;
      if (attempt.status !== 'cancelled') entry.rounds.add(`${round.unit}:${round.round}`);
      const side = round.sides[j];
      if (side === undefined) {
        tally(entry.run, attempt);
        entry.attempts.push(attempt);
      } else tally(entry[side], attempt);
    });
  }
  return byConversation.map((entry) => {
    const rounds = comparison ? entry.rounds.size : entry.run.attempts;
    const stopped = run.stops.get(entry.i);
    const done = !comparison && rounds >= outline.budget;
    return {
      conversation: entry.name,
      conversation_index: entry.i,
      rounds,
      budget: outline.budget,
      sessions: entry.sessions,
      attempts: comparison ? null : entry.run,
      baseline: comparison ? entry.baseline : null,
      candidate: comparison ? entry.candidate : null,
      state:
        stopped !== undefined
          ? stopped.stop
          : done
            ? conversationReportOf({ name: entry.name, index: entry.i }, entry.attempts, 1).status
            : run.status === 'cancelled'
              ? 'cancelled'
              : 'running',
      decision: stopped?.decision ?? null,
    };
  });
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The run as the API shows it; `pod` names where it runs (this pod's name when it is held here). */
export function runView(run: Run, pod: string): RunView {
  const { outline } = run.spec;
  const conversations = progressOf(run);
  const sides = run.spec.kind === 'comparison' ? 2 : 1;
  return {
    id: run.id,
    kind: run.spec.kind,
    status: run.status,
    agent: `agent:${run.spec.access.agentKey}`,
    baseline: run.spec.baseline === undefined ? null : `agent:${run.spec.baseline.access.agentKey}`,
    monitor: run.spec.monitor ?? null,
    suite: outline.suite,
    started_by: { id: run.spec.callerId, email: run.spec.callerEmail ?? null },
    created_at: iso(run.spec.createdAt)!,
    ended_at: iso(run.endedAt),
    pod,
    moves: run.moves.map((move) => ({ ...move, at: iso(move.at)! })),
    progress: {
      conversations,
      sessions: conversations.reduce((n, c) => n + c.sessions, 0),
      sessions_budget: outline.names.length * outline.budget * sides,
      decided: conversations.filter((c) => c.state !== 'running' && c.state !== 'cancelled').length,
      attempts_in_flight: run.attemptsInFlight,
    },
    report: run.report,
    error: run.error,
  };
}
