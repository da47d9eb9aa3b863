import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { origin } from '../http/origin.js';
import type { Caller } from '../domain/vocabulary.js';
import { isGatewayError } from '../errors.js';
import type { McpEndpoint } from './endpoint.js';

/**
 * `/mcp`: the gateway as a remote MCP server (Streamable HTTP), and its OAuth protected resource
 * metadata (RFC 9728). Every request is authenticated as REST is (the platform bearer token);
 * the SDK's transport then answers it on the raw request, with the caller in its AuthInfo. The SDK
 * and the MCP server load on the first `/mcp` request, not at start-up: many pods never serve one.
 */
const MCP_PATH = '/mcp';
const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export async function mcpRoutes(app: FastifyInstance): Promise<void> {
  let endpoint: McpEndpoint | undefined;
  let loading: Promise<McpEndpoint> | undefined;
  const load = (): Promise<McpEndpoint> =>
    (loading ??= import('./endpoint.js').then((m) => (endpoint = m.createMcpEndpoint(app, { path: MCP_PATH, version }))));
  app.addHook('onClose', async () => (loading === undefined ? undefined : (await loading).closeAll()));
  app.peers?.answerMcpLookups((id) => endpoint?.has(id) ?? false);

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
    return (endpoint ?? (await load())).handle(request, reply, caller);
  }

  app.post(MCP_PATH, handle);
  app.get(MCP_PATH, handle);
  app.delete(MCP_PATH, handle);
}
