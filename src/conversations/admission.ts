import type { EvictionLimit } from '../domain/vocabulary.js';
import type { EngineSocket } from '../engine/socket.js';
import { GatewayError } from '../errors.js';
import { leastRecentlyUsedIdle, type Conversation } from './conversation.js';

export interface Limits {
  maxConversationsPerCaller: number;
  maxConversationsPerPod: number;
  /** The conversations of every suite run on the pod together; below maxConversationsPerPod. */
  maxRunConversationsPerPod: number;
  /** The conversations of one caller's suite runs together. */
  maxRunConversationsPerCaller: number;
  /** How long a new connect waits for closing sockets to end before ending them. */
  engineConnectTimeoutMs: number;
}

/** The limit a run's conversation found full, as its waiting note names it, and what held it. */
export interface RunLimitFull {
  limit: 'MAX_RUN_CONVERSATIONS_PER_POD' | 'MAX_RUN_CONVERSATIONS_PER_CALLER' | 'MAX_CONVERSATIONS_PER_POD' | 'concurrency';
  held: number;
}

/** A count of places: the open conversations in it, and its limit. */
interface Bucket {
  key: string;
  limit: number;
}

const POD = 'pod';
const INTERACTIVE = 'interactive';
const RUNS = 'runs';

/**
 * The pod's places for engine sockets: the open conversations and the sockets still closing,
 * counted in buckets. An interactive conversation (a front's) counts under its caller's
 * MAX_CONVERSATIONS_PER_CALLER and the pod's MAX_CONVERSATIONS_PER_POD, and takes the place of the
 * least recently used idle interactive conversation when a limit is reached, or is refused when
 * every one is busy. A suite run's conversation counts under its run's concurrency, the caller's
 * MAX_RUN_CONVERSATIONS_PER_CALLER, the pod's MAX_RUN_CONVERSATIONS_PER_POD and the pod's limit;
 * it never evicts and is never evicted (a run's conversation is idle only between two of its
 * turns): when a limit is full it is refused, and the run waits for room. The run budget being
 * below the pod's limit, interactive conversations always find room.
 */
export class Admission {
  readonly #limits: Limits;
  readonly #evict: (conv: Conversation, limit: EvictionLimit) => void;
  /** Told when a closing socket has ended: a place may have come free. */
  readonly #freed: () => void;
  /** The open conversations (holding or opening a socket) of each bucket. */
  readonly #open = new Map<string, Set<Conversation>>();
  /** Sockets the gateway closed whose close handshake is not over, with their buckets: they still count. */
  readonly #closing = new Map<EngineSocket, string[]>();

  constructor(limits: Limits, evict: (conv: Conversation, limit: EvictionLimit) => void, freed: () => void) {
    this.#limits = limits;
    this.#evict = evict;
    this.#freed = freed;
  }

  get size(): number {
    return this.#in(POD).size;
  }

  /** The open conversations of suite runs. */
  get runConversations(): number {
    return this.#in(RUNS).size;
  }

