import { Agent, type Dispatcher } from 'undici';
import type { Peer } from './peer-list.js';
import { PEER_HEADER } from './secret.js';

/**
 * HTTP to the other pods, on one keep-alive agent: the internal peer routes (bounded by
 * PEER_TIMEOUT_MS) and forwarded calls (bounded by the longest a call may take on the holder).
 * Every request carries the shared secret.
 */
export interface ForwardRequest {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  authorization: string;
  accept?: string;
  body?: unknown;
  signal?: AbortSignal;
}

export class PeerClient {
  readonly #agent: Agent;
  readonly #secret: string;
  readonly #timeoutMs: number;

  constructor(opts: { secret: string; timeoutMs: number; callTimeoutMs: number }) {
    this.#secret = opts.secret;
    this.#timeoutMs = opts.timeoutMs;
    this.#agent = new Agent({
      keepAliveTimeout: 30_000,
      connectTimeout: opts.timeoutMs,
      headersTimeout: opts.callTimeoutMs,
      bodyTimeout: opts.callTimeoutMs,
    });
  }

  /** An internal peer route's JSON answer; throws when the peer does not answer in time (PEER_TIMEOUT_MS unless given). */
  async internal(
    peer: Peer,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    timeoutMs = this.#timeoutMs,
  ): Promise<{ status: number; body: unknown }> {
    const res = await this.#agent.request({
      origin: peer.origin,
      method,
      path,
      headers: { [PEER_HEADER]: this.#secret, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text === '' ? undefined : JSON.parse(text) };
  }

  /** The same call on the pod that holds the conversation, marked so that it is never forwarded again. */
  forward(peer: Peer, req: ForwardRequest): Promise<Dispatcher.ResponseData> {
    return this.#agent.request({
      origin: peer.origin,
      method: req.method,
      path: req.path,
      headers: {
        authorization: req.authorization,
        [PEER_HEADER]: this.#secret,
        ...(req.accept === undefined ? {} : { accept: req.accept }),
        ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
      ...(req.signal === undefined ? {} : { signal: req.signal }),
    });
  }

  /**
   * A raw HTTP request passed on as received (to the pod holding an MCP session), marked so that
   * it is never forwarded again; the answer streams back. No body timeout: an SSE stream may stay
   * quiet for long, and the caller hanging up (the signal) ends it.
   */
  relay(
    peer: Peer,
    req: { method: 'GET' | 'POST' | 'DELETE'; path: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
  ): Promise<Dispatcher.ResponseData> {
    return this.#agent.request({
      origin: peer.origin,
      method: req.method,
      path: req.path,
      headers: { ...req.headers, [PEER_HEADER]: this.#secret },
      ...(req.body === undefined ? {} : { body: req.body }),
      signal: req.signal,
      bodyTimeout: 0,
    });
  }

  /** Ends every request still out (a notice to a hanging sibling must not hold the shutdown). */
  close(): Promise<void> {
    return this.#agent.destroy();
  }
}
