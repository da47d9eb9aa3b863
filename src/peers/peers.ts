import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Conversation } from '../conversations/conversation.js';
import { ownershipOf, type Ownership } from '../conversations/conversation.js';
import type { PeerConfig } from '../ops/peer-config.js';
import { PeerClient, type PeerRefusal } from './client.js';
import type { LookupResult, PeerMetrics } from './metrics.js';
import { BoundedQueue } from './notices.js';
import { PeerList, type OwnEndpoint, type Peer } from './peer-list.js';
import { PEER_ADDRESS_HEADER, PEER_HEADER, secretCheck } from './secret.js';
import { ownershipFromWire, ownershipToWire } from './wire.js';

/** The internal peer routes (./routes.ts). */
const PEER_PATHS = {
  session: (sessionId: string) => `/internal/peer/sessions/${sessionId}`,
  notices: '/internal/peer/notices',
  conversations: (callerId: string) => `/internal/peer/conversations?caller_id=${encodeURIComponent(callerId)}`,
  mcpSession: (mcpSessionId: string) => `/internal/peer/mcp-sessions/${encodeURIComponent(mcpSessionId)}`,
};

/** A call's headers, as Fastify gives them. */
type Headers = Record<string, string | string[] | undefined>;

export interface PeerWhereabouts {
  /** A peer holds the socket: the call runs there. */
  holder?: { peer: Peer; owner: Ownership };
  /** A peer that held it and closed it: it tells best how. */
  closer?: Peer;
  /** A peer remembers it (closed there, or a notice): its owner and first-turn settings. */
  known?: Ownership;
}

/** Per sibling: a sibling that hangs delays only its own notices. */
const NOTICE_CONCURRENCY = 4;
const NOTICE_BACKLOG = 1_000;
/** The address a call names, as a log may show it (it proves nothing). */
const namedIn = (headers: Headers): string => {
  const named = headers[PEER_ADDRESS_HEADER];
  return typeof named === 'string' ? named.slice(0, 300) : '(none)';
};

/** Distinct refusals logged at most (a refusal past it is still counted). */
const REFUSALS_LOGGED_MAX = 1_000;
/** Nobody waits for a notice, so a busy sibling gets longer than a lookup's PEER_TIMEOUT_MS to take it. */
const NOTICE_TIMEOUT_MS = 5_000;

/**
 * The other pods of the release, as this pod uses them: who holds or knows a session (asked in
 * parallel, bounded by PEER_TIMEOUT_MS: a peer that does not answer in time does not know),
 * ownership notices (fire-and-forget), and the conversations a caller has on each of them. It
 * remembers which sibling holds a session (from lookups and notices), so that the calls of a
 * conversation held elsewhere go there without asking every sibling each time; the memory is
 * dropped on the holder's close notice, on a miss, and when the sibling leaves the list.
 */
export class Peers {
  readonly client: PeerClient;
  readonly #list: PeerList;
  /** Session id → the sibling last known to hold it. */
  readonly #holders: LRUCache<string, Peer>;
  readonly #metrics: PeerMetrics;
  readonly #log: FastifyBaseLogger;
  readonly #notices = new Map<string, BoundedQueue>();
  /** `direction reason address` of every refusal logged already: each is logged once, counted always. */
  readonly #refusalsLogged = new Set<string>();
  /** The siblings' addresses at the last change of the list. */
  #known = new Set<string>();
  readonly #fromPeer: (header: string | string[] | undefined) => boolean;
  /** Whether this pod holds an MCP session: the MCP endpoint tells, once it is installed. */
  #holdsMcpSession: (mcpSessionId: string) => boolean = () => false;

  constructor(deps: {
    config: PeerConfig;
    own: OwnEndpoint;
    callTimeoutMs: number;
    /** How many sessions' holders are remembered at most. */
    holdersMax: number;
    metrics: PeerMetrics;
    log: FastifyBaseLogger;
  }) {
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#fromPeer = secretCheck(deps.config.secret);
    this.#holders = new LRUCache({ max: deps.holdersMax });
    this.client = new PeerClient({
      secret: deps.config.secret,
      timeoutMs: deps.config.timeoutMs,
      callTimeoutMs: deps.callTimeoutMs,
      self: () => this.#list.self,
      refused: (peer, reason) => this.#refusal('by_sibling', reason, peer.address),
    });
    this.#list = new PeerList(deps.config, deps.own, deps.log, (peers) => this.#listChanged(peers));
  }

