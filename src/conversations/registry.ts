import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import {
  DEVICE_NAMESPACE,
  settingsFrom,
  type AgentAccess,
  type Caller,
  type CloseCause,
  type ConnectInput,
  type EvictionLimit,
} from '../domain/vocabulary.js';
import type { EngineAdapter } from '../engine/adapter.js';
import type { Element } from '../engine/elements.js';
import type { TurnRecord } from '../engine/socket.js';
import { GatewayError, shuttingDown } from '../errors.js';
import type { Config } from '../ops/config.js';
import type { Metrics } from '../ops/metrics.js';
import { Admission } from './admission.js';
import {
  causeOf,
  Conversation,
  ownershipOf,
  type ConversationState,
  type IdlePolicy,
  type Ownership,
  type RunMembership,
} from './conversation.js';
import { turnNotes, type Previously } from './notes.js';
import { RememberedConversations } from './remembered.js';
import { checkOwner, checkSettings } from './request-checks.js';

export interface TurnRequest {
  line: string;
  signal?: AbortSignal;
  onElement?: (element: Element) => void;
  /** A suite run's conversation: counted under the run budgets, not the caller's interactive limit. */
  run?: RunMembership;
}

/** A turn as the registry ran it: the conversation, the engine's record and what happened to the socket. */
export interface TurnRun {
  conversation: Conversation;
  record: TurnRecord;
  /** This turn opened a new socket to an existing engine session, which lost the earlier planning. */
  reconnected: boolean;
  notes: string[];
}

/**
 * The pod-local pool of engine sockets and the in-memory registry of conversations. Every state
 * transition of a conversation happens here, synchronously between awaits, so limits, ownership
 * and "is a turn running?" have one answer even when requests race. The places for sockets are
 * counted by ./admission.ts, the conversations it holds no socket for are remembered by
 * ./remembered.ts, a request is checked against the conversation it names by ./request-checks.ts,
 * and the sentences a result carries come from ./notes.ts.
 */
export class ConversationRegistry {
  readonly #config: Config;
  readonly #engine: EngineAdapter;
  readonly #metrics: Metrics;
  readonly #log: FastifyBaseLogger;
  readonly #admission: Admission;
  /** Open conversations whose session id is known, and reconnects under way. */
  readonly #live = new Map<string, Conversation>();
  /** Closed conversations: still refused to others, and reconnected with their first settings. */
  readonly #remembered: RememberedConversations;
  readonly #connected: Array<(conv: Conversation) => void> = [];
  readonly #closed: Array<(sessionId: string) => void> = [];
  /** Those waiting for a place under the limits (whenRoom). */
  readonly #roomWaiters = new Set<() => void>();
  readonly #turnEnded: Array<(conv: Conversation, line: string, record: TurnRecord) => void> = [];
  readonly #idle: IdlePolicy;
  #busy = 0;
  #draining = false;

  constructor(deps: { config: Config; engine: EngineAdapter; metrics: Metrics; log: FastifyBaseLogger }) {
    this.#config = deps.config;
    this.#engine = deps.engine;
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#idle = { afterMs: deps.config.idleCloseMs, close: (conv) => this.#close(conv, 'idle') };
    this.#remembered = new RememberedConversations(deps.config.rememberedConversationsMax, deps.config.rememberedConversationsTtlMs);
    this.#admission = new Admission(deps.config, (conv, limit) => this.#evict(conv, limit), this.#roomMayHaveFreed);
  }

  get stats(): { open: number; runs: number; busy: number; remembered: number; draining: boolean } {
    return {
      open: this.#admission.size,
      runs: this.#admission.runConversations,
      busy: this.#busy,
      remembered: this.#remembered.size,
      draining: this.#draining,
    };
  }

  /** Called whenever a conversation connects here (a start or a reconnect): the peers are told. */
  onConnected(listener: (conv: Conversation) => void): void {
    this.#connected.push(listener);
  }

  /** Called whenever a conversation this pod held closes: the peers are told. */
  onClosed(listener: (sessionId: string) => void): void {
    this.#closed.push(listener);
  }

