import { LRUCache } from 'lru-cache';
import { Conversation, type Ownership } from './conversation.js';

/**
 * The bounded memory (at least REMEMBERED_CONVERSATIONS_MAX entries or its TTL) of conversations
 * this pod holds no socket for: the ones it closed, and the ones a sibling's ownership notice
 * named. Their reconnects are still refused to others and keep their first-turn settings.
 */
export class RememberedConversations {
  readonly #cache: LRUCache<string, Conversation>;

  constructor(max: number, ttlMs: number) {
    this.#cache = new LRUCache({ max, ttl: ttlMs, ttlAutopurge: false });
  }

  get size(): number {
    return this.#cache.size;
  }

  get(sessionId: string): Conversation | undefined {
    return this.#cache.get(sessionId);
  }

  /** Without refreshing its place: a sibling's question is not a use. */
  peek(sessionId: string): Conversation | undefined {
    return this.#cache.peek(sessionId);
  }

  set(sessionId: string, conv: Conversation): void {
    this.#cache.set(sessionId, conv);
  }

  delete(sessionId: string): void {
    this.#cache.delete(sessionId);
  }

  /** A sibling's ownership notice: a closed conversation this pod never held. */
  fromNotice(owner: Ownership): void {
    this.#cache.set(owner.sessionId, Conversation.heldElsewhere(owner));
  }

  /** The conversations this pod closed itself (a notice's are listed by the pod that held them). */
  closedHere(): Conversation[] {
    return [...this.#cache.values()].filter((c) => c.state === 'closed' && !c.heldElsewhere);
  }
}
