/**
 * Test suites as resources. `POST /v1/agents/{agent}/runs` and `POST /v1/agents/{candidate}/comparisons`
 * admit a suite (validate, authorize) and start a run held by this pod (src/runs), then follow it:
 * `Accept: application/x-ndjson` streams its lines as they come (`{"run": …}` first, `{"report": …}`
 * last), JSON waits for the report, `Prefer: respond-async` answers 202 at once. Every answer
 * carries `Location: /v1/runs/{id}`. `/v1/runs…` reads, follows and cancels a run from any pod.
 */

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { serializedComponent } from '../api/openapi.js';
import type { AgentRef } from '../domain/vocabulary.js';
import { GatewayError, invalidRequest, shuttingDown, type ErrorCode } from '../errors.js';
import { NDJSON } from '../http/ndjson.js';
import { RESTORE_CLEARS } from '../memory/snapshots.js';
import { capturedRunOf } from '../runs/capture.js';
import { runLines } from '../runs/follow.js';
import { CANCELLED_BY_DELETE, isFinalLine } from '../runs/registry.js';
import { cancelLocated, listRuns, locateOwnRun, locateRun, readerOf, type Reader } from '../runs/locate.js';
import type { Run, RunKind } from '../runs/run.js';
import { runView } from '../runs/views.js';
import { agentParams, agentSchema, parse, runIdSchema } from '../schemas/requests.js';
import { authenticate, requireToken } from './access.js';
import { hangUpOf, wantsStream } from './streaming.js';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The suite format and runners load on the first run, not at start-up: many pods never run one. */
const loadStart = () => import('../suites/run/start.js');

/** A restore before the run needs `memory.confirm: true`: checked before anything else is. */
function requireRestoreConfirmation(body: unknown): void {
  if (isObject(body) && isObject(body.memory) && body.memory.restore !== undefined && body.memory.confirm !== true) {
    throw new GatewayError(
      'confirmation_required',
      `Send "memory": { "confirm": true, … } to restore memory before the run. ${RESTORE_CLEARS} Nothing was sent.`,
    );
  }
}

/** The comparison body's `baseline`, and the suite without it. */
function baselineOf(body: unknown): { baseline: AgentRef; suite: unknown } {
  const { baseline, ...suite } = isObject(body) ? body : {};
  if (baseline === undefined)
    throw invalidRequest([{ field: 'baseline', rule: 'baseline is required: the agent or revision to compare with' }]);
  const parsed = agentSchema.safeParse(baseline);
  if (!parsed.success) throw invalidRequest([{ field: 'baseline', rule: parsed.error.issues[0]!.message.replace(/^agent /, 'baseline ') }]);
  return { baseline: parsed.data, suite: isObject(body) ? suite : body };
}

/**
 * A report is written by a serializer compiled from its one declaration, openapi.yaml's component,
 * as every other answer is from its shape; compiled with the first run, as the runners load.
 */
export const reportSerializer = async (
  reply: FastifyReply,
  component: 'RunReport' | 'ComparisonReport',
): Promise<(report: object) => string> =>
  reply.compileSerializationSchema(await serializedComponent(component), '200') as (report: object) => string;

/** `Prefer: respond-async` (RFC 7240): answer 202 at once, the run followed later. */
const prefersAsync = (request: FastifyRequest): boolean => /(^|[,;\s])respond-async\b/i.test(String(request.headers.prefer ?? ''));

const runPath = (id: string): string => `/v1/runs/${id}`;

/**
 * Aborted when the caller hangs up (the reply's socket closes before the answer is complete), or
 * when this pod, draining, has no grace left to follow the run for its caller.
 */
const followingEnds = (app: FastifyInstance, reply: FastifyReply): AbortSignal =>
  AbortSignal.any([hangUpOf(reply).signal, app.runs.closing]);

/** Streams a run's lines after `after` as NDJSON, from wherever the run is, until its last line. */
function streamLines(app: FastifyInstance, reply: FastifyReply, id: string, after: number, status: 200 | 201): FastifyReply {
  const signal = followingEnds(app, reply);
  const lines = async function* () {
    try {
      for await (const line of runLines(app.runs, id, after, signal)) yield `${line}\n`;
    } catch (err) {
      const error = err instanceof GatewayError ? err : new GatewayError('internal', 'The gateway failed while following the run.');
      yield `${JSON.stringify(error.toJSON())}\n`;
    }
  };
  return reply
    .code(status)
    .type(NDJSON)
    .header('location', runPath(id))
    .header('cache-control', 'no-store')
    .header('x-accel-buffering', 'no')
    .send(Readable.from(lines()));
}

/** Waits for a run's last line; answers its report, or throws its error (with that error's status). */
async function finalAnswer(app: FastifyInstance, reply: FastifyReply, id: string): Promise<Record<string, unknown>> {
  let last: string | undefined;
  for await (const line of runLines(app.runs, id, 0, followingEnds(app, reply))) last = line;
  if (app.runs.closing.aborted && (last === undefined || !isFinalLine(last))) {
    reply.header('location', runPath(id));
    throw shuttingDown(`the run goes on on another pod: GET ${runPath(id)} answers its report once it has ended`);
  }
  if (last === undefined || !isFinalLine(last)) throw new GatewayError('internal', 'The run ended without a report.');
  const parsed = JSON.parse(last) as { report?: Record<string, unknown>; error?: ErrorCode; message?: string; details?: unknown };
  if (parsed.report !== undefined) return parsed.report;
  throw new GatewayError(parsed.error ?? 'internal', parsed.message ?? 'The run failed.', parsed.details);
}

