import type { ConversationDecision, Side } from '../report/comparison.js';
import type { AttemptReport } from '../report/run-report.js';

/**
 * One round of one unit of a run, completed: a unit is a run's group of conversations that run in
 * order (one simulated user coming back, or one attempt of a fresh conversation), a comparison's
 * device group; its attempts are listed in the order they ran (in a comparison, the baseline's
 * then the candidate's).
 */
export interface CompletedRound {
  unit: number;
  /** 1-based. */
  round: number;
  attempts: AttemptReport[];
  /** The conversation (its index in the suite) of each attempt. */
  conversations: number[];
  /** A comparison's: the side of each attempt (a side may run an attempt again within a round); empty in a run. */
  sides: Side[];
}

/**
 * What a run has completed, round by round, kept by whoever holds the run so that another pod can
 * continue it from its last completed round. The runner asks it before each round (a round that
 * completed before a move is taken from it, not run again: the gate reads the same outcomes in the
 * same order) and tells it every round it completes.
 */
export interface RunJournal {
  /** A round completed before, or undefined when it has to run. */
  completed(unit: number, round: number): CompletedRound | undefined;
  /** A round of `attempts` attempts is about to run: if the run moves before it completes, they run again. */
  starting(unit: number, round: number, attempts: number): void;
  complete(round: CompletedRound): void;
  /**
   * The pod is handing the run over: start no attempt, record nothing more. Attempts in flight are
   * abandoned (their turns cancelled); the sibling runs them again.
   */
  readonly halted: boolean;
  /** A comparison's conversation stopped: decided, futile, or out of budget, with what its test read. */
  stopped(decision: ConversationDecision): void;
}

/** Thrown out of a runner whose journal was halted: the run goes on elsewhere, there is no report here. */
export class RunHalted extends Error {
  constructor() {
    super('the run was halted to be handed over to another pod');
  }
}
