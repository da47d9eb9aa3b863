import type { FastifyInstance } from 'fastify';
import { MemorySnapshot, responseSchema, RestoreResult } from '../api/responses.js';
import { GatewayError } from '../errors.js';
import { RESTORE_CLEARS, restoreMemory, snapshotMemory } from '../memory/snapshots.js';
import { memoryParams, parse, restoreBody } from '../schemas/requests.js';
import { authorizeViewer, requireToken } from './access.js';

/**
 * Snapshot and restore of a simulated user's memory. The engine's memory endpoints are open and
 * take a bare user id, so `{agent}` authorizes the call and every device is forced under `mcp:`.
 */
export async function memoryRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  app.get('/v1/agents/:agent/memory/:device_ref', { schema: { response: { 200: responseSchema(MemorySnapshot) } } }, async (request) => {
    const { agent, device_ref } = parse(memoryParams, request.params, 'path');
    await authorizeViewer(app, request, agent);
    return snapshotMemory(app.engine, device_ref);
  });

  app.put('/v1/agents/:agent/memory/:device_ref', { schema: { response: { 200: responseSchema(RestoreResult) } } }, async (request) => {
    const { agent, device_ref } = parse(memoryParams, request.params, 'path');
    if ((request.body as { confirm?: unknown } | undefined)?.confirm !== true) {
      throw new GatewayError('confirmation_required', `Send "confirm": true to restore. ${RESTORE_CLEARS} Nothing was sent.`);
    }
    const { snapshot } = parse(restoreBody, request.body, 'body');
    await authorizeViewer(app, request, agent);
    return restoreMemory(app.engine, device_ref, snapshot.units);
  });
}
