import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { MemorySnapshot, RestoreResult } from '../api/responses.js';
import { GatewayError } from '../errors.js';
import { RESTORE_CLEARS, restoreMemory, snapshotMemory } from '../memory/snapshots.js';
import { agentSchema, restoreBody } from '../schemas/requests.js';
import { deviceRefSchema } from '../schemas/connect.js';
import { callerOf, guarded, success } from './results.js';
import { registerTool } from './tools.js';

/** snapshot_memory and restore_memory: the memory routes as tools; a restore needs a confirmation. */
type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const agentField = agentSchema.describe('An agent of the project whose simulated user it is: coach or coach.3.');
const deviceField = deviceRefSchema.describe('The simulated user (device_ref), e.g. alice; always under mcp:.');

/**
 * A restore clears the user's memory first, so it runs only when confirmed: through elicitation
 * (the user answers; `confirm` in the arguments does not replace that) when the client declares
 * it, otherwise only with `confirm: true`. Decline, cancel or anything else refuses.
 */
export async function confirmRestore(server: McpServer, extra: Extra, confirm: boolean | undefined, what: string): Promise<void> {
  if (server.server.getClientCapabilities()?.elicitation?.form !== undefined) {
    const answer = await server.server.elicitInput(
      {
        mode: 'form',
        message: `Restore ${what}? ${RESTORE_CLEARS}`,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Restore', description: 'Yes: clear the memory and load the snapshot.' } },
          required: ['confirm'],
        },
      },
      { relatedRequestId: extra.requestId, signal: extra.signal },
    );
    if (answer.action === 'accept' && answer.content?.confirm === true) return;
    throw new GatewayError(
      'confirmation_required',
      `The restore was not confirmed (the user answered ${answer.action === 'accept' ? 'no' : answer.action}). ${RESTORE_CLEARS} ` +
        `Nothing was sent.`,
    );
  }
  if (confirm === true) return;
  throw new GatewayError(
    'confirmation_required',
    `This client cannot ask its user (no elicitation capability): pass "confirm": true once the user has agreed. ` +
      `${RESTORE_CLEARS} Nothing was sent.`,
  );
}

export function registerMemoryTools(server: McpServer, app: FastifyInstance): void {
  registerTool(
    server,
    app.log,
    'snapshot_memory',
    {
      title: "Snapshot a simulated user's memory",
      description:
        'Read the memory units the engine holds for a simulated user (device_ref). The engine aggregates a session about 30 s ' +
        'after its connection closes, so a snapshot taken sooner may not hold it yet.',
      inputSchema: z.strictObject({ agent: agentField, device_ref: deviceField }),
      outputSchema: MemorySnapshot,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ agent, device_ref }, extra) =>
      guarded(app.log, async () => {
        await app.authorizer.authorizeViewer(callerOf(extra), agent);
        const snapshot = await snapshotMemory(app.engine, device_ref);
        return success(
          snapshot,
          [`${snapshot.unit_count} memory unit(s) of ${device_ref} (user ${snapshot.user_id}).`, ...snapshot.notes].join(' '),
        );
      }),
  );

  registerTool(
    server,
    app.log,
    'restore_memory',
    {
      title: "Restore a simulated user's memory",
      description:
        `Load a snapshot (as snapshot_memory answers it) into a simulated user's memory. ${RESTORE_CLEARS} Asks the ` +
        `user to confirm when the client supports elicitation; otherwise runs only with confirm: true.`,
      inputSchema: z.strictObject({
        agent: agentField,
        device_ref: deviceField,
        snapshot: restoreBody.shape.snapshot,
        confirm: z.boolean().optional().describe('true: the user agreed to the restore (used only by clients without elicitation).'),
      }),
      outputSchema: RestoreResult,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    ({ agent, device_ref, snapshot, confirm }, extra) =>
      guarded(app.log, async () => {
        await app.authorizer.authorizeViewer(callerOf(extra), agent);
        await confirmRestore(server, extra, confirm, `the memory of ${device_ref} from a snapshot of ${snapshot.units.length} unit(s)`);
        const restored = await restoreMemory(app.engine, device_ref, snapshot.units);
        return success(restored, [`Restored ${restored.restored} memory unit(s) of ${device_ref}.`, ...restored.notes].join(' '));
      }),
  );
}
