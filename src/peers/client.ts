import { Pool, type Dispatcher } from 'undici';
import type { Peer } from './peer-list.js';
import { PEER_ADDRESS_HEADER, PEER_HEADER } from './secret.js';

/**
 * Why a sibling refused a call between pods: `secret` (401, the secrets differ), `not_listed`
 * (403, the address this pod named is not in the sibling's peer list).
 */
export const REFUSAL_REASONS = ['secret', 'not_listed'] as const;
export type PeerRefusal = (typeof REFUSAL_REASONS)[number];

/**
 * HTTP to the other pods, over one keep-alive pool per sibling (closed when it leaves the peer
 * list): the internal peer routes (bounded by PEER_TIMEOUT_MS) and forwarded calls (bounded by
 * the longest a call may take on the holder). Every request carries the shared secret.
 */
export interface ForwardRequest {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  authorization: string;
  accept?: string;
  /** The JSON body, already encoded. */
  body?: string;
  /** Asked of the holder: it answers 421 instead of running the call when it no longer holds the conversation. */
  asHolder?: boolean;
  signal?: AbortSignal;
}

/** Sent with a call forwarded to the pod believed to hold its conversation (see `asHolder`). */
export const AS_HOLDER_HEADER = 'x-agent-test-gateway-as-holder';

export class PeerClient {
  readonly #pools = new Map<string, Pool>();
  readonly #secret: string;
  readonly #timeoutMs: number;
  readonly #callTimeoutMs: number;
  readonly #self: () => string;
  readonly #refused: (peer: Peer, reason: PeerRefusal) => void;
  #closed = false;

  constructor(opts: {
    secret: string;
    timeoutMs: number;
    callTimeoutMs: number;
    /** The address this pod is listed under: every call names it. */
    self: () => string;
    /** A sibling refused an internal call: counted and logged, never swallowed. */
    refused: (peer: Peer, reason: PeerRefusal) => void;
  }) {
    this.#secret = opts.secret;
    this.#timeoutMs = opts.timeoutMs;
    this.#callTimeoutMs = opts.callTimeoutMs;
    this.#self = opts.self;
    this.#refused = opts.refused;
  }

  /** The headers that make a call one between pods: the secret and the address this pod is listed under. */
  #peerHeaders(): Record<string, string> {
    return { [PEER_HEADER]: this.#secret, [PEER_ADDRESS_HEADER]: this.#self() };
  }

  /** An internal peer route's JSON answer; throws when the peer does not answer in time (PEER_TIMEOUT_MS unless given). */
  async internal(
    peer: Peer,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    timeoutMs = this.#timeoutMs,
  ): Promise<{ status: number; body: unknown }> {
    const res = await this.#pool(peer).request({
      method,
      path,
      headers: { ...this.#peerHeaders(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.statusCode === 401) this.#refused(peer, 'secret');
    else if (res.statusCode === 403) this.#refused(peer, 'not_listed');
    const text = await res.body.text();
    return { status: res.statusCode, body: text === '' ? undefined : JSON.parse(text) };
  }

  /** The same call on the pod that holds the conversation, marked so that it is never forwarded again. */
  forward(peer: Peer, req: ForwardRequest): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { authorization: req.authorization, ...this.#peerHeaders() };
    if (req.accept !== undefined) headers.accept = req.accept;
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    if (req.asHolder === true) headers[AS_HOLDER_HEADER] = '1';
    return this.#pool(peer).request({
      method: req.method,
      path: req.path,
      headers,
      ...(req.body === undefined ? {} : { body: req.body }),
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
    return this.#pool(peer).request({
      method: req.method,
      path: req.path,
      headers: { ...req.headers, ...this.#peerHeaders() },
      ...(req.body === undefined ? {} : { body: req.body }),
      signal: req.signal,
      bodyTimeout: 0,
    });
  }

  /** An internal route's streamed answer (a run's lines), for as long as it streams: the signal ends it. */
  stream(peer: Peer, path: string, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    return this.#pool(peer).request({ method: 'GET', path, headers: this.#peerHeaders(), signal, bodyTimeout: 0 });
  }

  /** A sibling left the peer list: its connections end (requests still out on them fail). */
  drop(address: string): void {
    const pool = this.#pools.get(address);
    this.#pools.delete(address);
    void pool?.destroy().catch(() => undefined);
  }

  /** Ends every request still out (a notice to a hanging sibling must not hold the shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }

  #pool(peer: Peer): Pool {
    let pool = this.#pools.get(peer.address);
    if (pool === undefined) {
      if (this.#closed) throw new Error('the peer client is closed');
      pool = new Pool(peer.origin, {
        keepAliveTimeout: 30_000,
        connectTimeout: this.#timeoutMs,
        headersTimeout: this.#callTimeoutMs,
        bodyTimeout: this.#callTimeoutMs,
      });
      this.#pools.set(peer.address, pool);
    }
    return pool;
  }
}