  get list(): readonly Peer[] {
    return this.#list.peers;
  }

  /** Whether an HTTP call's headers mark it as forwarded by a sibling (with the release's secret). */
  isForwarded(headers: Headers): boolean {
    return this.#fromPeer(headers[PEER_HEADER]);
  }

  /**
   * The sibling a call (with the secret) comes from: the current peer listed under the address it
   * names. Undefined when it names none or one not listed: the refusal is counted and logged once
   * per address.
   */
  sender(headers: Headers): Peer | undefined {
    const named = headers[PEER_ADDRESS_HEADER];
    const peer = typeof named === 'string' ? this.#list.listed(named) : undefined;
    if (peer === undefined) this.#refusal('here', 'not_listed', namedIn(headers));
    return peer;
  }

  /** A call to the peer routes without the secret: counted and logged once per address it names. */
  refusedSecret(headers: Headers): void {
    this.#refusal('here', 'secret', namedIn(headers));
  }

  /**
   * A call between pods refused, `here` (this pod refused a sibling's) or `by_sibling` (a sibling
   * refused this pod's): counted by reason, logged once per address and reason.
   */
  #refusal(direction: 'here' | 'by_sibling', reason: PeerRefusal, address: string): void {
    this.#metrics.refusals.inc({ direction, reason });
    const key = `${direction} ${reason} ${address}`;
    if (this.#refusalsLogged.has(key) || this.#refusalsLogged.size >= REFUSALS_LOGGED_MAX) return;
    this.#refusalsLogged.add(key);
    const why =
      reason === 'secret'
        ? 'the secrets differ (PEER_SECRET)'
        : `the address named is not in the peer list (PEERS, PEER_DNS; this pod names itself ${this.#list.self})`;
    this.#log.warn(
      { event: 'peer_call_refused', direction, reason, peer: address },
      direction === 'here' ? `refused a call between pods from ${address}: ${why}` : `a sibling (${address}) refused a call: ${why}`,
    );
  }

  /**
   * Asks every peer at once; settles at the first holder, or when all answered or timed out. The
   * holder found is remembered; none found, the memory of one is dropped.
   */
  whereabouts(sessionId: string): Promise<PeerWhereabouts> {
    const peers = this.#list.peers;
    const found: PeerWhereabouts = {};
    return new Promise((resolve) => {
      let left = peers.length;
      const settle = () => {
        if (found.holder === undefined) this.#holders.delete(sessionId);
        else this.#holders.set(sessionId, found.holder.peer);
        resolve(found);
      };
      if (left === 0) settle();
      for (const peer of peers) {
        void this.#ask(peer, sessionId).then((answer) => {
          if (answer?.state === 'held' && found.holder === undefined) {
            found.holder = { peer, owner: answer.owner };
            settle();
          } else if (answer !== undefined) {
            found.known ??= answer.owner;
            if (answer.state === 'closed') found.closer ??= peer;
          }
          left -= 1;
          if (left === 0 && found.holder === undefined) settle();
        });
      }
    });
  }

  /** The sibling last known to hold a session: it may have closed or lost it since. */
  rememberedHolder(sessionId: string): Peer | undefined {
    return this.#holders.get(sessionId);
  }

  /** A call to the remembered holder missed (it no longer holds the session, or did not answer). */
  forgetHolder(sessionId: string, peer: Peer): void {
    if (this.#holders.peek(sessionId)?.address === peer.address) this.#holders.delete(sessionId);
  }

  /** A sibling's ownership notice (`from`: the peer that sent it): it holds the session now. */
  heardHolder(sessionId: string, from: Peer): void {
    this.#holders.set(sessionId, from);
  }

  /** A sibling's close notice: if it was the remembered holder, it no longer is. */
  heardClosed(sessionId: string, from: Peer): void {
    if (this.#holders.peek(sessionId)?.address === from.address) this.#holders.delete(sessionId);
  }

  /** The MCP endpoint answers the peers' MCP session lookups with this. */
  answerMcpLookups(holds: (mcpSessionId: string) => boolean): void {
    this.#holdsMcpSession = holds;
  }

  holdsMcpSession(mcpSessionId: string): boolean {
    return this.#holdsMcpSession(mcpSessionId);
  }

  /** The peer holding an MCP session: every peer asked at once, the first to say so wins; none in PEER_TIMEOUT_MS, undefined. */
  async mcpSessionHolder(mcpSessionId: string): Promise<Peer | undefined> {
    const asks = this.#list.peers.map(async (peer) => {
      const { status, body } = await this.client.internal(peer, 'GET', PEER_PATHS.mcpSession(mcpSessionId));
      if (status !== 200 || (body as { held?: unknown } | undefined)?.held !== true) throw new Error('not held there');
      return peer;
    });
    return Promise.any(asks).catch(() => undefined);
  }

  /** Tells every peer who owns a conversation that just connected here; never awaited. */
  announce(conv: Conversation): void {
    this.#tell(ownershipToWire(ownershipOf(conv, conv.sessionId!)));
  }

  /** Tells every peer that this pod no longer holds a conversation (it closed); never awaited. */
  announceClosed(sessionId: string): void {
    this.#tell({ session_id: sessionId, closed: true });
  }

  #tell(notice: object): void {
    for (const peer of this.#list.peers) {
      let queue = this.#notices.get(peer.address);
      if (queue === undefined) {
        queue = new BoundedQueue({ concurrency: NOTICE_CONCURRENCY, maxPending: NOTICE_BACKLOG });
        this.#notices.set(peer.address, queue);
      }
      const queued = queue.push(async () => {
        try {
          const { status } = await this.client.internal(peer, 'POST', PEER_PATHS.notices, notice, NOTICE_TIMEOUT_MS);
          this.#metrics.noticesSent.inc({ result: status < 300 ? 'sent' : 'failed' });
        } catch {
          this.#metrics.noticesSent.inc({ result: 'failed' });
        }
      });
      if (!queued) this.#metrics.noticesSent.inc({ result: 'dropped' });
    }
  }

  /** Every peer's list of a caller's conversations (API views); a peer that does not answer lists nothing. */
  async conversationsOf(callerId: string): Promise<unknown[]> {
    const lists = await Promise.all(
      this.#list.peers.map(async (peer) => {
        try {
          const { status, body } = await this.client.internal(peer, 'GET', PEER_PATHS.conversations(callerId));
          const conversations = (body as { conversations?: unknown } | undefined)?.conversations;
          return status === 200 && Array.isArray(conversations) ? (conversations as unknown[]) : [];
        } catch {
          return [];
        }
      }),
    );
    return lists.flat();
  }

  async close(): Promise<void> {
    this.#list.close();
    await this.client.close();
  }

  #listChanged(peers: readonly Peer[]): void {
    this.#metrics.peers.set(peers.length);
    const staying = new Set(peers.map((p) => p.address));
    for (const address of this.#known) if (!staying.has(address)) this.client.drop(address);
    this.#known = staying;
    for (const [sessionId, peer] of this.#holders.entries()) if (!staying.has(peer.address)) this.#holders.delete(sessionId);
  }

  async #ask(peer: Peer, sessionId: string): Promise<{ state: 'held' | 'closed' | 'known'; owner: Ownership } | undefined> {
    const started = performance.now();
    let result: LookupResult = 'error';
    try {
      const { status, body } = await this.client.internal(peer, 'GET', PEER_PATHS.session(sessionId));
      const answer = body as { state?: unknown; owner?: unknown } | undefined;
      if (status === 200 && answer?.state === 'unknown') {
        result = 'unknown';
        return undefined;
      }
      const owner = status === 200 ? ownershipFromWire(answer?.owner) : undefined;
      const state = answer?.state;
      if (owner === undefined || owner.sessionId !== sessionId || (state !== 'held' && state !== 'closed' && state !== 'known')) {
        this.#log.warn({ event: 'peer_lookup_malformed', status }, 'a peer answered a lookup with something else');
        return undefined;
      }
      result = state === 'held' ? 'held' : 'known';
      return { state, owner };
    } catch {
      return undefined;
    } finally {
      this.#metrics.lookups.observe({ result }, (performance.now() - started) / 1000);
    }
  }
}
