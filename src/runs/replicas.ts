import type { Run } from './run.js';
import type { RunSiblings } from './siblings.js';

/**
 * The replicas this pod keeps of its siblings' runs, each watching its holder: a replica whose
 * holder was silent for `takeoverMs` × its rank asks it, and takes the run over when it does not
 * answer that it holds it (./holding.ts decides).
 */
export class Replicas {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #takeoverMs: number;
  readonly #siblings: () => RunSiblings;
  /** The replica continues here now. */
  readonly #adopt: (run: Run) => void;
  /** Whether this pod still watches (a draining pod takes nothing over). */
  readonly #watching: () => boolean;

  constructor(deps: { takeoverMs: number; siblings: () => RunSiblings; adopt: (run: Run) => void; watching: () => boolean }) {
    this.#takeoverMs = deps.takeoverMs;
    this.#siblings = deps.siblings;
    this.#adopt = deps.adopt;
    this.#watching = deps.watching;
  }

  /** A push of the run arrived from its holder: the silence counts from now. */
  watch(run: Run): void {
    this.forget(run.id);
    if (!this.#watching()) return;
    const timer = setTimeout(() => {
      this.#timers.delete(run.id);
      const holder = run.holder;
      if (holder === null || run.ended || !this.#watching()) return;
      void this.#siblings()
        .holds(holder, run.id)
        .then((holds) => {
          // A checkpoint may have arrived meanwhile (a new holder, or the run's end).
          if (run.holder !== holder || run.ended || !this.#watching()) return;
          if (holds) this.watch(run);
          else this.#adopt(run);
        });
    }, this.#takeoverMs * run.rank);
    timer.unref();
    this.#timers.set(run.id, timer);
  }

  /** Stops watching a run (it ended, moved here, or the pod drains). */
  forget(id: string): void {
    clearTimeout(this.#timers.get(id));
    this.#timers.delete(id);
  }

  /** Stops watching every run. */
  close(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
