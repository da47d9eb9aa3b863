// The engine simulator's memory: the HTTP API of docs/engine-contract.md (a device's user, a user's
// memory units, a restore), and what the engine's end-of-conversation aggregation keeps of a session.
import type { FastifyInstance } from 'fastify';
import { rememberedFact, type AgentContext } from './agent.js';
import type { EngineFaults, MemoryRequest } from './engine-record.js';

/** One engine element (a JSON object per text frame); memory units are opaque objects too. */
export type Json = Record<string, unknown>;

/**
 * A user's memory units after a session's aggregation: what the agent repeated to it of other users'
 * facts, the facts its lines left (`sim:forget:TEXT`
 * drops the facts that hold TEXT, as an engine correcting what it knew), and a summary of it.
 */
export function aggregated(
  before: Json[],
  sessionId: string,
  lines: string[],
  context: Pick<AgentContext, 'revision' | 'draw'>,
  told: string[] = [],
): Json[] {
  let units = [...before];
  // What the agent repeated to this user of others' facts, it now remembers as this user's (a leak into memory).
  for (const fact of told) units.push({ kind: 'fact', text: `heard from another customer: ${fact}`, sessionId });
  for (const line of lines) {
    const fact = rememberedFact(line, context);
    if (fact !== undefined) units.push({ kind: 'fact', text: fact, sessionId });
    const forget = /^sim:forget:(.+)$/.exec(line)?.[1];
    if (forget !== undefined) units = units.filter((u) => u.kind !== 'fact' || !String(u.text).includes(forget));
  }
  units.push({ kind: 'summary', sessionId, lines: lines.length });
  return units;
}

interface MemoryState {
  record: { memoryRequests: MemoryRequest[] };
  /** deviceId → engine user id */
  devices: Map<string, string>;
  /** engine user id → memory units */
  memory: Map<string, Json[]>;
  faults: () => EngineFaults;
}

/** The memory endpoints, recording every request they are sent. */
export const memoryApi =
  ({ record, devices, memory, faults }: MemoryState) =>
  async (api: FastifyInstance): Promise<void> => {
    api.addHook('preHandler', async (req) => {
      record.memoryRequests.push({
        method: req.method,
        path: req.url.split('?')[0] ?? req.url,
        query: { ...(req.query as Record<string, string>) },
        body: req.body,
        at: Date.now(),
      });
    });

    api.get<{ Params: { deviceId: string } }>('/api/devices/:deviceId/user', async (req, reply) => {
      const userId = devices.get(req.params.deviceId);
      if (!userId) return reply.code(404).send({ error: 'not_found', message: `Device ${req.params.deviceId} never connected.` });
      return { userId };
    });

    api.get<{ Querystring: { userId?: string } }>('/api/memory', async (req, reply) => {
      const { userId } = req.query;
      if (!userId) return reply.code(400).send({ error: 'bad_request', message: 'userId is required.' });
      const units = memory.get(userId) ?? [];
      switch (faults().memoryRead) {
        case 'http_500':
          return reply.code(500).send({ error: 'internal', message: 'Simulated memory fault.' });
        case 'units_not_list':
          return { userId, units: 'none' };
        case 'unit_not_object':
          return { userId, units: [...units, 'a stray string'] };
        default:
          return { userId, units };
      }
    });

    api.post<{ Querystring: { userId?: string }; Body: { units?: unknown } }>('/api/memory/restore', async (req, reply) => {
      const { userId } = req.query;
      const units = req.body?.units;
      if (!userId || !Array.isArray(units)) {
        return reply.code(400).send({ error: 'bad_request', message: 'userId and a units array are required.' });
      }
      // Delete-then-write: whatever the user's memory held is gone.
      memory.set(userId, [...(units as Json[])]);
      return { restored: units.length };
    });
  };
