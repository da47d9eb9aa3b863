import type { AgentAccess, Caller, ConnectInput } from '../domain/vocabulary.js';
import type { RunMembership } from './conversation.js';
import type { CallContext, StartCall, TurnCall } from './calls.js';
import { localOnly, type Forwarded, type Forwarder, type Sibling } from './forwarder.js';
import type { ConversationRegistry } from './registry.js';
import { conversationView, turnResultView, type ConversationView, type TurnResultView } from './views.js';

/**
 * The conversation calls of every front (the REST routes, the MCP tools, suite runs): run here
 * when this pod holds the conversation; otherwise on the sibling holding it open (its socket
 * keeps the planning), or, when no sibling does, here with the owner and first-turn settings a
 * sibling remembers (a reconnect). Without siblings every call runs here. Answers and errors are
 * the same wherever the call ran, in the API's shapes (./views.ts).
 */
export class ConversationService {
  readonly #registry: ConversationRegistry;
  readonly #forwarder: Forwarder;

  constructor(deps: { registry: ConversationRegistry; forwarder?: Forwarder }) {
    this.#registry = deps.registry;
    this.#forwarder = deps.forwarder ?? localOnly;
  }

  /** A new conversation always opens here; the siblings hear of its owner. */
  async start(call: StartCall): Promise<TurnResultView> {
    const result = await this.#registry.start(call.caller, call.access, call.connect, call);
    return turnResultView(result, call.line);
  }

  async turn(call: TurnCall): Promise<TurnResultView> {
    const there = await this.#onHolder(call, (sibling) => this.#forwarder.turn(sibling, call));
    if (there !== undefined) return there.answer;
    const result = await this.#registry.turn(call.caller, call.access, call.sessionId, call.connect, call);
    return turnResultView(result, call.line);
  }

  async get(call: CallContext): Promise<ConversationView> {
    // Not held anywhere: the pod that closed it tells how, unless this pod closed it itself.
    const there = await this.#onHolder(call, (sibling, asHolder) => this.#forwarder.get(sibling, call, asHolder), true);
    if (there !== undefined) return there.answer;
    return conversationView(this.#registry.get(call.caller, call.agent.key, call.sessionId));
  }

  /** DELETE: a plain close where the socket is; answers the note the 204 carries. */
  async close(call: CallContext): Promise<string> {
    const there = await this.#onHolder(call, (sibling) => this.#forwarder.close(sibling, call));
    if (there !== undefined) return there.answer;
    return conversationView(this.#registry.closeByCaller(call.caller, call.agent.key, call.sessionId)).notes.join(' ');
  }

  /**
   * Opens and closes an engine socket for a device that never connected, so that the engine
   * creates its user (a memory restore needs one); counted in the limits like any conversation
   * (a run's, under the run's).
   */
  warmUp(caller: Caller, access: AgentAccess, connect: ConnectInput, run?: RunMembership): Promise<void> {
    return this.#registry.warmUp(caller, access, connect, run);
  }

  /** Resolves when a place under the limits may have come free, when `signal` aborts, or after `ms`. */
  whenRoom(signal: AbortSignal, ms: number): Promise<void> {
    return this.#registry.whenRoom(signal, ms);
  }

  /** The caller's conversations on every pod of the release, newest first; an open one wins over a closed copy. */
  async list(caller: Caller): Promise<ConversationView[]> {
    const now = Date.now();
    const here = this.#registry.list(caller.id).map((conv) => conversationView(conv, now));
    const there = await this.#forwarder.conversationsOf(caller.id);
    const bySession = new Map<string, ConversationView>();
    for (const view of [...here, ...there]) {
      const seen = bySession.get(view.session_id);
      if (seen === undefined || (seen.connection === 'closed' && view.connection === 'open')) bySession.set(view.session_id, view);
    }
    return [...bySession.values()].sort((a, b) => b.created_at.localeCompare(a.created_at));
  }

  /**
   * The call run on the sibling holding the conversation (or, `orCloser`, on the one that closed
   * it), or undefined to run it here. The owner a sibling remembers is kept here first, so a call
   * that runs here is checked against it. A remembered holder that no longer holds it (or no longer
   * answers) costs one fresh lookup.
   */
  async #onHolder<T>(
    call: CallContext,
    forward: (sibling: Sibling, asHolder: boolean) => Promise<Forwarded<T>>,
    orCloser = false,
  ): Promise<{ answer: T } | undefined> {
    if (call.forwarded === true || this.#registry.holds(call.sessionId)) return undefined;
    const here = this.#registry.ownership(call.sessionId);
    let gone: Sibling | undefined;
    for (let fresh = false; ; fresh = true) {
      const found = await this.#forwarder.locate(call.sessionId, fresh);
      if (found.owner !== undefined && this.#registry.ownership(call.sessionId) === undefined) this.#registry.remember(found.owner);
      const sibling = found.holder ?? (orCloser && here?.closedHere !== true ? found.closer : undefined);
      // A sibling that could not take the call (gone, shutting down) is not asked twice.
      if (sibling === undefined || sibling.address === gone?.address) return undefined;
      const forwarded = await forward(sibling, sibling === found.holder);
      if (forwarded.ran) return forwarded;
      if (found.remembered !== true) return undefined;
      if (forwarded.why === 'gone') gone = sibling;
    }
  }
}
