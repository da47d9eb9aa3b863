import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';

/** openapi.yaml sits at the package root, one level above both src/ and dist/. */
const OPENAPI_PATH = new URL('../../openapi.yaml', import.meta.url);

export const loadOpenApi = (): unknown => parseYaml(readFileSync(OPENAPI_PATH, 'utf8'));

/** Liveness, readiness (false while draining), Prometheus metrics and the API contract. */
export async function opsRoutes(app: FastifyInstance): Promise<void> {
  // Parsed on first request, not at start-up: it is most of the time to ready.
  let openapi: string | undefined;

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const { draining, open, busy } = app.conversations.stats;
    return reply.code(draining ? 503 : 200).send({ ready: !draining, open, busy });
  });

  app.get('/metrics', async (_request, reply) => {
    const registry = app.metrics.registry;
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  app.get('/openapi.json', async (_request, reply) => {
    openapi ??= JSON.stringify(loadOpenApi());
    return reply.type('application/json').send(openapi);
  });
}
