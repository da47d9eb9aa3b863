import type { Dispatcher } from 'undici';
import type { ConversationRegistry } from '../conversations/registry.js';
import type { Element } from '../engine/elements.js';
import { NDJSON, ndjsonLines } from '../http/ndjson.js';
import { errorStatus, GatewayError, type ErrorCode } from '../errors.js';
import type { AgentAccess, Caller } from '../platform/authorizer.js';
import { conversationView, turnResultView, type ConversationView, type TurnResultView } from '../routes/views.js';
import type { ConnectInput } from '../schemas/connect.js';
import type { AgentRef } from '../schemas/requests.js';
import type { ForwardRequest } from './client.js';
import type { PeerMetrics } from './metrics.js';
import type { Peer } from './peer-list.js';
import type { Peers } from './peers.js';
import { PEER_HEADER, secretCheck } from './secret.js';

/**
 * A conversation call from any front (the REST routes, the MCP tools): run it on this pod when
 * it holds the conversation; otherwise ask the peers, forward the call to the one holding it
 * open (its socket keeps the planning), or take the owner and first-turn settings a peer
 * remembers and reconnect here. Without peers, every call runs here, as on a single pod.
 * Answers and errors are the same as a local call's: the holder's error becomes a GatewayError
 * with its code, so a front maps it exactly as its own.
 */
export interface CallContext {
  caller: Caller;
  /** The caller's Authorization header: a forwarded call carries it, and the holder authorizes it again. */
  authorization: string;
  /** The agent as called. */
  agent: AgentRef;
  sessionId: string;
  /** A sibling forwarded this call: it runs here and is never forwarded again. */
  forwarded?: boolean;
}

export interface TurnCall extends CallContext {
  access: AgentAccess;
  line: string;
  /** The connect fields of the body: used when the conversation reconnects, checked otherwise. */
  connect: ConnectInput;
  /** Aborted when the caller hangs up: the turn is cancelled where it runs. */
  signal?: AbortSignal;
  /** Each element as it arrives, also from a forwarded turn. */
  onElement?: (element: Element) => void;
}

const conversationPath = (c: CallContext): string => `/v1/agents/${encodeURIComponent(c.agent.key)}/conversations/${c.sessionId}`;

/** The holder's error answer as the same error here. */
function holderError(body: unknown, status: number): GatewayError {
  const { error, message, details } = (body ?? {}) as { error?: unknown; message?: unknown; details?: unknown };
  if (typeof error === 'string' && error in errorStatus && typeof message === 'string') {
    return new GatewayError(error as ErrorCode, message, details);
  }
  return new GatewayError('internal', `The gateway pod holding this conversation answered ${status} without an error body.`);
}

const readJson = async (res: Dispatcher.ResponseData): Promise<unknown> => {
  const text = await res.body.text();
  return text === '' ? undefined : JSON.parse(text);
};

export class ConversationCalls {
  readonly #registry: ConversationRegistry;
  readonly #peers: Peers | undefined;
  readonly #metrics: PeerMetrics | undefined;
  readonly #fromPeer: (header: string | string[] | undefined) => boolean;

  constructor(deps: { registry: ConversationRegistry; peers?: { peers: Peers; metrics: PeerMetrics; secret: string } | undefined }) {
    this.#registry = deps.registry;
    this.#peers = deps.peers?.peers;
    this.#metrics = deps.peers?.metrics;
    this.#fromPeer = deps.peers === undefined ? () => false : secretCheck(deps.peers.secret);
  }

  /** Whether an HTTP call's headers mark it as forwarded by a sibling (with the release's secret). */
  isForwarded(headers: Record<string, string | string[] | undefined>): boolean {
    return this.#fromPeer(headers[PEER_HEADER]);
  }

  /** A new conversation always opens here; the peers hear of its owner. */
  async start(call: Omit<TurnCall, 'sessionId' | 'forwarded'>): Promise<TurnResultView> {
    const result = await this.#registry.start(call.caller, call.access, call.connect, this.#turnRequest(call));
    return turnResultView(result, call.line);
  }

