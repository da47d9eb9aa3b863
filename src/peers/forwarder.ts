import type { Dispatcher } from 'undici';
import type { Forwarded, Forwarder, Whereabouts } from '../conversations/forwarder.js';
import type { CallContext, TurnCall } from '../conversations/calls.js';
import type { ConversationView, TurnResultView } from '../conversations/views.js';
import type { Element } from '../engine/elements.js';
import { errorStatus, GatewayError, type ErrorCode } from '../errors.js';
import { NDJSON, ndjsonLines } from '../http/ndjson.js';
import type { ForwardRequest } from './client.js';
import type { PeerMetrics } from './metrics.js';
import type { Peer } from './peer-list.js';
import type { Peers } from './peers.js';

const conversationPath = (c: CallContext): string => `/v1/agents/${encodeURIComponent(c.agent.key)}/conversations/${c.sessionId}`;

/** The start of a stream line that carries an element, as the gateway encodes it. */
const ELEMENT_LINE = '{"element":';

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

const GONE: Forwarded<never> = Object.freeze({ ran: false, why: 'gone' });
const MOVED: Forwarded<never> = Object.freeze({ ran: false, why: 'moved' });

/**
 * The conversation service's calls to the sibling pods, over HTTP: the same REST call on the
 * holder, marked as forwarded (never forwarded again) and, when asked of the holder, to be
 * answered only if it still holds the conversation. A holder that went away or shuts down
 * leaves the call to this pod; its answer streams back as it comes.
 */
export class PeerForwarder implements Forwarder {
  readonly #peers: Peers;
  readonly #metrics: PeerMetrics;

  constructor(deps: { peers: Peers; metrics: PeerMetrics }) {
    this.#peers = deps.peers;
    this.#metrics = deps.metrics;
  }

  async locate(sessionId: string, fresh: boolean): Promise<Whereabouts> {
    const remembered = fresh ? undefined : this.#peers.rememberedHolder(sessionId);
    if (remembered !== undefined) return { holder: remembered, remembered: true };
    const found = await this.#peers.whereabouts(sessionId);
    const owner = found.holder?.owner ?? found.known;
    return {
      ...(found.holder === undefined ? {} : { holder: found.holder.peer }),
      ...(found.closer === undefined ? {} : { closer: found.closer }),
      ...(owner === undefined ? {} : { owner }),
    };
  }

  async turn(sibling: Peer, call: TurnCall): Promise<Forwarded<TurnResultView>> {
    const res = await this.#send(sibling, call, {
      method: 'POST',
      path: `${conversationPath(call)}/turns`,
      body: JSON.stringify({ line: call.line, ...call.connect }),
      accept: call.onElement === undefined ? 'application/json' : NDJSON,
      asHolder: true,
    });
    return res.ran ? { ran: true, answer: await this.#turnAnswer(res.answer, call) } : res;
  }

  async get(sibling: Peer, call: CallContext, asHolder: boolean): Promise<Forwarded<ConversationView>> {
    const res = await this.#send(sibling, call, { method: 'GET', path: conversationPath(call), asHolder });
    return res.ran ? { ran: true, answer: (await this.#jsonAnswer(res.answer)) as ConversationView } : res;
  }

  async close(sibling: Peer, call: CallContext): Promise<Forwarded<string>> {
    const res = await this.#send(sibling, call, { method: 'DELETE', path: conversationPath(call), asHolder: true });
    if (!res.ran) return res;
    await this.#jsonAnswer(res.answer);
    return { ran: true, answer: String(res.answer.headers['x-conversation-note'] ?? '') };
  }

  async conversationsOf(callerId: string): Promise<ConversationView[]> {
    return (await this.#peers.conversationsOf(callerId)) as ConversationView[];
  }

  /** The holder's answer, or why the call runs here after all. */
  async #send(
    peer: Peer,
    call: CallContext & { signal?: AbortSignal },
    req: Omit<ForwardRequest, 'authorization' | 'signal'>,
  ): Promise<Forwarded<Dispatcher.ResponseData>> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.#peers.client.forward(peer, {
        ...req,
        authorization: call.authorization,
        ...(call.signal ? { signal: call.signal } : {}),
      });
    } catch {
      if (call.signal?.aborted) throw this.#cancelled();
      return this.#gone(call, peer);
    }
    if (res.statusCode === 421) {
      await res.body.dump();
      this.#peers.forgetHolder(call.sessionId, peer);
      this.#metrics.forwarded.inc({ outcome: 'moved' });
      return MOVED;
    }
    if (res.statusCode === 503) {
      const body = await readJson(res).catch(() => undefined);
      const error = holderError(body, 503);
      if (error.code === 'shutting_down') return this.#gone(call, peer);
      this.#metrics.forwarded.inc({ outcome: 'answered' });
      throw error;
    }
    this.#metrics.forwarded.inc({ outcome: 'answered' });
    return { ran: true, answer: res };
  }

  async #jsonAnswer(res: Dispatcher.ResponseData): Promise<unknown> {
    const body = await readJson(res).catch(() => {
      throw this.#holderGone();
    });
    if (res.statusCode >= 400) throw holderError(body, res.statusCode);
    return body;
  }

  /**
   * A forwarded turn's answer: NDJSON passed on element by element (as the holder encoded it when
   * the caller relays lines), or the JSON body.
   */
  async #turnAnswer(res: Dispatcher.ResponseData, call: TurnCall): Promise<TurnResultView> {
    if (!String(res.headers['content-type'] ?? '').startsWith(NDJSON)) return (await this.#jsonAnswer(res)) as TurnResultView;
    try {
      for await (const text of ndjsonLines(res.body)) {
        if (call.relayElementLine !== undefined && text.startsWith(ELEMENT_LINE)) {
          call.relayElementLine(text);
          continue;
        }
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

  #gone(call: CallContext, peer: Peer): Forwarded<never> {
    this.#peers.forgetHolder(call.sessionId, peer);
    this.#metrics.forwarded.inc({ outcome: 'fallback' });
    return GONE;
  }

  #cancelled(): GatewayError {
    this.#metrics.forwarded.inc({ outcome: 'cancelled' });
    return new GatewayError(
      'engine_unavailable',
      'The caller hung up: the turn was cancelled on the gateway pod that holds the conversation.',
    );
  }

  #holderGone(): GatewayError {
    this.#metrics.forwarded.inc({ outcome: 'failed' });
    return new GatewayError(
      'engine_unavailable',
      'The gateway pod holding this conversation went away during the call; the next turn reconnects on another pod.',
    );
  }
}
