import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { origin } from '../http/origin.js';
import type { Caller } from '../domain/vocabulary.js';
import { mcpForwarder } from './forward.js';
import { CALLER_ID } from './results.js';
import { createMcpServer } from './server.js';
import { McpSessions } from './sessions.js';

/** What `/mcp` does once its caller is known: the SDK's part, loaded on the first MCP request. */
export interface McpEndpoint {
  handle(request: FastifyRequest, reply: FastifyReply, caller: Caller): Promise<FastifyReply | undefined>;
  /** Whether this pod holds the MCP session, whoever's it is. */
  has(sessionId: string): boolean;
  closeAll(): void;
}

const jsonRpcError = (reply: FastifyReply, status: number, message: string) =>
  reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code: status === 404 ? -32001 : -32000, message }, id: null });

export function createMcpEndpoint(app: FastifyInstance, opts: { path: string; version: string }): McpEndpoint {
  const sessions = new McpSessions({
    idleMs: app.config.mcpSessionIdleMs,
    createServer: (caller) => createMcpServer(app, opts.version, caller),
  });
  const forwardToHolder = mcpForwarder(app, opts.path);

  async function handle(request: FastifyRequest, reply: FastifyReply, caller: Caller): Promise<FastifyReply | undefined> {
    const sessionId = request.headers['mcp-session-id'];
    const pages = app.config.runsPage ? origin(request) : undefined;
    let transport: StreamableHTTPServerTransport | undefined;
    if (typeof sessionId === 'string') {
      // Another caller's session is as unknown as an expired one: the client starts a new one.
      transport = sessions.get(sessionId, caller, pages);
      // Not on this pod: perhaps on a peer (routing that is not sticky), which then answers.
      if (transport === undefined && !sessions.has(sessionId) && (await forwardToHolder?.(request, reply, sessionId))) return undefined;
      if (transport === undefined) return jsonRpcError(reply, 404, 'Session not found: send initialize again to start a new MCP session.');
    } else if (request.method === 'POST' && isInitializeRequest(request.body)) {
      transport = await sessions.open(caller, pages);
    } else {
      return jsonRpcError(reply, 400, 'Bad Request: send the Mcp-Session-Id header that initialize answered, or initialize first.');
    }
    const auth: AuthInfo = { token: caller.token, clientId: caller.id, scopes: [], extra: { [CALLER_ID]: caller.id } };
    (request.raw as IncomingMessage & { auth?: AuthInfo }).auth = auth;
    reply.hijack();
    // Progress and elicitation travel as server-sent events: a proxy must pass each one on at once.
    reply.raw.setHeader('x-accel-buffering', 'no');
    await transport.handleRequest(request.raw, reply.raw, request.body);
    return undefined;
  }

  return { handle, has: (id) => sessions.has(id), closeAll: () => sessions.closeAll() };
}
