import { compareEpochs, mayAdopt } from './holding.js';
import type { Run } from './run.js';
import type { RunSiblings } from './siblings.js';

/**
 * The replicas this pod keeps of its siblings' runs, each watching its holder: a replica whose
 * holder was silent for `takeoverMs` × its rank asks every sibling before it takes the run over,
 * and does only when the holder does not answer that it holds it, no sibling knows a newer holder,
 * and none knows that it ended (./holding.ts decides).
 */
export class Replicas {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #takeoverMs: number;
  readonly #siblings: () => RunSiblings;
  /** The replica continues here now. */
  readonly #adopt: (run: Run, from: string) => void;
  /** Whether this pod still watches (a draining pod takes nothing over). */
  readonly #watching: () => boolean;

  constructor(deps: { takeoverMs: number; siblings: () => RunSiblings; adopt: (run: Run, from: string) => void; watching: () => boolean }) {
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
        .survey(run.id)
        .then((answers) => {
          // A checkpoint may have arrived meanwhile (a new holder, or the run's end).
          if (run.holder !== holder || run.ended || !this.#watching()) return;
          const adopt = mayAdopt({
            ended: answers.some((a) => a.ended),
            silent: true,
            holderAnswers: answers.some((a) => a.address === holder && a.held),
            newerElsewhere: answers.some((a) => compareEpochs(a.epoch, run.epoch) > 0),
          });
          if (adopt) this.#adopt(run, holder);
          else this.watch(run);
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
