import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../domain/vocabulary.js';
import { isGatewayError } from '../errors.js';
import { mcpForwarder } from './forward.js';
import { CALLER_ID } from './results.js';
import { createMcpServer } from './server.js';
import { McpSessions } from './sessions.js';

/**
 * `/mcp`: the gateway as a remote MCP server (Streamable HTTP), and its OAuth protected resource
 * metadata (RFC 9728). Every request is authenticated as REST is (the platform bearer token);
 * the SDK's transport then answers it on the raw request, with the caller in its AuthInfo.
 */
export const MCP_PATH = '/mcp';
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The gateway's own absolute URL as the caller reached it: behind a TLS-terminating proxy the
 * scheme is the proxy's (`X-Forwarded-Proto`), the host is the `Host` it passes on. It only names
 * URLs in answers, so a caller that sends a false one misleads only itself.
 */
function origin(request: FastifyRequest): string {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]!
    .trim()
    .toLowerCase();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : request.protocol;
  return `${scheme}://${request.host}`;
}

const jsonRpcError = (reply: FastifyReply, status: number, message: string) =>
  reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code: status === 404 ? -32001 : -32000, message }, id: null });

export async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const sessions = new McpSessions({ idleMs: app.config.mcpSessionIdleMs, createServer: () => createMcpServer(app, version) });
  app.addHook('onClose', async () => sessions.closeAll());
  app.peers?.answerMcpLookups((id) => sessions.has(id));
  const forwardToHolder = mcpForwarder(app, MCP_PATH);

  app.get(RESOURCE_METADATA_PATH, async (request) => ({
    resource: `${origin(request)}${MCP_PATH}`,
    authorization_servers: app.config.mcpAuthorizationServers,
    bearer_methods_supported: ['header'],
    resource_name: 'agent-test-gateway',
    resource_documentation: `${origin(request)}/openapi.json`,
  }));

  /** The caller, or a 401 pointing MCP clients at the metadata so they can run their OAuth flow. */
  async function callerOr401(request: FastifyRequest, reply: FastifyReply): Promise<Caller | undefined> {
    try {
      return await app.authorizer.authenticate(request.headers.authorization);
    } catch (err) {
      if (!isGatewayError(err) || err.code !== 'unauthenticated') throw err;
      await reply
        .code(401)
        .header('www-authenticate', `Bearer resource_metadata="${origin(request)}${RESOURCE_METADATA_PATH}"`)
        .send(err.toJSON());
      return undefined;
    }
  }

  async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const caller = await callerOr401(request, reply);
    if (caller === undefined) return reply;
    const sessionId = request.headers['mcp-session-id'];
    let transport: StreamableHTTPServerTransport | undefined;
    if (typeof sessionId === 'string') {
      // Another caller's session is as unknown as an expired one: the client starts a new one.
      transport = sessions.get(sessionId, caller.id);
      // Not on this pod: perhaps on a peer (routing that is not sticky), which then answers.
      if (transport === undefined && !sessions.has(sessionId) && (await forwardToHolder?.(request, reply, sessionId))) return undefined;
      if (transport === undefined) return jsonRpcError(reply, 404, 'Session not found: send initialize again to start a new MCP session.');
    } else if (request.method === 'POST' && isInitializeRequest(request.body)) {
      transport = await sessions.open(caller.id);
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

  app.post(MCP_PATH, handle);
  app.get(MCP_PATH, handle);
  app.delete(MCP_PATH, handle);
}
