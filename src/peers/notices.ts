/**
 * Fire-and-forget work with bounded concurrency and a bounded backlog: ownership notices must
 * never delay a turn, and a slow or hanging peer must not pile them up without end. A job that
 * does not fit is dropped (and counted by the caller).
 */
export class BoundedQueue {
  readonly #concurrency: number;
  readonly #maxPending: number;
  readonly #pending: Array<() => Promise<void>> = [];
  #running = 0;

  constructor(opts: { concurrency: number; maxPending: number }) {
    this.#concurrency = opts.concurrency;
    this.#maxPending = opts.maxPending;
  }

  /** Queues a job; false when the backlog is full and it was dropped. */
  push(job: () => Promise<void>): boolean {
    if (this.#pending.length >= this.#maxPending) return false;
    this.#pending.push(job);
    this.#next();
    return true;
  }

  #next(): void {
    while (this.#running < this.#concurrency && this.#pending.length > 0) {
      const job = this.#pending.shift()!;
      this.#running += 1;
      // Jobs handle their own failures; a throw here would only be a bug, and must not stop the queue.
      void job()
        .catch(() => undefined)
        .finally(() => {
          this.#running -= 1;
          this.#next();
        });
    }
  }
}
