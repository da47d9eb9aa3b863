import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../domain/vocabulary.js';

/**
 * The caller a session is bound to, with the token of its latest request (its task store asks the
 * platform with it), and where that request reached the gateway: the base of a run's page URL.
 */
export interface SessionCaller {
  current: Caller;
  /** The gateway's origin as the client reaches it (`https://host`); undefined when the runs page is off (RUNS_PAGE). */
  pages: string | undefined;
}

/**
 * The pod's MCP sessions. A session is what lets the server ask its client something in the
 * middle of a call (elicitation) and hear a cancellation: both arrive as later POSTs that must
 * reach the same server. It is bound to the platform user who opened it, ends on DELETE, after
 * `idleMs` without a request, or when the pod closes; it is not a conversation (conversations
 * stay keyed by session_id and owned by the user, whatever MCP session calls them).
 */
interface Session {
  caller: SessionCaller;
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  closing?: boolean;
}

const MAX_SESSIONS = 1_000;

export class McpSessions {
  readonly #sessions: LRUCache<string, Session>;
  readonly #createServer: (caller: SessionCaller) => McpServer;

  constructor(opts: { idleMs: number; createServer: (caller: SessionCaller) => McpServer }) {
    this.#createServer = opts.createServer;
    this.#sessions = new LRUCache({
      max: MAX_SESSIONS,
      ttl: opts.idleMs,
      updateAgeOnGet: true,
      ttlAutopurge: true,
      // Expired, evicted or deleted: the server and its transport go with it.
      dispose: (session) => {
        session.closing = true;
        void session.server.close();
      },
    });
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Whether this pod holds the session, whoever's it is. */
  has(sessionId: string): boolean {
    return this.#sessions.has(sessionId);
  }

  /** The session, if this pod holds it and it is this caller's (whose token it keeps from now on). */
  get(sessionId: string, caller: Caller, pages: string | undefined): StreamableHTTPServerTransport | undefined {
    const session = this.#sessions.peek(sessionId);
    if (session === undefined || session.caller.current.id !== caller.id) return undefined;
    Object.assign(session.caller, { current: caller, pages });
    return this.#sessions.get(sessionId)!.transport;
  }

  /** A transport for an initialize request: the session is kept once the SDK has answered it. */
  async open(current: Caller, pages: string | undefined): Promise<StreamableHTTPServerTransport> {
    const caller: SessionCaller = { current, pages };
    const server = this.#createServer(caller);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        this.#sessions.set(sessionId, { caller, server, transport });
      },
    });
    // A DELETE closes the transport first; the session then leaves the pod's list.
    transport.onclose = () => {
      const id = transport.sessionId;
      const session = id === undefined ? undefined : this.#sessions.peek(id);
      if (session?.transport === transport && !session.closing) this.#sessions.delete(id!);
    };
    await server.connect(transport);
    return transport;
  }

  closeAll(): void {
    this.#sessions.clear();
  }
}