/** The answer to a POST that started `run`: 202 at once, the lines streamed, or the report when it ends. */
async function answerStarted(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  run: Run,
  component: 'RunReport' | 'ComparisonReport',
): Promise<FastifyReply> {
  if (run.spec.detached) return reply.code(202).header('location', runPath(run.id)).send(runView(run, app.runs.podName));
  if (wantsStream(request)) return streamLines(app, reply, run.id, 0, 200);
  const serialize = await reportSerializer(reply, component);
  const report = await finalAnswer(app, reply, run.id);
  return reply.code(200).header('location', runPath(run.id)).type('application/json; charset=utf-8').serializer(serialize).send(report);
}

const idParams = z.object({ run_id: runIdSchema });
const listQuery = z.object({ agent: agentSchema.optional() });
const captureQuery = z.object({
  conversation: z
    .string({ error: 'conversation is required: the name of the conversation whose attempt to capture' })
    .min(1, { error: 'conversation must not be empty' })
    .max(200, { error: 'conversation must be at most 200 characters' }),
  attempt: z.coerce
    .number({ error: 'attempt is required: the number of the attempt to capture, from 1' })
    .int({ error: 'attempt must be a whole number, from 1' })
    .min(1, { error: 'attempt must be a whole number, from 1' }),
  side: z.enum(['baseline', 'candidate'], { error: 'side must be baseline or candidate' }).optional(),
});

/** Capture loads with its first use, as the suite format does. */
const loadCapture = () => import('../suites/capture/capture.js');

/** The caller as a reader of runs (the team reads a run; its caller alone cancels it). */
const readerFor = async (app: FastifyInstance, request: FastifyRequest): Promise<Reader> =>
  readerOf(app.authorizer, await authenticate(app, request));
const afterQuery = z.object({
  after: z.coerce
    .number({ error: 'after must be a whole number of lines, 0 or more' })
    .int({ error: 'after must be a whole number of lines, 0 or more' })
    .min(0, { error: 'after must be a whole number of lines, 0 or more' })
    .default(0),
});

export async function runRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  const start = async (request: FastifyRequest, reply: FastifyReply, kind: RunKind) => {
    const { agent } = parse(agentParams, request.params, 'path');
    requireRestoreConfirmation(request.body);
    const { admitRun, admitComparison, monitorOf } = await loadStart();
    const ask = { authenticate: () => authenticate(app, request) };
    let admitted;
    if (kind === 'run') {
      const { monitor, suite } = monitorOf(request.body);
      admitted = await admitRun(app, { ...ask, body: suite, agent, monitor });
    } else {
      const { baseline, suite } = baselineOf(request.body);
      admitted = await admitComparison(app, { ...ask, body: suite, candidate: agent, baseline });
    }
    const run = app.runs.start(kind, admitted, { detached: prefersAsync(request) });
    return answerStarted(app, request, reply, run, kind === 'run' ? 'RunReport' : 'ComparisonReport');
  };

  app.post('/v1/agents/:agent/runs', (request, reply) => start(request, reply, 'run'));
  app.post('/v1/agents/:agent/comparisons', (request, reply) => start(request, reply, 'comparison'));

  app.get('/v1/runs', async (request) => {
    const { agent } = parse(listQuery, request.query, 'query');
    const caller = await authenticate(app, request);
    if (agent === undefined) return { runs: await listRuns(app.runs, { callerId: caller.id }) };
    // An agent's runs are for its Viewers (403 otherwise, as every route naming an agent), and of
    // those, the comparisons whose other side the caller may read too.
    await app.authorizer.authorizeViewer(caller, agent);
    return { runs: await listRuns(app.runs, { agent }, readerOf(app.authorizer, caller)) };
  });

  app.get('/v1/runs/:run_id', async (request) => {
    const { run_id: id } = parse(idParams, request.params, 'path');
    return (await locateRun(app.runs, id, await readerFor(app, request))).view;
  });

  app.get('/v1/runs/:run_id/events', async (request, reply) => {
    const { run_id: id } = parse(idParams, request.params, 'path');
    const { after } = parse(afterQuery, request.query, 'query');
    await locateRun(app.runs, id, await readerFor(app, request));
    return streamLines(app, reply, id, after, 200);
  });

  app.get('/v1/runs/:run_id/capture', async (request, reply) => {
    const { run_id: id } = parse(idParams, request.params, 'path');
    const ask = parse(captureQuery, request.query, 'query');
    const located = await locateRun(app.runs, id, await readerFor(app, request));
    const yaml = (await loadCapture()).captureSuite(capturedRunOf(located, app.runs.get(id)), ask);
    return reply
      .type('application/yaml; charset=utf-8')
      .header('content-disposition', 'attachment; filename="regression.yaml"')
      .header('cache-control', 'no-store')
      .send(yaml);
  });

  app.delete('/v1/runs/:run_id', async (request) => {
    const { run_id: id } = parse(idParams, request.params, 'path');
    return cancelLocated(app.runs, await locateOwnRun(app.runs, id, await readerFor(app, request)), CANCELLED_BY_DELETE);
  });
}
