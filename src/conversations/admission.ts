import type { EvictionLimit } from '../domain/vocabulary.js';
import type { EngineSocket } from '../engine/socket.js';
import { GatewayError } from '../errors.js';
import { leastRecentlyUsedIdle, type Conversation } from './conversation.js';

export interface Limits {
  maxConversationsPerCaller: number;
  maxConversationsPerPod: number;
  /** How long a new connect waits for closing sockets to end before ending them. */
  engineConnectTimeoutMs: number;
}

/**
 * The pod's places for engine sockets: the open conversations, per caller and in all, and the
 * sockets still closing, against MAX_CONVERSATIONS_PER_CALLER and MAX_CONVERSATIONS_PER_POD. A new
 * conversation takes the place of the least recently used idle one when a limit is reached, and
 * is refused when every one is busy.
 */
export class Admission {
  readonly #limits: Limits;
  readonly #evict: (conv: Conversation, limit: EvictionLimit) => void;
  /** Told when a closing socket has ended: a place may have come free. */
  readonly #freed: () => void;
  /** Conversations holding (or opening) a socket. */
  readonly #open = new Set<Conversation>();
  readonly #byCaller = new Map<string, Set<Conversation>>();
  /** Sockets the gateway closed whose close handshake is not over, with their caller: they still count. */
  readonly #closing = new Map<EngineSocket, string>();

  constructor(limits: Limits, evict: (conv: Conversation, limit: EvictionLimit) => void, freed: () => void) {
    this.#limits = limits;
    this.#evict = evict;
    this.#freed = freed;
  }

  get size(): number {
    return this.#open.size;
  }

  /** The open conversations (a copy: closing one while going through them is fine). */
  conversations(): Conversation[] {
    return [...this.#open];
  }

  /** Makes room for one more conversation of this caller, evicting if needed; throws when there is none. */
  makeRoom(callerId: string): void {
    const mine = this.#byCaller.get(callerId);
    const { maxConversationsPerCaller: perCaller, maxConversationsPerPod: perPod } = this.#limits;
    if (mine !== undefined && mine.size >= perCaller) {
      const victim = leastRecentlyUsedIdle(mine);
      if (victim === undefined) {
        throw new GatewayError(
          'caller_conversation_limit',
          `You already have ${mine.size} open conversations with a turn running or connecting (the limit is ${perCaller}); close ` +
            `one (DELETE) or wait for a turn to end.`,
        );
      }
      this.#evict(victim, 'caller');
    }
    if (this.#open.size >= perPod) {
      const victim = leastRecentlyUsedIdle(this.#open);
      if (victim === undefined) {
        throw new GatewayError(
          'pod_conversation_limit',
          `This pod holds ${this.#open.size} conversations, all busy (the limit is ${perPod}); retry shortly.`,
        );
      }
      this.#evict(victim, 'pod');
    }
  }

  /** Takes the place made for it. */
  enter(conv: Conversation): void {
    this.#open.add(conv);
    const mine = this.#byCaller.get(conv.callerId);
    if (mine === undefined) this.#byCaller.set(conv.callerId, new Set([conv]));
    else mine.add(conv);
  }

  /** Gives the place back; a socket it closed keeps counting until it has ended. */
  leave(conv: Conversation, closing?: EngineSocket): void {
    this.#open.delete(conv);
    const mine = this.#byCaller.get(conv.callerId);
    mine?.delete(conv);
    if (mine?.size === 0) this.#byCaller.delete(conv.callerId);
    if (closing !== undefined) {
      this.#closing.set(closing, conv.callerId);
      void closing.whenEnded().then(() => {
        this.#closing.delete(closing);
        this.#freed();
      });
    }
  }

  /**
   * The limits count engine sockets, not only conversations: a socket closed a moment ago keeps
   * its place until its close handshake is over; one that outlasts the connect timeout is ended.
   */
  async roomForSocket(conv: Conversation): Promise<void> {
    const deadline = Date.now() + this.#limits.engineConnectTimeoutMs;
    for (;;) {
      const closingMine = [...this.#closing].filter(([, callerId]) => callerId === conv.callerId).map(([socket]) => socket);
      const blocking =
        (this.#byCaller.get(conv.callerId)?.size ?? 0) + closingMine.length > this.#limits.maxConversationsPerCaller
          ? closingMine
          : this.#open.size + this.#closing.size > this.#limits.maxConversationsPerPod
            ? [...this.#closing.keys()]
            : [];
      if (blocking.length === 0) return;
      const left = deadline - Date.now();
      if (left <= 0) {
        for (const socket of blocking) socket.terminate();
        await Promise.all(blocking.map((socket) => socket.whenEnded()));
      } else {
        await firstOrAfter(
          blocking.map((socket) => socket.whenEnded()),
          left,
        );
      }
    }
  }
}

function firstOrAfter(promises: Array<Promise<void>>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void Promise.race(promises).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