  async turn(call: TurnCall): Promise<TurnResultView> {
    const holder = await this.#holder(call);
    if (holder !== undefined) {
      const forwarded = await this.#forward(holder, call, {
        method: 'POST',
        path: `${conversationPath(call)}/turns`,
        body: { line: call.line, ...call.connect },
        accept: call.onElement === undefined ? 'application/json' : NDJSON,
      });
      if (forwarded !== undefined) return this.#turnAnswer(forwarded, call);
    }
    const result = await this.#registry.turn(call.caller, call.access, call.sessionId, call.connect, this.#turnRequest(call));
    return turnResultView(result, call.line);
  }

  async get(call: CallContext): Promise<ConversationView> {
    // Not held anywhere: the pod that closed it tells how, unless this pod closed it itself.
    const holder = await this.#holder(call, true);
    const forwarded = holder && (await this.#forward(holder, call, { method: 'GET', path: conversationPath(call) }));
    if (forwarded !== undefined) return (await this.#jsonAnswer(forwarded)) as ConversationView;
    return conversationView(this.#registry.get(call.caller, call.agent.key, call.sessionId));
  }

  /** DELETE: a plain close where the socket is; answers the note the 204 carries. */
  async close(call: CallContext): Promise<string> {
    const holder = await this.#holder(call);
    const forwarded = holder && (await this.#forward(holder, call, { method: 'DELETE', path: conversationPath(call) }));
    if (forwarded !== undefined) {
      await this.#jsonAnswer(forwarded);
      return String(forwarded.headers['x-conversation-note'] ?? '');
    }
    return conversationView(this.#registry.closeByCaller(call.caller, call.agent.key, call.sessionId)).notes.join(' ');
  }

  /** The caller's conversations on every pod of the release, newest first; an open one wins over a closed copy. */
  async list(caller: Caller): Promise<ConversationView[]> {
    const now = Date.now();
    const here = this.#registry.list(caller.id).map((conv) => conversationView(conv, now));
    const there = ((await this.#peers?.conversationsOf(caller.id)) ?? []) as ConversationView[];
    const bySession = new Map<string, ConversationView>();
    for (const view of [...here, ...there]) {
      const seen = bySession.get(view.session_id);
      if (seen === undefined || (seen.connection === 'closed' && view.connection === 'open')) bySession.set(view.session_id, view);
    }
    return [...bySession.values()].sort((a, b) => b.created_at.localeCompare(a.created_at));
  }

  #turnRequest(call: Pick<TurnCall, 'line' | 'signal' | 'onElement'>) {
    return { line: call.line, ...(call.signal ? { signal: call.signal } : {}), ...(call.onElement ? { onElement: call.onElement } : {}) };
  }

  /**
   * The peer holding the conversation open (or, `orCloser`, the one that closed it), or undefined
   * to run the call here. A peer's memory of its owner is kept here first, so a call that runs
   * here is checked against it.
   */
  async #holder(call: CallContext, orCloser = false): Promise<Peer | undefined> {
    const here = this.#registry.ownership(call.sessionId);
    if (this.#peers === undefined || call.forwarded === true || here?.held === true) return undefined;
    const found = await this.#peers.whereabouts(call.sessionId);
    const owner = found.holder?.owner ?? found.known;
    if (owner !== undefined && here === undefined) this.#registry.remember(owner);
    return found.holder?.peer ?? (orCloser && here?.closedHere !== true ? found.closer : undefined);
  }

  /**
   * The holder's answer, or undefined when it has gone (unreachable, or shutting down): the call
   * then runs here, with the ownership the lookup brought.
   */
  async #forward(
    peer: Peer,
    call: CallContext & { signal?: AbortSignal },
    req: Omit<ForwardRequest, 'authorization' | 'signal'>,
  ): Promise<Dispatcher.ResponseData | undefined> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.#peers!.client.forward(peer, {
        ...req,
        authorization: call.authorization,
        ...(call.signal ? { signal: call.signal } : {}),
      });
    } catch {
      if (call.signal?.aborted) throw this.#cancelled();
      this.#metrics?.forwarded.inc({ outcome: 'fallback' });
      return undefined;
    }
    if (res.statusCode === 503) {
      const body = await readJson(res).catch(() => undefined);
      const error = holderError(body, 503);
      if (error.code === 'shutting_down') {
        this.#metrics?.forwarded.inc({ outcome: 'fallback' });
        return undefined;
      }
      this.#metrics?.forwarded.inc({ outcome: 'answered' });
      throw error;
    }
    this.#metrics?.forwarded.inc({ outcome: 'answered' });
    return res;
  }

  async #jsonAnswer(res: Dispatcher.ResponseData): Promise<unknown> {
    const body = await readJson(res).catch(() => {
      throw this.#holderGone();
    });
    if (res.statusCode >= 400) throw holderError(body, res.statusCode);
    return body;
  }

  /** A forwarded turn's answer: NDJSON passed on element by element, or the JSON body. */
  async #turnAnswer(res: Dispatcher.ResponseData, call: TurnCall): Promise<TurnResultView> {
    if (!String(res.headers['content-type'] ?? '').startsWith(NDJSON)) return (await this.#jsonAnswer(res)) as TurnResultView;
    try {
      for await (const text of ndjsonLines(res.body)) {
        const line = JSON.parse(text) as { element?: Element; result?: TurnResultView; error?: unknown };
        if (line.element !== undefined) call.onElement?.(line.element);
        else if (line.result !== undefined) return line.result;
        else throw holderError(line, 500);
      }
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      throw call.signal?.aborted ? this.#cancelled() : this.#holderGone();
    }
    throw this.#holderGone();
  }

  #cancelled(): GatewayError {
    this.#metrics?.forwarded.inc({ outcome: 'cancelled' });
    return new GatewayError(
      'engine_unavailable',
      'The caller hung up: the turn was cancelled on the gateway pod that holds the conversation.',
    );
  }

  #holderGone(): GatewayError {
    this.#metrics?.forwarded.inc({ outcome: 'failed' });
    return new GatewayError(
      'engine_unavailable',
      'The gateway pod holding this conversation went away during the call; the next turn reconnects on another pod.',
    );
  }
}
