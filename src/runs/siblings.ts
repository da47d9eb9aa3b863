import type { AgentRef } from '../domain/vocabulary.js';
import type { Epoch } from './holding.js';
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
/** What a sibling answered about a run, as a replica asks before taking it over. */
export interface SiblingAnswer {
  address: string;
  /** It holds the run (executes it, or ended it). */
  held: boolean;
  epoch: Epoch;
  ended: boolean;
}

/** What the siblings answered to the pushes of a run held here, as the peers report it to the fence. */
export interface PushOutcomes {
  /** Whether a push of the run goes to this sibling now. */
  pushesTo(run: Run, address: string): boolean;
  /** A push leaves for the sibling now: answers when it was sent (this pod's monotonic clock). */
  sending(run: Run, address: string): number;
  acknowledged(run: Run, address: string, sentAt: number, lines: number): void;
  /** No acknowledgement: `absent` when the sibling cannot take the run over (nothing listens there, or it drains). */
  unanswered(run: Run, address: string, absent: boolean): void;
  /** The sibling refused the push as stale: it knows a newer holder, followed from now on. */
  refusedAsStale(run: Run, address: string): void;
}

/**
 * How runs reach the other pods of the release (the peers implement it over HTTP): checkpoints
 * pushed to every sibling as a run goes, a halted run handed over, and the calls a pod that does
 * not hold a run passes on to the one that does.
 */
export interface RunSiblings {
  /** Whether there is any sibling to hand a run to. */
  readonly any: boolean;
  /** The siblings' addresses now (the peer list): those a holder's lease counts. */
  readonly addresses: string[];
  /** Pushes what changed in a run held here to every sibling (coalesced; never awaited). */
  replicate(run: Run): void;
  /** Pushes a run held here to every sibling now; resolves once each answered or timed out (a cancel is replicated before its answer). */
  flush(run: Run): Promise<void>;
  /** Hands a halted run to the first sibling that takes it over, by the deadline; its address, or undefined when none did. */
  handOver(run: Run, deadline: number): Promise<string | undefined>;
  /** What every sibling that answers knows of the run (a replica asks before it takes over). */
  survey(id: string): Promise<SiblingAnswer[]>;
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
  addresses: [],
  replicate: () => undefined,
  flush: () => Promise.resolve(),
  handOver: () => Promise.resolve(undefined),
  survey: () => Promise.resolve([]),
  find: () => Promise.resolve(undefined),
  listOf: () => Promise.resolve(NONE),
  // eslint-disable-next-line require-yield -- a single pod follows nothing elsewhere
  follow: async function* () {
    return;
  },
  cancel: () => Promise.resolve(undefined),
};
