import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../api/openapi.js';
import { Health, Readiness, responseSchema } from '../api/responses.js';

/** Probes and scrapes come every few seconds: logged only when something goes wrong. */
const QUIET = { logLevel: 'warn' } as const;

/** Liveness, readiness (false while draining), Prometheus metrics and the API contract. */
export async function opsRoutes(app: FastifyInstance): Promise<void> {
  // Parsed on first request, not at start-up: it is most of the time to ready.
  let openapi: string | undefined;

  app.get('/healthz', { ...QUIET, schema: { response: { 200: responseSchema(Health) } } }, async () => ({ status: 'ok' }));

  const readiness = responseSchema(Readiness);
  app.get('/readyz', { ...QUIET, schema: { response: { 200: readiness, 503: readiness } } }, async (_request, reply) => {
    const { draining, open, busy } = app.conversationRegistry.stats;
    return reply.code(draining ? 503 : 200).send({ ready: !draining, open, busy });
  });

  app.get('/metrics', QUIET, async (_request, reply) => {
    const { registry, monitorSeries } = app.metrics;
    return reply.type(registry.contentType).send(await monitorSeries.scrape(() => registry.metrics()));
  });

  app.get('/openapi.json', async (_request, reply) => {
    openapi ??= JSON.stringify(await openApiDocument());
    return reply.type('application/json').send(openapi);
  });
}
