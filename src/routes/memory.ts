import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../errors.js';
import { memoryParams, parse, restoreBody } from '../schemas/requests.js';
import { authorizeViewer, requireToken } from './access.js';

/**
 * Snapshot and restore of a simulated user's memory. The engine's memory endpoints are open and
 * take a bare user id, so `{agent}` authorizes the call and every device is forced under `mcp:`.
 */
const AGGREGATION_NOTE =
  'The snapshot holds no memory units. A session is aggregated about 30 s after its connection closes, so a snapshot taken straight after the last turn can hold nothing yet; try again in a minute.';
export const RESTORE_CLEARS =
  "Restoring is the engine's own delete-then-write: it clears the user's memory before loading the snapshot, so whatever the sessions since the snapshot left behind is gone.";

/** The engine keeps one memory per simulated user, not per agent: `{agent}` only authorizes. */
export const ACROSS_AGENTS =
  "The memory is the simulated user's across every agent: the agent in the path only authorized this call, so the restore replaced this user's memory for all agents.";

export async function memoryRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  app.get('/v1/agents/:agent/memory/:device_ref', async (request) => {
    const { agent, device_ref } = parse(memoryParams, request.params, 'path');
    await authorizeViewer(app, request, agent);
    const userId = await app.engine.deviceUser(device_ref);
    const units = await app.engine.readMemory(userId);
    return {
      device_ref,
      user_id: userId,
      units,
      unit_count: units.length,
      taken_at: new Date().toISOString(),
      notes: units.length === 0 ? [AGGREGATION_NOTE] : [],
    };
  });

  app.put('/v1/agents/:agent/memory/:device_ref', async (request) => {
    const { agent, device_ref } = parse(memoryParams, request.params, 'path');
    if ((request.body as { confirm?: unknown } | undefined)?.confirm !== true) {
      throw new GatewayError('confirmation_required', `Send "confirm": true to restore. ${RESTORE_CLEARS} Nothing was sent.`);
    }
    const { snapshot } = parse(restoreBody, request.body, 'body');
    await authorizeViewer(app, request, agent);
    const userId = await app.engine.deviceUser(device_ref);
    const restored = await app.engine.restoreMemory(userId, snapshot.units);
    return {
      device_ref,
      user_id: userId,
      restored,
      restored_at: new Date().toISOString(),
      notes: [RESTORE_CLEARS, ACROSS_AGENTS],
    };
  });
}
