// The report of a suite run (openapi: RunReport): per conversation its attempts, per attempt
// every turn's transcript, every expectation with its evidence and every criterion with the
// judge's reasoning; totals, model usage, the seed, the revision that ran and one `passed`.

export type ExpectationKind =
  | 'text_matches'
  | 'text_contains'
  | 'tool'
  | 'not_tool'
  | 'shown'
  | 'not_shown'
  | 'ended_by_agent'
  | 'exit_within_ms'
  /** conversation level: each called at some turn / none called at any turn */
  | 'tools'
  | 'not_tools'
  /** implicit: every turn must end with its own exit */
  | 'turn_completed'
  /** implicit: the agent must not end the conversation while the suite has turns left */
  | 'conversation_continues';

export interface ExpectationResult {
  kind: ExpectationKind;
  expected: unknown;
  /** null when the turn was skipped and the expectation never evaluated */
  passed: boolean | null;
  /** one plain sentence: what was seen */
  evidence: string;
  /** the observed value the expectation was checked against */
  actual: unknown;
}

export type Verdict = 'passed' | 'failed' | 'inconclusive';

/** A judge's ruling on one criterion; `inconclusive` fails. */
export interface CriterionResult {
  id: string;
  text: string;
  verdict: Verdict;
  /** verdict === 'passed' */
  passed: boolean;
  /** the judge's one sentence; null when there was no ruling */
  reasoning: string | null;
}

export interface ModelUsage {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  duration_ms: number;
}

export type TurnStatus = 'passed' | 'failed' | 'skipped';
export type TurnSource = 'script' | 'simulated_user';

export interface TurnReport {
  /** 1-based, as people count turns */
  index: number;
  line: string;
  /** who said the line: the suite's script, or the simulated user */
  source: TurnSource;
  status: TurnStatus;
  /** the turn's outcome; `error` when the gateway could not run it; null when skipped */
  outcome: 'exit' | 'timeout' | 'engine_closed' | 'engine_error' | 'cancelled' | 'error' | null;
  text: string | null;
  tools: string[];
  shown: string[];
  ended_by_agent: boolean;
  duration_ms: number | null;
  /** this turn opened a new socket to the engine session (its planning was lost) */
  reconnected: boolean;
  expectations: ExpectationResult[];
  /** the turn's `expect.judge`, ruled on over the conversation up to this turn */
  criteria: CriterionResult[];
  notes: string[];
  /** why the turn could not run at all (`{ error, message }` as the API answers errors) */
  error: { error: string; message: string } | null;
  skipped_reason: string | null;
}

export type AttemptStatus = 'passed' | 'failed' | 'error';
export type StopReason = 'script_end' | 'user_done' | 'agent_ended' | 'max_turns' | 'turn_failed' | 'error';

export interface AttemptReport {
  /** 1-based */
  attempt: number;
  /** `error`: the attempt could not be judged or could not go on (a model failure, the gateway could not run it) */
  status: AttemptStatus;
  session_id: string | null;
  device_ref: string | null;
  locale: string | null;
  time_zone: string | null;
  time_offset: string | null;
  started_at: string | null;
  duration_ms: number;
  ended_by_agent: boolean;
  stop_reason: StopReason;
  turns: TurnReport[];
  /** the conversation-level deterministic checks over all turns */
  expectations: ExpectationResult[];
  /** the conversation-level criteria */
  criteria: CriterionResult[];
  model_usage: ModelUsage;
  error: { error: string; message: string } | null;
  notes: string[];
}

export type ConversationStatus = 'passed' | 'flaky' | 'failed' | 'error';

export interface ConversationReport {
  name: string;
  /** 0-based, the conversation's place in the suite */
  index: number;
  status: ConversationStatus;
  /** status passed, or flaky with the achieved rate at least the required one */
  passed: boolean;
  /** the achieved share of attempts that passed (0–1) */
  pass_rate: number;
  required_pass_rate: number;
  attempts_passed: number;
  attempts_total: number;
  model_usage: ModelUsage;
  attempts: AttemptReport[];
}

export interface MemorySnapshot {
  device_ref: string;
  user_id: string;
  units: Array<Record<string, unknown>>;
  unit_count: number;
  taken_at: string;
  notes: string[];
}

export interface MemoryReport {
  device_ref: string;
  /** units the engine loaded before each attempt on the device (the last restore); null when nothing was restored */
  restored: number | null;
  /** how many times the fixture was restored: once before each attempt of a conversation on its device */
  restores: number;
  /** the snapshot taken after the run, when `memory.save` asked for one */
  snapshot: MemorySnapshot | null;
  /** why a restore or the snapshot after the run could not be done */
  error: { error: string; message: string } | null;
  notes: string[];
}

