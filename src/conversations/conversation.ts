import type { CloseCause, ConnectSettings } from '../domain/vocabulary.js';
import type { EngineSocket, TurnRecord } from '../engine/socket.js';

/**
 * A conversation's states:
 *   connecting → busy ⇄ idle → closed, connecting → closed, and closed → connecting again on a reconnect.
 */
export type ConversationState = 'connecting' | 'idle' | 'busy' | 'closed';

const NEXT: Record<ConversationState, readonly ConversationState[]> = {
  connecting: ['connecting', 'busy', 'closed'],
  busy: ['idle', 'closed'],
  idle: ['busy', 'closed'],
  closed: ['connecting'],
};

/**
 * A suite run a conversation belongs to: its conversations are not the caller's interactive ones.
 * They count under the run's own `concurrency`, the caller's and the pod's run budgets and the
 * pod's limit, never under the caller's interactive limit (./admission.ts).
 */
export interface RunMembership {
  id: string;
  concurrency: number;
  /**
   * Called right before an engine session of one of the run's conversations opens (a start, a
   * reconnect, a warm-up), after any wait for room: throws when the pod no longer holds the run, so
   * that a pod resumed after a pause opens nothing for a run a sibling may have taken over.
   */
  opening(): void;
}

/** How an idle conversation ends: closed by `close` once it has been idle for `afterMs`. */
export interface IdlePolicy {
  afterMs: number;
  close: (conv: Conversation) => void;
}

/** Who owns a conversation and how it connected: what the pods of a release tell each other. */
export interface Ownership {
  sessionId: string;
  callerId: string;
  /** The engine key (`coach`, `coach.7`); on the wire between pods it is the field `agent`. */
  agentKey: string;
  settings: ConnectSettings;
  turns: number;
  createdAt: number;
}

/** What the pods tell each other of `conv`, under the session id it has (or is given). */
export const ownershipOf = (conv: Conversation, sessionId: string): Ownership => {
  const { callerId, agentKey, settings, turns, createdAt } = conv;
  return { sessionId, callerId, agentKey, settings, turns, createdAt };
};

/**
 * A conversation: one engine session held by one caller for one agent. Everyone reads it; only
 * the registry moves it, through the transitions below (a state change that is not one throws),
 * so its fields are never written from outside.
 */
export class Conversation {
  readonly callerId: string;
  /** The agent as called: `coach` or `coach.7`; the engine key without `agent:`. */
  readonly agentKey: string;
  readonly settings: ConnectSettings;
  readonly createdAt: number;

  #sessionId: string | undefined;
  #state: ConversationState = 'connecting';
  #socket: EngineSocket | undefined;
  #turns = 0;
  #lastTurnAt: number | undefined;
  #lastUsedAt = Date.now();
  #closeCause: CloseCause | undefined;
  #closedAt: number | undefined;
  #endedByAgent = false;
  #heldElsewhere = false;
  #run: RunMembership | undefined;
  #idleTimer: NodeJS.Timeout | undefined;

  constructor(init: {
    callerId: string;
    agentKey: string;
    settings: ConnectSettings;
    sessionId?: string;
    createdAt?: number;
    run?: RunMembership | undefined;
  }) {
    this.createdAt = init.createdAt ?? Date.now();
    this.#run = init.run;
    this.callerId = init.callerId;
    this.agentKey = init.agentKey;
    this.settings = init.settings;
    this.#sessionId = init.sessionId;
  }

  /** A conversation a sibling pod holds (its ownership notice): closed here, with the turns it had. */
  static heldElsewhere(init: Ownership): Conversation {
    const conv = new Conversation(init);
    conv.#state = 'closed';
    conv.#turns = init.turns;
    conv.#heldElsewhere = true;
    return conv;
  }

  /** The suite run holding it; undefined: an interactive conversation (a front's). */
  get run(): RunMembership | undefined {
    return this.#run;
  }