  /** Called after every turn that ran here, with its line: the debug page's recent turns (only while it is on). */
  onTurnEnded(listener: (conv: Conversation, line: string, record: TurnRecord) => void): void {
    this.#turnEnded.push(listener);
  }

  /**
   * What this pod knows of a session, for a sibling's lookup. `held`: its socket is here and
   * takes turns (an idle one on a draining pod is about to close, so it counts as only known);
   * `closedHere`: this pod held it and closed it, so it can tell how.
   */
  ownership(sessionId: string): { held: boolean; closedHere: boolean; owner: Ownership } | undefined {
    const live = this.#live.get(sessionId);
    if (live !== undefined) return { held: this.holds(sessionId), closedHere: false, owner: ownershipOf(live, sessionId) };
    const known = this.#remembered.peek(sessionId);
    return known === undefined ? undefined : { held: false, closedHere: !known.heldElsewhere, owner: ownershipOf(known, sessionId) };
  }

  /** Whether this pod holds the session (`held` of ownership), without building its ownership. */
  holds(sessionId: string): boolean {
    const live = this.#live.get(sessionId);
    return live !== undefined && !(this.#draining && live.state === 'idle');
  }

  /**
   * A sibling's ownership notice, kept with the remembered conversations. A sibling that connected
   * a conversation this pod holds idle (this pod was too slow to answer its lookup) now holds it:
   * one socket per conversation, so this pod's closes (once its running turn, if any, has ended).
   */
  remember(owner: Ownership): void {
    const live = this.#live.get(owner.sessionId);
    if (live !== undefined && live.state !== 'idle') {
      live.movedElsewhere();
      return;
    }
    if (live !== undefined) this.#close(live, 'moved', false);
    this.#remembered.fromNotice(owner);
    this.#publish();
  }

  /**
   * Opens an engine socket for a device without sending a line and closes it plainly at once, so
   * the engine creates the device's user (a memory restore needs it). Admitted like any
   * conversation (a run's, under its run's limits): it counts until its close handshake ends.
   */
  async warmUp(caller: Caller, access: AgentAccess, input: ConnectInput, run?: RunMembership): Promise<void> {
    const settings = settingsFrom(input, () => `${DEVICE_NAMESPACE}${randomUUID()}`);
    const conv = new Conversation({ callerId: caller.id, agentKey: access.agentKey, settings, run });
    this.#admit(conv);
    await this.#connect(conv, access);
    this.#close(conv, 'caller', false);
  }

  /**
   * Resolves when a place under the limits may have come free (a conversation went idle or
   * closed, a closing socket ended), when `signal` aborts, or after `ms`: the caller then tries
   * again. Nothing polls.
   */
  whenRoom(signal: AbortSignal, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#roomWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      if (signal.aborted) return done();
      signal.addEventListener('abort', done, { once: true });
      this.#roomWaiters.add(done);
    });
  }

  /** Wakes those waiting for room; a field, so that each state change queues it without a new closure. */
  readonly #roomMayHaveFreed = (): void => {
    for (const waiter of [...this.#roomWaiters]) waiter();
  };

  /** Opens a new conversation and runs its first turn. */
  async start(caller: Caller, access: AgentAccess, input: ConnectInput, turn: TurnRequest): Promise<TurnRun> {
    const settings = settingsFrom(input, () => `${DEVICE_NAMESPACE}${randomUUID()}`);
    const conv = new Conversation({ callerId: caller.id, agentKey: access.agentKey, settings, run: turn.run });
    this.#admit(conv);
    await this.#connect(conv, access);
    return this.#runTurn(conv, turn, false);
  }

  /** The next turn: over the live socket, or over a new one to the same engine session. */
  async turn(caller: Caller, access: AgentAccess, sessionId: string, input: ConnectInput, turn: TurnRequest): Promise<TurnRun> {
    this.#refuseWhileDraining();
    const live = this.#live.get(sessionId);
    if (live !== undefined) {
      checkOwner(live, caller, access.agentKey);
      if (live.state !== 'idle') {
        throw new GatewayError('turn_in_progress', 'A turn of this conversation is still running; send the next line when it has ended.');
      }
      checkSettings(live, input);
      return this.#runTurn(live, turn, false);
    }
    const known = this.#remembered.get(sessionId);
    if (known !== undefined) {
      checkOwner(known, caller, access.agentKey);
      checkSettings(known, input);
    }
    const conv =
      known ??
      new Conversation({
        callerId: caller.id,
        agentKey: access.agentKey,
        settings: settingsFrom(input, () => `${DEVICE_NAMESPACE}${randomUUID()}`),
        sessionId,
        run: turn.run,
      });
    const previously = known === undefined ? 'unknown' : known.heldElsewhere ? 'elsewhere' : 'closed';
    known?.reconnectFor(turn.run);
    this.#admit(conv);
    await this.#connect(conv, access);
    return this.#runTurn(conv, turn, true, previously);
  }

  /** A live or remembered conversation of this caller and agent. */
  get(caller: Caller, agentKey: string, sessionId: string): Conversation {
    const conv = this.#live.get(sessionId) ?? this.#remembered.get(sessionId);
    if (conv === undefined) {
      throw new GatewayError('not_found', 'This pod holds and remembers no conversation with this session_id.');
    }
    checkOwner(conv, caller, agentKey);
    return conv;
  }

  /** DELETE: a plain close; closing a closed conversation again is fine. */
  closeByCaller(caller: Caller, agentKey: string, sessionId: string): Conversation {
    const conv = this.get(caller, agentKey, sessionId);
    this.#close(conv, 'caller');
    return conv;
  }

  /** The caller's open and remembered conversations, newest first. */
  list(callerId: string): Conversation[] {
    return this.all().filter((conv) => conv.callerId === callerId);
  }

  /** Every conversation on the pod, open and remembered (for the debug page). */
  all(): Conversation[] {
    const open = this.#admission.conversations().filter((c) => c.sessionId !== undefined);
    return [...open, ...this.#remembered.closedHere()].sort((a, b) => b.createdAt - a.createdAt);
  }

  /**
   * Shutdown: refuse new work at once, give running turns the grace period, then close every
   * socket plainly (1001 "going away").
   */
  async drain(graceMs: number): Promise<void> {
    this.#draining = true;
    this.#metrics.draining.set(1);
    const deadline = Date.now() + graceMs;
    while (this.#busyOrConnecting() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, deadline - Date.now()))));
    }
    for (const conv of this.#admission.conversations()) this.#close(conv, 'shutdown');
  }

  #busyOrConnecting(): boolean {
    return this.#admission.conversations().some((conv) => conv.state !== 'idle');
  }

  #refuseWhileDraining(): void {
    if (this.#draining) throw shuttingDown();
  }

  /** Reserves a place for a new socket, evicting the least recently used idle interactive conversation if needed. */
  #admit(conv: Conversation): void {
    this.#refuseWhileDraining();
    this.#admission.makeRoom(conv);
    this.#setState(conv, 'connecting');
    this.#admission.enter(conv);
    if (conv.sessionId !== undefined) this.#live.set(conv.sessionId, conv);
    this.#publish();
  }

  async #connect(conv: Conversation, access: AgentAccess): Promise<void> {
    const reconnect = conv.sessionId;
    let socket;
    try {
      await this.#admission.roomForSocket(conv);
      conv.run?.opening();
      socket = await this.#engine.connect({
        agentKey: access.agentKey,
        settings: conv.settings,
        signIn: access.signIn,
        ...(reconnect === undefined ? {} : { sessionId: reconnect }),
      });
    } catch (err) {
      this.#release(conv);
      throw err;
    }
    if (conv.state !== 'connecting') {
      // Shut down while connecting.
      socket.close(1001, 'going away');
      throw shuttingDown();
    }
    conv.connected(socket);
    this.#live.set(socket.sessionId, conv);
    this.#remembered.delete(socket.sessionId);
    socket.onClose(() => this.#close(conv, conv.endedByAgent ? 'agent_ended' : 'engine_closed'));
    this.#log.info(
      { event: reconnect ? 'conversation_reconnected' : 'conversation_opened', session_id: socket.sessionId, agent: conv.agentKey },
      reconnect ? 'conversation reconnected' : 'conversation opened',
    );
    for (const listener of this.#connected) listener(conv);
  }

  async #runTurn(conv: Conversation, turn: TurnRequest, reconnected: boolean, previously: Previously = 'unknown'): Promise<TurnRun> {
    const socket = conv.socket!;
    this.#setState(conv, 'busy');
    const record = await socket.runTurn(turn.line, { budgetMs: this.#config.turnBudgetMs, signal: turn.signal, onElement: turn.onElement });
    // A socket's first turn refused by the engine is a refused connect (counted by the
    // adapter), not a turn.
    if (!(record.refusal !== undefined && record.first)) {
      this.#metrics.turnDuration.observe({ outcome: record.outcome }, record.durationMs / 1000);
    }
    if (record.refusal !== undefined && conv.turns === 0 && !reconnected) {
      // The engine refused the session itself: there is no conversation to keep.
      this.#close(conv, 'turn_failed', false);
      throw record.refusal;
    }
    conv.turnEnded(record);
    for (const listener of this.#turnEnded) listener(conv, turn.line, record);
    if (conv.state === 'busy') {
      if (record.outcome === 'exit' && !record.endedByAgent) this.#setState(conv, 'idle');
      else this.#close(conv, causeOf(record));
    }
    // A sibling reconnected it during this turn.
    if (conv.heldElsewhere && conv.state === 'idle') this.remember(ownershipOf(conv, conv.sessionId!));
    return { conversation: conv, record, reconnected, notes: turnNotes(conv, record, reconnected ? previously : undefined) };
  }

  #evict(conv: Conversation, limit: EvictionLimit): void {
    this.#metrics.evictions.inc({ limit });
    this.#log.info({ event: 'conversation_evicted', session_id: conv.sessionId, limit }, 'conversation evicted');
    this.#close(conv, 'evicted');
  }

  /** The one way out of the open set: a plain socket close, never `#exit`. */
  #close(conv: Conversation, cause: CloseCause, remember = true): void {
    if (conv.state === 'closed') return;
    this.#setState(conv, 'closed');
    const socket = conv.closedBy(cause);
    this.#forget(conv, socket);
    if (socket !== undefined) {
      if (cause === 'shutdown') socket.close(1001, 'going away');
      else socket.close(1000);
    }
    if (remember && conv.sessionId !== undefined) this.#remembered.set(conv.sessionId, conv);
    this.#metrics.closes.inc({ cause });
    this.#log.info({ event: 'conversation_closed', session_id: conv.sessionId, cause }, 'conversation closed');
    this.#publish();
    if (conv.sessionId !== undefined) for (const listener of this.#closed) listener(conv.sessionId);
  }

  /** A connect that failed: give the place back; a remembered conversation stays as it was. */
  #release(conv: Conversation): void {
    this.#setState(conv, 'closed');
    this.#forget(conv);
    this.#publish();
  }

  #forget(conv: Conversation, closing?: Parameters<Admission['leave']>[1]): void {
    this.#admission.leave(conv, closing);
    if (conv.sessionId !== undefined && this.#live.get(conv.sessionId) === conv) this.#live.delete(conv.sessionId);
  }

  #setState(conv: Conversation, state: ConversationState): void {
    if (conv.state === 'busy') this.#busy -= 1;
    if (state === 'busy') this.#busy += 1;
    conv.moveTo(state, this.#idle);
    this.#metrics.busyConversations.set(this.#busy);
    if (state === 'idle' || state === 'closed') queueMicrotask(this.#roomMayHaveFreed);
  }

  #publish(): void {
    this.#metrics.openConversations.set(this.#admission.size);
    this.#metrics.rememberedConversations.set(this.#remembered.size);
  }
}
