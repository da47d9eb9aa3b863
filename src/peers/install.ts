import type { FastifyInstance } from 'fastify';
import { ConversationCalls } from './calls.js';
import { ADVISED_SECRET_CHARS } from './config.js';
import { createPeerMetrics } from './metrics.js';
import type { Peers } from './peers.js';
import { peerRoutes } from './routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Conversation calls for every front: here, or on the sibling pod holding the conversation. */
    conversationCalls: ConversationCalls;
    /** The other pods of the release; null on a single pod. */
    peers: Peers | null;
  }
}

/**
 * Makes the pods of a release act as one (PEERS / PEER_DNS / PEER_SECRET): peer metrics, the
 * peer list, ownership notices on every connect, the internal routes. Without peers configured
 * only `conversationCalls` is added (and `peers` is null), and every call runs on this pod.
 */
export async function installPeers(app: FastifyInstance): Promise<void> {
  const { config, conversations: registry } = app;
  const metrics = createPeerMetrics(app.metrics.registry);
  if (config.peers === undefined) {
    app.decorate('conversationCalls', new ConversationCalls({ registry }));
    app.decorate('peers', null);
    return;
  }
  if (config.peers.secret.length < ADVISED_SECRET_CHARS) {
    app.log.warn(
      `PEER_SECRET is shorter than ${ADVISED_SECRET_CHARS} characters: anyone who guesses it reaches the peer routes; use a long random value`,
    );
  }
  // A forwarded call may take as long as any call on the holder: a whole turn, after signing in and connecting.
  const callTimeoutMs = config.turnBudgetMs + config.engineConnectTimeoutMs + config.platformTimeoutMs + 10_000;
  // Loaded only when peers are configured: with it comes the HTTP client (undici) a single pod never needs at start-up.
  const { Peers } = await import('./peers.js');
  const peers = new Peers({ config: config.peers, ownPort: config.port, callTimeoutMs, metrics, log: app.log });
  registry.onConnected((conv) => peers.announce(conv));
  app.decorate('conversationCalls', new ConversationCalls({ registry, peers: { peers, metrics, secret: config.peers.secret } }));
  app.decorate('peers', peers);
  app.addHook('onClose', () => peers.close());
  await app.register(peerRoutes({ registry, metrics, secret: config.peers.secret, peers }));
}
