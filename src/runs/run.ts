import type { AgentAccess, AgentRef } from '../domain/vocabulary.js';
import type { ComparisonStop } from '../stats/index.js';
import type { ConversationDecision } from '../suites/report/comparison.js';
import type { CompletedRound, RunJournal } from '../suites/run/journal.js';
import type { Resumed, RunStates } from '../suites/run/start.js';
import { FIRST_EPOCH, type Epoch } from './holding.js';

export type RunKind = 'run' | 'comparison';

/** How a run's final line starts when it ended with a report. */
export const REPORT_LINE = '{"report":';
export type RunStatus = 'running' | 'passed' | 'failed' | 'error' | 'cancelled';

/** What a run is, fixed when it starts and carried wherever it moves. */
export interface RunSpec {
  id: string;
  kind: RunKind;
  /** The suite as the front sent it, with the front's overrides: checked again where the run continues. */
  body: unknown;
  callerId: string;
  /** The caller's email as the platform gave it, shown as who started the run (never its token). */
  callerEmail?: string | undefined;
  agent: AgentRef;
  access: AgentAccess;
  baseline?: { agent: AgentRef; access: AgentAccess } | undefined;
  monitor?: string | undefined;
  /** Started to be fetched later (`Prefer: respond-async`, an MCP task): never cancelled for want of a follower. */
  detached: boolean;
  createdAt: number;
  outline: RunOutline;
}

/** The suite's shape a run's progress needs, fixed at the start: its name, conversation names and the budget of each. */
export interface RunOutline {
  /** The suite's `name:` (the CLI sends its file's name where it has none); null when it came without one. */
  suite: string | null;
  names: string[];
  /** Attempts per conversation (a run) or rounds per conversation (a comparison). */
  budget: number;
}

/** A run continuing on another pod: from where, to where, why, and after how many rounds. */
export interface RunMove {
  from: string;
  to: string;
  at: number;
  cause: 'drain' | 'takeover';
  /** Rounds completed before the move (a comparison: of every conversation together; a run: of every unit). */
  rounds_completed: number;
  /** Attempts that were in flight at the move and ran again on the new pod. */
  attempts_rerun: number;
}

/** How a run ended without a report: the error's code and sentence. */
export interface RunError {
  error: string;
  message: string;
}

/** A comparison's conversation that stopped, as the gate said. */
export interface Stopped {
  stop: ComparisonStop;
  rounds: number;
  /** What its test read then; null when a pod of the previous release stopped it (it sent none). */
  decision: ConversationDecision | null;
}

/**
 * A run as a pod holds it: what it is (`spec`), what it has completed round by round (the
 * journal its runner writes, and reads when it continues after a move), the NDJSON lines its
 * followers read, and how it ended. The pod that runs it is its holder; every other pod that
 * received its checkpoints keeps the same record as a replica, ready to continue it.
 *
 * Lines and rounds only grow, so a replica is brought up to date by what was added since.
 */
