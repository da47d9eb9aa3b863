import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ConversationRegistry } from '../conversations/registry.js';
import { conversationView } from '../conversations/views.js';
import { GatewayError } from '../errors.js';
import { mcpSessionIdSchema, parse, sessionIdSchema } from '../schemas/requests.js';
import type { RunRegistry } from '../runs/registry.js';
import type { PeerMetrics } from './metrics.js';
import { notListed, runPeerRoutes } from './run-routes.js';
import type { Peers } from './peers.js';
import { closeNoticeFromWire, ownershipFromWire, ownershipToWire, type LookupAnswer } from './wire.js';

/**
 * The routes sibling pods call: lookups (conversations, MCP sessions), ownership notices (connects
 * and closes, from the sibling listed under the address the call names), a caller's conversations.
 * Only with the release's secret (401 otherwise); never in openapi.yaml, never routed by the ingress.
 */
export function peerRoutes(deps: { registry: ConversationRegistry; metrics: PeerMetrics; peers: Peers; runs: RunRegistry }) {
  return async (app: FastifyInstance): Promise<void> => {
    app.addHook('onRequest', async (request) => {
      if (!deps.peers.isForwarded(request.headers)) {
        deps.peers.refusedSecret(request.headers);
        throw new GatewayError('unauthenticated', 'Peer routes answer only the pods of this release (the peer secret).');
      }
    });

    app.get('/internal/peer/sessions/:session_id', async (request): Promise<LookupAnswer> => {
      const { session_id } = parse(z.object({ session_id: sessionIdSchema }), request.params, 'path');
      const here = deps.registry.ownership(session_id);
      if (here === undefined) return { state: 'unknown' };
      return { state: here.held ? 'held' : here.closedHere ? 'closed' : 'known', owner: ownershipToWire(here.owner) };
    });

    app.get('/internal/peer/mcp-sessions/:mcp_session_id', async (request) => {
      const { mcp_session_id } = parse(z.object({ mcp_session_id: mcpSessionIdSchema }), request.params, 'path');
      return { held: deps.peers.holdsMcpSession(mcp_session_id) };
    });

    app.post('/internal/peer/notices', async (request, reply) => {
      const from = deps.peers.sender(request.headers);
      if (from === undefined) throw notListed('An ownership notice');
      const closed = closeNoticeFromWire(request.body);
      if (closed !== undefined) {
        deps.metrics.noticesReceived.inc();
        deps.peers.heardClosed(closed, from);
        return reply.code(204).send();
      }
      const owner = ownershipFromWire(request.body);
      if (owner === undefined)
        throw new GatewayError(
          'invalid_request',
          'An ownership notice needs session_id, caller_id, agent, settings, turns and created_at.',
        );
      deps.metrics.noticesReceived.inc();
      deps.peers.heardHolder(owner.sessionId, from);
      deps.registry.remember(owner);
      return reply.code(204).send();
    });

    await app.register(runPeerRoutes({ runs: deps.runs, peers: deps.peers }));

    app.get('/internal/peer/conversations', async (request) => {
      const { caller_id } = parse(z.object({ caller_id: z.string().min(1).max(512) }), request.query, 'query');
      const now = Date.now();
      return { conversations: deps.registry.list(caller_id).map((conv) => conversationView(conv, now)) };
    });
  };
}