export interface Count {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
}

export interface AttemptCount {
  total: number;
  passed: number;
  failed: number;
  error: number;
}

export interface ConversationCount {
  total: number;
  passed: number;
  flaky: number;
  failed: number;
  error: number;
}

export interface RunTotals {
  conversations: ConversationCount;
  attempts: AttemptCount;
  turns: Count;
  expectations: Count;
  criteria: Count;
}

/** The revision that actually ran, as the platform resolved the agent ref. */
export interface RevisionReport {
  ref: string;
  revision: number;
  state: string;
}

/** What a monitored run recorded, and what the series' bound dropped. */
export interface MonitorRecord {
  name: string;
  recorded: number;
  dropped: number;
}

export interface RunReport {
  run_id: string;
  run_label: string;
  /** the engine key as called: `agent:coach`, `agent:coach.3` */
  agent: string;
  revision: RevisionReport;
  name: string | null;
  passed: boolean;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  /** how many conversations ran at once at most */
  parallelism: number;
  seed: number;
  /** the version of the simulated-user and judge prompts (docs/simulated-users.md) */
  prompt_version: string;
  repeat: number;
  pass_rate: number;
  totals: RunTotals;
  model_usage: ModelUsage;
  session_ids: string[];
  memory: MemoryReport | null;
  /** what a run naming a monitor recorded in the monitors' series; null without one */
  monitor: MonitorRecord | null;
  conversations: ConversationReport[];
  notes: string[];
}

/** One NDJSON progress line of a streamed run: a turn as soon as it has been evaluated. */
export interface TurnEvent {
  conversation: string;
  conversation_index: number;
  /** 1-based */
  attempt: number;
  session_id: string | null;
  turn: TurnReport;
}

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
});

/** An attempt's status: error when it could not go on or be judged, else whether everything held. */
export function attemptStatus(attempt: Pick<AttemptReport, 'error' | 'turns' | 'expectations' | 'criteria'>): AttemptStatus {
  if (attempt.error !== null) return 'error';
  const held =
    attempt.turns.every((t) => t.status !== 'failed') &&
    attempt.expectations.every((e) => e.passed !== false) &&
    attempt.criteria.every((c) => c.passed);
  return held ? 'passed' : 'failed';
}

/** A conversation's attempts, summed up: `passed` all passed, `flaky` some did, `failed` none did, `error` none could run. */
export function conversationReportOf(
  spec: { name: string; index: number },
  attempts: AttemptReport[],
  requiredPassRate: number,
): ConversationReport {
  const passed = attempts.filter((a) => a.status === 'passed').length;
  const failed = attempts.filter((a) => a.status === 'failed').length;
  const rate = attempts.length === 0 ? 0 : passed / attempts.length;
  const status: ConversationStatus =
    attempts.length > 0 && passed === attempts.length ? 'passed' : passed > 0 ? 'flaky' : failed > 0 ? 'failed' : 'error';
  return {
    name: spec.name,
    index: spec.index,
    status,
    passed: status === 'passed' || (status === 'flaky' && rate >= requiredPassRate),
    pass_rate: rate,
    required_pass_rate: requiredPassRate,
    attempts_passed: passed,
    attempts_total: attempts.length,
    model_usage: attempts.reduce((sum, a) => addUsage(sum, a.model_usage), noUsage()),
    attempts,
  };
}

export function totalsOf(conversations: ConversationReport[]): RunTotals {
  const count = (): Count => ({ total: 0, passed: 0, failed: 0, skipped: 0 });
  const totals: RunTotals = {
    conversations: { total: 0, passed: 0, flaky: 0, failed: 0, error: 0 },
    attempts: { total: 0, passed: 0, failed: 0, error: 0 },
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
      const judged = attempt.status !== 'error';
      for (const turn of attempt.turns) {
        totals.turns.total += 1;
        totals.turns[turn.status] += 1;
        for (const e of turn.expectations) tally(totals.expectations, e.passed);
        for (const c of turn.criteria)
          tally(totals.criteria, judged && turn.status !== 'skipped' && turn.outcome !== 'error' ? c.passed : null);
      }
      for (const e of attempt.expectations) tally(totals.expectations, e.passed);
      for (const c of attempt.criteria) tally(totals.criteria, judged ? c.passed : null);
    }
  }
  return totals;
}