export class Run implements RunJournal {
  readonly spec: RunSpec;
  status: RunStatus = 'running';
  readonly lines: string[] = [];
  readonly rounds: CompletedRound[] = [];
  readonly #roundsByKey = new Map<string, CompletedRound>();
  /** Rounds started and not completed, by key: what a move makes run again. */
  readonly inFlight = new Map<string, number>();
  readonly stops = new Map<number, Stopped>();
  /** The report until the run is compacted; then read from its final line (one copy, not two). */
  #report: Record<string, unknown> | null = null;
  error: RunError | null = null;
  endedAt: number | null = null;
  readonly moves: RunMove[] = [];
  /** The identities and what was gathered, once the run has prepared its states (carried on a move). */
  resumed: Resumed | undefined;
  /** The prepared states of the runner here: read when the run is checkpointed. */
  states: RunStates | undefined;
  /** Raised on every move: a checkpoint from an older holder is refused (./holding.ts orders them). */
  epoch: Epoch = FIRST_EPOCH;
  /** The sibling that holds it (its address), or null when this pod does. */
  holder: string | null;
  /** The name of the pod that holds it, as far as this pod knows. */
  pod: string;
  /** A replica's place among the siblings that would take the run over (1 first). */
  rank = 1;
  /** Followers on this pod now (streams of its lines, waiting answers). */
  followers = 0;
  readonly #cancel = new AbortController();
  #halt = new AbortController();
  /** Aborted when the run is cancelled or halted: its turns end, the rest is skipped. */
  signal: AbortSignal = AbortSignal.any([this.#cancel.signal, this.#halt.signal]);
  readonly #listeners = new Set<() => void>();
  /** Whether this pod's lease on the run holds (./holding.ts): when it lapses, the run halts here. */
  leaseHolds: () => boolean = () => true;

  constructor(spec: RunSpec, holder: string | null, pod: string) {
    this.spec = spec;
    this.holder = holder;
    this.pod = pod;
  }

  get id(): string {
    return this.spec.id;
  }

  /** No attempt starts: the run moves on, or this pod no longer knows that it holds it (its lease lapsed, it was fenced). */
  get halted(): boolean {
    if (!this.#halt.signal.aborted && !this.leaseHolds()) this.halt();
    return this.#halt.signal.aborted;
  }

  get ended(): boolean {
    return this.status !== 'running';
  }

  /** The run's report once it ended with one (a run that ended with an error has none). */
  get report(): Record<string, unknown> | null {
    if (this.#report !== null || !this.ended) return this.#report;
    const last = this.lines.at(-1);
    return last?.startsWith(REPORT_LINE) === true ? (JSON.parse(last) as { report: Record<string, unknown> }).report : null;
  }

  set report(report: Record<string, unknown> | null) {
    this.#report = report;
  }

  /**
   * An ended run keeps one copy of its transcripts besides its turn lines: the report, as its final
   * line. The report object goes (read back from the line when asked), and the rounds keep their
   * attempts without turns (what a view's progress reads; nothing continues an ended run).
   */
  compact(): void {
    if (!this.ended) return;
    this.#report = null;
    for (const round of this.rounds) round.attempts = round.attempts.map((attempt) => ({ ...attempt, turns: [] }));
  }

  completed(unit: number, round: number): CompletedRound | undefined {
    return this.#roundsByKey.get(`${unit}:${round}`);
  }

  /**
   * A round about to run: counted in flight until it completes, and pushed at once, so that a
   * sibling taking over after a crash counts its attempts as run again (`attempts_rerun`).
   */
  starting(unit: number, round: number, attempts: number): void {
    this.inFlight.set(`${unit}:${round}`, attempts);
    this.changed();
  }

  complete(round: CompletedRound): void {
    this.keep(round);
    this.inFlight.delete(`${round.unit}:${round.round}`);
    this.changed();
  }

  /** A round into the record (completed here, or received from the holder). */
  keep(round: CompletedRound): void {
    this.rounds.push(round);
    this.#roundsByKey.set(`${round.unit}:${round.round}`, round);
  }

  stopped(decision: ConversationDecision): void {
    const { conversation_index: conversation, stop, rounds } = decision;
    if (this.stops.has(conversation)) return;
    this.stops.set(conversation, { stop, rounds, decision });
    this.emit({ decided: decision });
  }

  /** Adds a line for the followers. */
  emit(line: Record<string, unknown>): void {
    this.lines.push(JSON.stringify(line));
    this.changed();
  }

  /** Ends the run with its report or error (the last line says which). */
  end(status: Exclude<RunStatus, 'running'>, ending: { report: Record<string, unknown> } | { error: RunError }, finalLine: string): void {
    if (this.ended) return;
    this.status = status;
    this.endedAt = Date.now();
    if ('report' in ending) this.report = ending.report;
    else this.error = ending.error;
    this.lines.push(finalLine);
    this.changed();
    this.compact();
  }

  cancel(why: string): void {
    if (this.cancelled) return;
    this.#cancel.abort(why);
    this.changed();
  }

  get cancelled(): boolean {
    return this.#cancel.signal.aborted;
  }

  /** Why it was cancelled (carried in its checkpoints, so that no sibling resumes it), or null. */
  get cancelledBecause(): string | null {
    return this.cancelled ? String(this.#cancel.signal.reason) : null;
  }

  /** The pod hands the run over: nothing more starts here, what is in flight is abandoned. */
  halt(): void {
    this.#halt.abort('the run moves to another pod');
  }

  /** A halted run that will continue here after all (no sibling took it): it may run again. */
  reopen(): void {
    this.#halt = new AbortController();
    this.signal = AbortSignal.any([this.#cancel.signal, this.#halt.signal]);
  }

  /** Something changed: followers read on, the checkpoint is pushed. */
  changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` on every change until the returned function is called. */
  watch(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Attempts in flight now: they run again wherever the run continues. */
  get attemptsInFlight(): number {
    let n = 0;
    for (const count of this.inFlight.values()) n += count;
    return n;
  }
}
