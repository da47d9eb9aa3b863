import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { ConversationRegistry } from './conversations/registry.js';
import { ConversationService } from './conversations/service.js';
import { createEngineAdapter, type EngineAdapter } from './engine/adapter.js';
import { createModelClient, type ModelClient } from './model/client.js';
import type { Config } from './ops/config.js';
import { observeRequests } from './ops/http-metrics.js';
import { createMetrics, type Metrics } from './ops/metrics.js';
import { installPeers } from './peers/install.js';
import { PEER_HEADER } from './peers/secret.js';
import { createAuthorizer, type Authorizer } from './platform/authorizer.js';
import { createPlatformClient, type PlatformClient } from './platform/client.js';
import { mcpRoutes } from './mcp/plugin.js';
import { installErrorHandling, pathErrorHandler } from './routes/error-handler.js';
import { conversationRoutes } from './routes/conversations.js';
import { debugRoutes } from './routes/debug.js';
import { runsPageRoutes } from './routes/runs-page.js';
import { memoryRoutes } from './routes/memory.js';
import { opsRoutes } from './routes/ops.js';
import { judgeCheckRoutes } from './routes/judge-checks.js';
import { planRoutes } from './routes/plan.js';
import { runRoutes } from './routes/runs.js';
import { RunRegistry } from './runs/registry.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    metrics: Metrics;
    engine: EngineAdapter;
    platform: PlatformClient;
    authorizer: Authorizer;
    conversationRegistry: ConversationRegistry;
    /** Conversation calls for every front: here, or on the sibling pod holding the conversation. */
    conversationService: ConversationService;
    /** The model client of simulated users and judges; undefined without MODEL_BASE_URL. */
    model: ModelClient | undefined;
    /** Runs and comparisons: held here, and the replicas of the siblings'. */
    runs: RunRegistry;
  }
}

/** Secrets are removed from log lines by path, structurally, not by remembering. */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  `req.headers["${PEER_HEADER}"]`,
  'headers.authorization',
  'authorization',
  'token',
  'config.engineIdentity',
  'config.model.apiKey',
  'apiKey',
  'model.apiKey',
];

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
}

const MAX_PARAM_LENGTH = 2048;

export interface BuildOptions {
  /** pino options, or false; defaults to JSON logs at the configured level. */
  logger?: FastifyServerOptions['logger'];
}

/** Builds the whole service, not yet listening: the server and each test build one the same way. */
export async function buildApp(config: Config, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? loggerOptions(config.logLevel),
    bodyLimit: config.maxBodyBytes,
    // The socket of a long turn must not be cut by Node's own request timeout.
    requestTimeout: 0,
    // While closing, requests still get the service's own answers (/readyz false, shutting_down).
    return503OnClosing: false,
    // Closing comes after the drain: no connection may hold it open, not even one that never
    // sent a request (a browser's speculative connection through port-forward).
    forceCloseConnections: true,
    // Only the methods openapi.yaml lists are answered: HEAD is a 404 like any unknown route.
    exposeHeadRoutes: false,
    // Long refs and device refs get the validator's 400, not the router's 414.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: pathErrorHandler(MAX_PARAM_LENGTH),
  });

  const metrics = createMetrics(config);
  const engine = createEngineAdapter(config, metrics);
  const platform = createPlatformClient(config, metrics);
  app.decorate('config', config);
  app.decorate('metrics', metrics);
  app.decorate('engine', engine);
  app.decorate('platform', platform);
  app.decorate('authorizer', createAuthorizer(config, platform, metrics));
  app.decorate('conversationRegistry', new ConversationRegistry({ config, engine, metrics, log: app.log }));
  const model = config.model === undefined ? undefined : createModelClient(config.model, metrics);
  app.decorate('model', model);

  if (config.engineIdentity.state === 'malformed') {
    app.log.warn(
      'PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY is not HTTP Basic credentials (Basic <base64 of user:password> or user:password): ' +
        'it will never be sent, closed projects answer identity_malformed, open projects keep working',
    );
  }

  // Closing the app closes every engine socket; serve.ts drains with a grace period first.
  app.addHook('preClose', async () => {
    await app.conversationRegistry.drain(0);
  });
  app.addHook('onClose', async () => {
    await Promise.all([engine.close(), platform.close(), model?.close()]);
  });

  app.decorate('runs', new RunRegistry({ app, timings: config.runs, metrics, log: app.log, port: config.port }));
  app.addHook('onClose', async () => app.runs.close());

  installErrorHandling(app);
  observeRequests(app);
  const forwarder = await installPeers(app);
  app.decorate('conversationService', new ConversationService({ registry: app.conversationRegistry, ...(forwarder ? { forwarder } : {}) }));
  await app.register(opsRoutes);
  await app.register(conversationRoutes);
  await app.register(memoryRoutes);
  await app.register(runRoutes);
  await app.register(judgeCheckRoutes);
  await app.register(planRoutes);
  await app.register(mcpRoutes);
  if (config.runsPage) await app.register(runsPageRoutes);
  if (config.debugPage) await app.register(debugRoutes);
  return app;
}
