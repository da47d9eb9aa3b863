/**
 * Snapshot and restore of a simulated user's memory, as the REST routes and the MCP tools both
 * answer them. The device_ref is already under `mcp:` (the input rules force it).
 */

import type { EngineAdapter } from '../engine/adapter.js';
import { isGatewayError } from '../errors.js';

const AGGREGATION_NOTE =
  'The snapshot holds no memory units. A session is aggregated about 30 s after its connection closes, ' +
  'so a snapshot taken straight after the last turn can hold nothing yet; try again in a minute.';
export const RESTORE_CLEARS =
  "Restoring is the engine's own delete-then-write: it clears the user's memory before loading the snapshot, " +
  'so whatever the sessions since the snapshot left behind is gone.';

/** The engine keeps one memory per simulated user, not per agent: `{agent}` only authorizes. */
const ACROSS_AGENTS =
  "The memory is the simulated user's across every agent: the agent named in the call only authorized it, " +
  "so the restore replaced this user's memory for all agents.";

export async function snapshotMemory(engine: EngineAdapter, deviceRef: string) {
  const userId = await engine.deviceUser(deviceRef);
  const units = await engine.readMemory(userId);
  return {
    device_ref: deviceRef,
    user_id: userId,
    units,
    unit_count: units.length,
    taken_at: new Date().toISOString(),
    notes: units.length === 0 ? [AGGREGATION_NOTE] : [],
  };
}

/**
 * The one restore, for REST, MCP and suite fixtures: the device's engine user, then the engine's
 * delete-then-write. A device that never connected has no engine user: without `createDevice`
 * that is `device_not_found` (REST and MCP: the caller names a device it has used); a suite's
 * fixture passes `createDevice`, which opens one session for it first, and then asks again.
 */
export async function restoreMemory(engine: EngineAdapter, deviceRef: string, units: unknown[], createDevice?: () => Promise<void>) {
  let userId: string;
  try {
    userId = await engine.deviceUser(deviceRef);
  } catch (err) {
    if (createDevice === undefined || !isGatewayError(err) || err.code !== 'device_not_found') throw err;
    await createDevice();
    userId = await engine.deviceUser(deviceRef);
  }
  const restored = await engine.restoreMemory(userId, units);
  return {
    device_ref: deviceRef,
    user_id: userId,
    restored,
    restored_at: new Date().toISOString(),
    notes: [RESTORE_CLEARS, ACROSS_AGENTS],
  };
}