  /** A closed conversation reconnects for whoever calls now: a run's, or an interactive one. */
  reconnectFor(run: RunMembership | undefined): void {
    if (this.#state !== 'closed') throw new Error(`a ${this.#state} conversation keeps its run`);
    this.#run = run;
  }

  /** The engine session id; unknown until the first connect's session element arrives. */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  get state(): ConversationState {
    return this.#state;
  }

  /** The engine socket while the conversation holds one. */
  get socket(): EngineSocket | undefined {
    return this.#socket;
  }

  get turns(): number {
    return this.#turns;
  }

  get lastTurnAt(): number | undefined {
    return this.#lastTurnAt;
  }

  /** Last time a turn started or ended: the order in which idle conversations are evicted. */
  get lastUsedAt(): number {
    return this.#lastUsedAt;
  }

  get closeCause(): CloseCause | undefined {
    return this.#closeCause;
  }

  get closedAt(): number | undefined {
    return this.#closedAt;
  }

  get endedByAgent(): boolean {
    return this.#endedByAgent;
  }

  /** A sibling pod holds it (an ownership notice): this pod does not, or no longer after this turn. */
  get heldElsewhere(): boolean {
    return this.#heldElsewhere;
  }

  idleSeconds(now = Date.now()): number {
    if (this.#state === 'busy' || this.#state === 'connecting') return 0;
    return Math.max(0, Math.round((now - this.#lastUsedAt) / 1000));
  }

  /** The one state change; `idle` closes the conversation after its idle time unless it moves on first. */
  moveTo(state: ConversationState, idle: IdlePolicy): void {
    if (!NEXT[this.#state].includes(state)) throw new Error(`a conversation does not go from ${this.#state} to ${state}`);
    if (state === 'idle') this.#armIdleTimer(idle);
    if (state === 'closed') {
      clearTimeout(this.#idleTimer);
      this.#idleTimer = undefined;
    }
    if (state === 'busy' || state === 'idle') this.#lastUsedAt = Date.now();
    this.#state = state;
  }

  /**
   * One timer per conversation, re-armed whenever it goes idle (a refresh, not a new timer per
   * turn): it fires `afterMs` after the last time the conversation went idle, and does nothing
   * unless the conversation is still idle then.
   */
  #armIdleTimer(idle: IdlePolicy): void {
    if (this.#idleTimer !== undefined) {
      this.#idleTimer.refresh();
      return;
    }
    this.#idleTimer = setTimeout(() => {
      if (this.#state === 'idle') idle.close(this);
    }, idle.afterMs).unref();
  }

  /** Its socket is open (a start or a reconnect): it is held here, and whatever closed it before is over. */
  connected(socket: EngineSocket): void {
    this.#socket = socket;
    this.#sessionId = socket.sessionId;
    this.#closeCause = undefined;
    this.#closedAt = undefined;
    this.#heldElsewhere = false;
  }

  turnEnded(record: TurnRecord): void {
    this.#turns += 1;
    this.#lastTurnAt = Date.now();
    this.#endedByAgent = record.endedByAgent;
  }

  /** A sibling reconnected it while a turn runs here: this pod lets it go once the turn has ended. */
  movedElsewhere(): void {
    this.#heldElsewhere = true;
  }

  /** Closed (after `moveTo('closed')`): answers the socket to close, which it no longer holds. */
  closedBy(cause: CloseCause): EngineSocket | undefined {
    const socket = this.#socket;
    this.#closeCause = cause;
    this.#closedAt = Date.now();
    this.#socket = undefined;
    return socket;
  }
}

/** The conversation an eviction closes first. */
export function leastRecentlyUsedIdle(conversations: Iterable<Conversation>): Conversation | undefined {
  let oldest: Conversation | undefined;
  for (const conv of conversations) {
    if (conv.state === 'idle' && (oldest === undefined || conv.lastUsedAt < oldest.lastUsedAt)) oldest = conv;
  }
  return oldest;
}

/** Why a turn that did not leave its conversation idle closes it. */
export function causeOf(record: TurnRecord): CloseCause {
  if (record.endedByAgent) return 'agent_ended';
  return record.outcome === 'cancelled' ? 'cancelled' : 'turn_failed';
}
