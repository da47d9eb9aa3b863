import { LRUCache } from 'lru-cache';
import type { Run } from './run.js';

/** How a pod bounds the runs it keeps (its own and replicas): count, age and bytes of the ended ones. */
export interface KeptBounds {
  keptMax: number;
  keptMs: number;
  keptBytes: number;
}

/** Ids of runs dropped for room remembered at most (a few dozen bytes each). */
const TOMBSTONES_MAX = 10_000;

/** What is counted of one run so far: its lines and rounds up to these offsets. */
interface Counted {
  lines: number;
  rounds: number;
  /** Whether the rounds were counted after the run ended (compacted). */
  ended: boolean;
  linesBytes: number;
  roundsBytes: number;
  specBytes: number;
}

const byteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/**
 * The runs a pod keeps, in bytes as they are serialized (a run's spec, its lines, its rounds),
 * bounded by RUNS_KEPT_BYTES as well as by count (RUNS_KEPT_MAX) and age (RUNS_KEPT_MS). Counting
 * is incremental: lines and rounds only grow, so each is measured once when it arrives (and the
 * rounds once more when the run ends and is compacted). Past the bound the oldest ended runs are
 * dropped first; a running run is never dropped, so a pod running more than the bound stays above
 * it until they end. A run dropped for room leaves its id in a bounded list, so that it answers
 * "dropped for room" rather than "never existed".
 */
export class KeptRuns {
  readonly #bounds: KeptBounds;
  readonly #counted = new Map<string, Counted>();
  readonly #tombstones = new LRUCache<string, true>({ max: TOMBSTONES_MAX });
  #bytes = 0;

  constructor(bounds: KeptBounds) {
    this.#bounds = bounds;
  }

  /** Bytes of every run kept, as of the last `prune`. */
  get bytes(): number {
    return this.#bytes;
  }

  get bound(): number {
    return this.#bounds.keptBytes;
  }

  /** Whether a run this pod no longer keeps was dropped for room (not expired, not unknown). */
  droppedForRoom(id: string): boolean {
    return this.#tombstones.has(id);
  }

  /**
   * Drops from `runs` the ended runs past the count or the age kept, then the oldest ended runs
   * until what is kept fits in the bytes; answers the bytes kept.
   */
  prune(runs: Map<string, Run>): number {
    const now = Date.now();
    const ended = [...runs.values()].filter((run) => run.endedAt !== null).sort((a, b) => a.endedAt! - b.endedAt!);
    const over = ended.length - this.#bounds.keptMax;
    const kept = ended.filter((run, i) => {
      if (i >= over && now - run.endedAt! <= this.#bounds.keptMs) return true;
      this.#forget(runs, run);
      return false;
    });
    let bytes = 0;
    for (const run of runs.values()) bytes += this.#measure(run);
    for (const run of kept) {
      if (bytes <= this.#bounds.keptBytes) break;
      bytes -= this.#measure(run);
      this.#forget(runs, run);
      this.#tombstones.set(run.id, true);
    }
    for (const id of this.#counted.keys()) if (!runs.has(id)) this.#counted.delete(id);
    this.#bytes = bytes;
    return bytes;
  }

  /** A run kept again (a sibling handed it on): no longer a tombstone. */
  kept(id: string): void {
    this.#tombstones.delete(id);
  }

  #forget(runs: Map<string, Run>, run: Run): void {
    runs.delete(run.id);
    this.#counted.delete(run.id);
  }

  /** A run's bytes, counting only what was added since it was last measured. */
  #measure(run: Run): number {
    let counted = this.#counted.get(run.id);
    if (counted === undefined || run.lines.length < counted.lines || run.rounds.length < counted.rounds) {
      counted = { lines: 0, rounds: 0, ended: false, linesBytes: 0, roundsBytes: 0, specBytes: byteLength(run.spec) };
      this.#counted.set(run.id, counted);
    }
    for (; counted.lines < run.lines.length; counted.lines++) counted.linesBytes += Buffer.byteLength(run.lines[counted.lines]!);
    if (run.ended && !counted.ended) {
      // Compacted at its end: the rounds are counted again, without their transcripts.
      counted.ended = true;
      counted.rounds = 0;
      counted.roundsBytes = 0;
    }
    for (; counted.rounds < run.rounds.length; counted.rounds++) counted.roundsBytes += byteLength(run.rounds[counted.rounds]);
    return counted.linesBytes + counted.roundsBytes + counted.specBytes;
  }
}
