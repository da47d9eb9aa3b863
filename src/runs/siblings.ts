import type { AgentRef } from '../domain/vocabulary.js';
import type { Run } from './run.js';
import type { RunView } from './views.js';

/** A run as a sibling answers for it: its view, and whether it holds the run or keeps a replica. */
export interface SiblingRun {
  view: RunView & { caller_id: string };
  held: boolean;
  /** The sibling's address, for calls that must reach the holder. */
  address: string;
}

/** Which runs a list asks for: a caller's own, or an agent's (either side of a comparison; a plain ref: any revision). */
export type RunFilter = { callerId: string } | { agent: AgentRef };

/**
 * How runs reach the other pods of the release (the peers implement it over HTTP): checkpoints
 * pushed to every sibling as a run goes, a halted run handed over, and the calls a pod that does
 * not hold a run passes on to the one that does.
 */
export interface RunSiblings {
  /** Whether there is any sibling to hand a run to. */
  readonly any: boolean;
  /** Pushes what changed in a run held here to every sibling (coalesced; never awaited). */
  replicate(run: Run): void;
  /**
   * How many of a run's lines its followers may read: those at least one sibling holds, so a
   * follower never reads a line that a sibling continuing the run after a crash would not have.
   * All of them when no sibling has answered lately (none could continue it).
   */
  visibleLines(run: Run): number;
  /**
   * Whether a run running here has no replica on any sibling: none acknowledged its checkpoint
   * within the takeover time (after it has run here that long), so its pod's death loses it.
   */
  unreplicated(run: Run): boolean;
  /** Hands a halted run to the first sibling that takes it over; its address, or undefined when none did. */
  handOver(run: Run): Promise<string | undefined>;
  /** Whether the sibling at `address` still holds the run (a replica asks before it takes over). */
  holds(address: string, id: string): Promise<boolean>;
  /** The run as the siblings know it: the holder's answer first, else a replica's; undefined when none knows it. */
  find(id: string): Promise<SiblingRun | undefined>;
  /** The runs a filter keeps on every sibling (held and replicas; a sibling that does not answer lists none). */
  listOf(filter: RunFilter): Promise<Array<{ view: RunView; held: boolean }>>;
  /** The run's lines after `after`, from the sibling holding it, as they come; ends with the run, the stream, or the signal. */
  follow(address: string, id: string, after: number, signal: AbortSignal): AsyncIterable<string>;
  /** Cancels the run on the sibling holding it; its view after, or undefined when it no longer holds it. */
  cancel(address: string, id: string, why: string): Promise<RunView | undefined>;
}

const NONE: Array<{ view: RunView; held: boolean }> = [];

/** A single pod's: no sibling, so every run stays here and ends here. */
export const noSiblings: RunSiblings = {
  any: false,
  replicate: () => undefined,
  visibleLines: (run) => run.lines.length,
  // A single pod has nobody to replicate to: that is its configuration, not a fault to report.
  unreplicated: () => false,
  handOver: () => Promise.resolve(undefined),
  holds: () => Promise.resolve(false),
  find: () => Promise.resolve(undefined),
  listOf: () => Promise.resolve(NONE),
  // eslint-disable-next-line require-yield -- a single pod follows nothing elsewhere
  follow: async function* () {
    return;
  },
  cancel: () => Promise.resolve(undefined),
};