  /** The open conversations (a copy: closing one while going through them is fine). */
  conversations(): Conversation[] {
    return [...this.#in(POD)];
  }

  /** Makes room for one more conversation, evicting if needed (interactive ones only); throws when there is none. */
  makeRoom(conv: Conversation): void {
    if (conv.run !== undefined) {
      this.#runRoom(conv);
      return;
    }
    const mine = this.#in(`caller:${conv.callerId}`);
    const { maxConversationsPerCaller: perCaller, maxConversationsPerPod: perPod } = this.#limits;
    if (mine.size >= perCaller) {
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
    if (this.size >= perPod) {
      const victim = leastRecentlyUsedIdle(this.#in(INTERACTIVE));
      if (victim === undefined) {
        throw new GatewayError(
          'pod_conversation_limit',
          `This pod holds ${this.size} conversations, all busy (the limit is ${perPod}); retry shortly.`,
        );
      }
      this.#evict(victim, 'pod');
    }
  }

  /** A run's conversation is refused, never evicts, when one of its limits is full; the error's details name it. */
  #runRoom(conv: Conversation): void {
    const full = this.#runLimitFull(conv);
    if (full === undefined) return;
    const { limit, held } = full;
    const perCaller = limit === 'MAX_RUN_CONVERSATIONS_PER_CALLER' || limit === 'concurrency';
    const message =
      limit === 'MAX_RUN_CONVERSATIONS_PER_POD'
        ? `This pod's suite runs hold ${held} conversations (MAX_RUN_CONVERSATIONS_PER_POD); the run waits for one to end.`
        : limit === 'MAX_RUN_CONVERSATIONS_PER_CALLER'
          ? `Your suite runs hold ${held} conversations (MAX_RUN_CONVERSATIONS_PER_CALLER); the run waits for one to end.`
          : limit === 'concurrency'
            ? `The run holds ${held} conversations, its concurrency; it waits for one to end.`
            : `This pod holds ${held} conversations (MAX_CONVERSATIONS_PER_POD); the run waits for one to end.`;
    throw new GatewayError(perCaller ? 'caller_conversation_limit' : 'pod_conversation_limit', message, full);
  }

  #runLimitFull(conv: Conversation): RunLimitFull | undefined {
    const run = conv.run!;
    const { maxRunConversationsPerPod, maxRunConversationsPerCaller, maxConversationsPerPod } = this.#limits;
    const checks: Array<[RunLimitFull['limit'], number, number]> = [
      ['concurrency', this.#in(`run:${run.id}`).size, run.concurrency],
      ['MAX_RUN_CONVERSATIONS_PER_CALLER', this.#in(`runs-of:${conv.callerId}`).size, maxRunConversationsPerCaller],
      ['MAX_RUN_CONVERSATIONS_PER_POD', this.#in(RUNS).size, maxRunConversationsPerPod],
      ['MAX_CONVERSATIONS_PER_POD', this.size, maxConversationsPerPod],
    ];
    const full = checks.find(([, held, limit]) => held >= limit);
    return full === undefined ? undefined : { limit: full[0], held: full[1] };
  }

  /** Takes the place made for it. */
  enter(conv: Conversation): void {
    for (const { key } of this.#bucketsOf(conv)) {
      const set = this.#open.get(key);
      if (set === undefined) this.#open.set(key, new Set([conv]));
      else set.add(conv);
    }
  }

  /** Gives the place back; a socket it closed keeps counting until it has ended. */
  leave(conv: Conversation, closing?: EngineSocket): void {
    const buckets = this.#bucketsOf(conv);
    for (const { key } of buckets) {
      const set = this.#open.get(key);
      set?.delete(conv);
      if (set?.size === 0) this.#open.delete(key);
    }
    if (closing !== undefined) {
      this.#closing.set(
        closing,
        buckets.map((b) => b.key),
      );
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
    const buckets = this.#bucketsOf(conv);
    for (;;) {
      let blocking: EngineSocket[] = [];
      for (const { key, limit } of buckets) {
        const closingHere = [...this.#closing].filter(([, keys]) => keys.includes(key)).map(([socket]) => socket);
        if (this.#in(key).size + closingHere.length > limit) {
          blocking = closingHere;
          break;
        }
      }
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

  /** The counts a conversation is in, the caller's (or its run's) first, the pod's last. */
  #bucketsOf(conv: Conversation): Bucket[] {
    const { run, callerId } = conv;
    const limits = this.#limits;
    const pod = { key: POD, limit: limits.maxConversationsPerPod };
    if (run === undefined) {
      return [{ key: `caller:${callerId}`, limit: limits.maxConversationsPerCaller }, { key: INTERACTIVE, limit: Infinity }, pod];
    }
    return [
      { key: `run:${run.id}`, limit: run.concurrency },
      { key: `runs-of:${callerId}`, limit: limits.maxRunConversationsPerCaller },
      { key: RUNS, limit: limits.maxRunConversationsPerPod },
      pod,
    ];
  }

  #in(key: string): ReadonlySet<Conversation> {
    return this.#open.get(key) ?? EMPTY;
  }
}

const EMPTY: ReadonlySet<Conversation> = new Set();

function firstOrAfter(promises: Array<Promise<void>>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void Promise.race(promises).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
