import type { FastifyInstance } from 'fastify';
import type { Forwarder } from '../conversations/forwarder.js';
import { ADVISED_SECRET_CHARS } from '../ops/peer-config.js';
import { AS_HOLDER_HEADER } from './client.js';
import { PeerForwarder } from './forwarder.js';
import { createPeerMetrics } from './metrics.js';
import type { Peers } from './peers.js';
import { peerRoutes } from './routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The other pods of the release; null on a single pod. */
    peers: Peers | null;
  }
}

/**
 * Makes the pods of a release act as one (PEERS / PEER_DNS / PEER_SECRET): peer metrics, the
 * peer list, ownership notices on every connect, the internal routes, and the forwarder the
 * conversation service sends calls to siblings with. Without peers configured `peers` is null
 * and there is no forwarder: every call runs on this pod.
 */
export async function installPeers(app: FastifyInstance): Promise<Forwarder | undefined> {
  const { config, conversationRegistry: registry } = app;
  const metrics = createPeerMetrics(app.metrics.registry);
  if (config.peers === undefined) {
    app.decorate('peers', null);
    return undefined;
  }
  if (config.peers.secret.length < ADVISED_SECRET_CHARS) {
    app.log.warn(
      `PEER_SECRET is shorter than ${ADVISED_SECRET_CHARS} characters: anyone who guesses it reaches the peer routes; use a long ` +
        `random value`,
    );
  }
  // A forwarded call may take as long as any call on the holder: a whole turn, after signing in and connecting.
  const callTimeoutMs = config.turnBudgetMs + config.engineConnectTimeoutMs + config.platformTimeoutMs + 10_000;
  // Loaded only when peers are configured: with it comes the HTTP client (undici) a single pod never needs at start-up.
  const { Peers } = await import('./peers.js');
  const peers = new Peers({
    config: config.peers,
    own: { host: config.host, port: config.port },
    callTimeoutMs,
    holdersMax: config.rememberedConversationsMax,
    metrics,
    log: app.log,
  });
  registry.onConnected((conv) => peers.announce(conv));
  registry.onClosed((sessionId) => peers.announceClosed(sessionId));
  app.decorate('peers', peers);
  app.addHook('onClose', () => peers.close());
  // A call sent to this pod as the holder, which no longer holds the conversation: 421, so the
  // sibling asks again rather than this pod reconnecting it while another holds it.
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers[AS_HOLDER_HEADER] === undefined || !peers.isForwarded(request.headers)) return;
    const sessionId = (request.params as { session_id?: unknown } | undefined)?.session_id;
    if (typeof sessionId !== 'string' || registry.ownership(sessionId.toLowerCase())?.held === true) return;
    return reply.code(421).send();
  });
  const { PeerRunSiblings } = await import('./runs.js');
  const siblings = new PeerRunSiblings({
    peers,
    registry: app.runs,
    log: app.log,
    ownPort: config.port,
    takeoverMs: config.runs.takeoverMs,
    unreplicatedGauge: metrics.runsUnreplicated,
  });
  app.runs.useSiblings(siblings);
  app.addHook('onClose', () => siblings.close());
  await app.register(peerRoutes({ registry, metrics, peers, runs: app.runs }));
  return new PeerForwarder({ peers, metrics });
}
