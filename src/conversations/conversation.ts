import type { CloseCause, ConnectSettings } from '../domain/vocabulary.js';
import type { EngineSocket, TurnRecord } from '../engine/socket.js';

/**
 * A conversation: one engine session held by one caller for one agent. Its states are explicit
 * and only the registry moves it between them:
 *   connecting → idle ⇄ busy → closed, and closed → connecting again on a reconnect.
 */
export type ConversationState = 'connecting' | 'idle' | 'busy' | 'closed';

export class Conversation {
  /** The engine session id; unknown until the first connect's session element arrives. */
  sessionId: string | undefined;
  readonly callerId: string;
  /** The agent as called: `coach` or `coach.7`; the engine key without `agent:`. */
  readonly agent: string;
  readonly settings: ConnectSettings;
  readonly createdAt: number;
  state: ConversationState = 'connecting';
  socket: EngineSocket | undefined;
  turns = 0;
  lastTurnAt: number | undefined;
  /** Last time a turn started or ended: the order in which idle conversations are evicted. */
  lastUsedAt = Date.now();
  closeCause: CloseCause | undefined;
  closedAt: number | undefined;
  endedByAgent = false;
  /** A sibling pod holds it (an ownership notice): this pod does not, or no longer after this turn. */
  heldElsewhere = false;
  idleTimer: NodeJS.Timeout | undefined;

  constructor(init: { callerId: string; agent: string; settings: ConnectSettings; sessionId?: string; createdAt?: number }) {
    this.createdAt = init.createdAt ?? Date.now();
    this.callerId = init.callerId;
    this.agent = init.agent;
    this.settings = init.settings;
    this.sessionId = init.sessionId;
  }

  idleSeconds(now = Date.now()): number {
    if (this.state === 'busy' || this.state === 'connecting') return 0;
    return Math.max(0, Math.round((now - this.lastUsedAt) / 1000));
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
