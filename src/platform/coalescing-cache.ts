/**
 * Answers cached for a short TTL, and identical concurrent look-ups coalesced into one: every
 * waiter gets the same answer or the same failure. Failures are never cached.
 */

import { LRUCache } from 'lru-cache';

export type CacheResult = 'hit' | 'miss' | 'coalesced';

export class CoalescingCache<V extends object> {
  readonly #values: LRUCache<string, V> | undefined;
  readonly #inFlight = new Map<string, Promise<V>>();
  readonly #observe: (result: CacheResult) => void;

  constructor(opts: { ttlMs: number; max: number; observe?: (result: CacheResult) => void }) {
    // A TTL of 0 turns caching off; coalescing still applies.
    this.#values = opts.ttlMs > 0 ? new LRUCache<string, V>({ max: opts.max, ttl: opts.ttlMs }) : undefined;
    this.#observe = opts.observe ?? (() => {});
  }

  /** The cached answer without waiting, or undefined; not counted (the caller counts what it uses). */
  peek(key: string): V | undefined {
    return this.#values?.get(key);
  }

  get(key: string, load: () => Promise<V>): Promise<V> {
    const cached = this.peek(key);
    if (cached !== undefined) {
      this.#observe('hit');
      return Promise.resolve(cached);
    }
    const running = this.#inFlight.get(key);
    if (running !== undefined) {
      this.#observe('coalesced');
      return running;
    }
    this.#observe('miss');
    const loading = load().then(
      (value) => {
        this.#inFlight.delete(key);
        this.#values?.set(key, value);
        return value;
      },
      (err: unknown) => {
        this.#inFlight.delete(key);
        throw err;
      },
    );
    this.#inFlight.set(key, loading);
    return loading;
  }
}
