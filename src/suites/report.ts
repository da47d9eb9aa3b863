/**
 * The report of a suite run (openapi: RunReport). Every turn's transcript, every expectation
 * with its evidence, totals, the session ids and one `passed`.
 */
export type ExpectationKind =
  | 'text_matches'
  | 'text_contains'
  | 'tool'
  | 'shown'
  | 'not_shown'
  | 'ended_by_agent'
  | 'exit_within_ms'
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

export type TurnStatus = 'passed' | 'failed' | 'skipped';

export interface TurnReport {
  /** 1-based, as people count turns */
  index: number;
  line: string;
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
  notes: string[];
  /** why the turn could not run at all (`{ error, message }` as the API answers errors) */
  error: { error: string; message: string } | null;
  skipped_reason: string | null;
}

export interface ConversationReport {
  name: string;
  session_id: string | null;
  device_ref: string | null;
  locale: string | null;
  time_zone: string | null;
  time_offset: string | null;
  passed: boolean;
  ended_by_agent: boolean;
  started_at: string | null;
  duration_ms: number;
  turns: TurnReport[];
  notes: string[];
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
  /** units the engine loaded before the run; null when nothing was restored */
  restored: number | null;
  /** the snapshot taken after the run, when `memory.save` asked for one */
  snapshot: MemorySnapshot | null;
  /** why the snapshot after the run could not be taken */
  error: { error: string; message: string } | null;
  notes: string[];
}

export interface Count {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
}

export interface RunReport {
  run_id: string;
  run_label: string;
  agent: string;
  name: string | null;
  passed: boolean;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  /** how many conversations ran at once at most */
  parallelism: number;
  totals: { conversations: Count; turns: Count; expectations: Count };
  session_ids: string[];
  memory: MemoryReport | null;
  conversations: ConversationReport[];
  notes: string[];
}

/** One NDJSON progress line of a streamed run: a turn as soon as it has been evaluated. */
export interface TurnEvent {
  conversation: string;
  conversation_index: number;
  session_id: string | null;
  turn: TurnReport;
}

export function totalsOf(conversations: ConversationReport[]): RunReport['totals'] {
  const count = (): Count => ({ total: 0, passed: 0, failed: 0, skipped: 0 });
  const totals = { conversations: count(), turns: count(), expectations: count() };
  for (const conv of conversations) {
    totals.conversations.total += 1;
    totals.conversations[conv.passed ? 'passed' : 'failed'] += 1;
    for (const turn of conv.turns) {
      totals.turns.total += 1;
      totals.turns[turn.status] += 1;
      for (const e of turn.expectations) {
        totals.expectations.total += 1;
        totals.expectations[e.passed === null ? 'skipped' : e.passed ? 'passed' : 'failed'] += 1;
      }
    }
  }
  return totals;
}
