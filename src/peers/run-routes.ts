import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { NDJSON } from '../http/ndjson.js';
import { checkpointFromWire } from '../runs/checkpoint.js';
import { runLines } from '../runs/follow.js';
import { runsMatching } from '../runs/locate.js';
import type { RunRegistry } from '../runs/registry.js';
import { runView } from '../runs/views.js';
import { agentSchema, parse, runIdSchema } from '../schemas/requests.js';
import type { Peers } from './peers.js';
import { Readable } from 'node:stream';

const idParams = z.object({ run_id: runIdSchema });
/** A caller's runs, or an agent's: one of the two. */
const listQuery = z
  .object({ caller_id: z.string().min(1).max(512).optional(), agent: agentSchema.optional() })
  .refine((q) => (q.caller_id === undefined) !== (q.agent === undefined), { error: 'caller_id or agent, one of the two' });

/**
 * The routes siblings call about runs (behind the peer routes' secret check): checkpoints pushed
 * by the pod holding a run (a replica kept here, or with `adopt` the run taken over now), a run's
 * view and lines for a pod that does not hold it, a caller's runs, and a cancel passed on.
 */
export function runPeerRoutes(deps: { runs: RunRegistry; peers: Peers }) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post('/internal/peer/runs/:run_id/checkpoint', async (request, reply) => {
      const { run_id: id } = parse(idParams, request.params, 'path');
      const push = checkpointFromWire(request.body);
      if (push === undefined || (push.spec !== undefined && push.spec.id !== id)) {
        throw new GatewayError('invalid_request', 'A run checkpoint needs the fields of a checkpoint, for the run of its path.');
      }
      const holder = deps.peers.peerAt({ ip: request.ip, port: push.holder_port });
      if (holder === undefined) throw new GatewayError('forbidden', 'A run checkpoint is taken only from a pod of the peer list.');
      const refused = deps.runs.receive(id, push, holder.address);
      if (refused !== undefined) return reply.code(409).send({ refused });
      return reply.code(204).send();
    });

    app.get('/internal/peer/runs/:run_id', async (request, reply) => {
      const { run_id: id } = parse(idParams, request.params, 'path');
      const run = deps.runs.get(id);
      if (run === undefined) return reply.code(404).send({ held: false });
      return { held: run.holder === null, epoch: run.epoch, run: { ...runView(run, deps.runs.podName), caller_id: run.spec.callerId } };
    });

    app.get('/internal/peer/runs', async (request) => {
      const query = parse(listQuery, request.query, 'query');
      const filter = query.caller_id === undefined ? { agent: query.agent! } : { callerId: query.caller_id };
      return {
        runs: runsMatching(deps.runs, filter).map((run) => {
          return { view: { ...runView(run, deps.runs.podName), report: null }, held: run.holder === null };
        }),
      };
    });

    app.get('/internal/peer/runs/:run_id/events', async (request, reply) => {
      const { run_id: id } = parse(idParams, request.params, 'path');
      const { after } = parse(z.object({ after: z.coerce.number().int().min(0).default(0) }), request.query, 'query');
      const run = deps.runs.get(id);
      // Only what is served here: a run this pod neither holds nor has ended is followed where it is.
      if (run === undefined || (run.holder !== null && !run.ended)) return reply.code(421).send();
      const hangUp = new AbortController();
      reply.raw.on('close', () => hangUp.abort());
      const lines = async function* () {
        for await (const line of runLines(deps.runs, id, after, hangUp.signal)) yield `${line}\n`;
      };
      return reply.type(NDJSON).header('cache-control', 'no-store').send(Readable.from(lines()));
    });

    app.delete('/internal/peer/runs/:run_id', async (request, reply) => {
      const { run_id: id } = parse(idParams, request.params, 'path');
      const { why } = parse(z.object({ why: z.string().max(512) }), request.query, 'query');
      const run = deps.runs.get(id);
      if (run === undefined) return reply.code(421).send();
      await deps.runs.cancelHere(run, why);
      return { run: runView(deps.runs.get(id) ?? run, deps.runs.podName) };
    });
  };
}
