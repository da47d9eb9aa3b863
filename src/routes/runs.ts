/**
 * Test suites: `POST /v1/agents/{agent}/runs` runs a suite (validate, authorize, run every
 * conversation through the conversation service, close each) and answers its report;
 * `POST /v1/agents/{candidate}/comparisons` runs one against a baseline revision too and answers
 * what differs. `Accept: application/x-ndjson` streams `{"turn": …}` as each turn is evaluated,
 * then `{"report": …}`; errors before the first turn are ordinary JSON errors.
 */

import type { FastifyInstance, FastifyReply } from 'fastify';
import { serializedComponent } from '../api/openapi.js';
import type { AgentRef } from '../domain/vocabulary.js';
import { GatewayError, invalidRequest } from '../errors.js';
import { RESTORE_CLEARS } from '../memory/snapshots.js';
import { agentParams, agentSchema, parse } from '../schemas/requests.js';
import { authenticate, requireToken } from './access.js';
import { answerLongCall } from './streaming.js';

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

const HANG_UP_NOTE = 'The turn was cancelled: the caller hung up before the run ended.';

export async function runRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  app.post('/v1/agents/:agent/runs', async (request, reply) => {
    const { agent } = parse(agentParams, request.params, 'path');
    requireRestoreConfirmation(request.body);
    const { admitRun, monitorOf, startRun } = await loadStart();
    const { monitor, suite } = monitorOf(request.body);
    const admitted = await admitRun(app, { body: suite, agent, monitor, authenticate: () => authenticate(app, request) });
    // The caller hanging up cancels the run: running turns end, the rest are skipped, all closed.
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: HANG_UP_NOTE,
      serialize: await reportSerializer(reply, 'RunReport'),
      run: ({ signal, emit }) => startRun(app, admitted, { signal, log: request.log, onTurn: emit && ((turn) => emit({ turn })) }),
    });
  });

  app.post('/v1/agents/:agent/comparisons', async (request, reply) => {
    const { agent: candidate } = parse(agentParams, request.params, 'path');
    requireRestoreConfirmation(request.body);
    const { baseline, suite: body } = baselineOf(request.body);
    const { admitComparison, startComparison } = await loadStart();
    const admitted = await admitComparison(app, { body, candidate, baseline, authenticate: () => authenticate(app, request) });
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: HANG_UP_NOTE,
      serialize: await reportSerializer(reply, 'ComparisonReport'),
      run: ({ signal, emit }) => startComparison(app, admitted, { signal, log: request.log, onTurn: emit && ((turn) => emit({ turn })) }),
    });
  });
}
