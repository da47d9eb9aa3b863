import { randomUUID } from 'node:crypto';
import type { RunLimitFull } from '../../conversations/admission.js';
import type { RunMembership } from '../../conversations/conversation.js';
import { RunHalted } from './journal.js';

/** How a full limit reads in the run's note. */
const HELD: Record<RunLimitFull['limit'], (held: number) => string> = {
  MAX_RUN_CONVERSATIONS_PER_POD: (n) => `this pod's runs held ${n} conversations, MAX_RUN_CONVERSATIONS_PER_POD`,
  MAX_RUN_CONVERSATIONS_PER_CALLER: (n) => `your runs held ${n} conversations, MAX_RUN_CONVERSATIONS_PER_CALLER`,
  MAX_CONVERSATIONS_PER_POD: (n) => `this pod held ${n} conversations, MAX_CONVERSATIONS_PER_POD`,
  concurrency: (n) => `the run held ${n} conversations, its concurrency`,
};

const seconds = (ms: number): string => (ms < 10_000 ? (ms / 1000).toFixed(1) : String(Math.round(ms / 1000)));

/**
 * A run's (or a comparison's, both sides together) place among the pod's conversations: its
 * conversations carry it (the registry counts them under its `concurrency` and the run budgets,
 * not the caller's interactive limit), and it keeps how long the run waited for room and why.
 */
export class RunRoom implements RunMembership {
  readonly id = randomUUID();
  readonly concurrency: number;
  /** Starts of the run waiting for room now; the time counted is when at least one waits. */
  #waiting = 0;
  #since = 0;
  #waitedMs = 0;
  /** The limits found full, with the most conversations each held. */
  readonly #held = new Map<RunLimitFull['limit'], number>();

  readonly #onWaiting: ((full: RunLimitFull, why: string) => void) | undefined;
  readonly #holds: (() => boolean) | undefined;

  /**
   * `onWaiting`: told each time the run starts waiting for room (none of its starts waited a moment
   * before). `holds`: false once this pod no longer knows that it holds the run (its lease lapsed, it
   * was fenced; reading it halts the run); absent for a run nobody else can hold.
   */
  constructor(concurrency: number, onWaiting?: (full: RunLimitFull, why: string) => void, holds?: () => boolean) {
    this.concurrency = concurrency;
    this.#onWaiting = onWaiting;
    this.#holds = holds;
  }

  /** No engine session opens for the run once this pod may have lost it: the run halts here instead. */
  opening(): void {
    if (this.#holds?.() === false) throw new RunHalted();
  }

  /** Waits with `wait` because `full` is full, counting the time in the run's wait. */
  async waitFor(full: RunLimitFull, wait: () => Promise<void>): Promise<void> {
    this.#held.set(full.limit, Math.max(full.held, this.#held.get(full.limit) ?? 0));
    if (this.#waiting++ === 0) {
      this.#since = Date.now();
      this.#onWaiting?.(full, `The run waits for room: ${HELD[full.limit](full.held)}.`);
    }
    try {
      await wait();
    } finally {
      if (--this.#waiting === 0) this.#waitedMs += Date.now() - this.#since;
    }
  }

  /** How long the run waited for room and what held it; undefined when it never waited. */
  note(): string | undefined {
    if (this.#held.size === 0) return undefined;
    const why = [...this.#held].map(([limit, held]) => HELD[limit](held)).join('; ');
    return `The run waited ${seconds(this.#waitedMs)} s for room: ${why}.`;
  }
}
