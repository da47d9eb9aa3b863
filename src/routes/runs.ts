/**
 * Test suites: `POST /v1/agents/{agent}/runs` runs a suite (validate, authorize, run every
 * conversation through the conversation service, close each) and answers its report;
 * `POST /v1/agents/{candidate}/comparisons` runs one against a baseline revision too and answers
 * what differs. `Accept: application/x-ndjson` streams `{"turn": …}` as each turn is evaluated,
 * then `{"report": …}`; errors before the first turn are ordinary JSON errors.
 */

import type { FastifyInstance } from 'fastify';
import type { AgentAccess, AgentRef } from '../domain/vocabulary.js';
import { GatewayError, invalidRequest, shuttingDown } from '../errors.js';
import { RESTORE_CLEARS } from '../memory/snapshots.js';
import { agentParams, agentSchema, parse } from '../schemas/requests.js';
import type { TurnEvent } from '../suites/report.js';
import { authorizeAgent, requireToken } from './access.js';
import { answerLongCall } from './streaming.js';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The suite format and runners load on the first run, not at start-up: many pods never run one. */
const loadSuites = async () => {
  const [request, runner, compare, context] = await Promise.all([
    import('../suites/request.js'),
    import('../suites/runner.js'),
    import('../suites/compare.js'),
    import('../suites/context.js'),
  ]);
  return { ...request, ...runner, ...compare, ...context };
};

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

const HANG_UP_NOTE = 'The turn was cancelled: the caller hung up before the run ended.';

export async function runRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  const refuseWhileDraining = (what: string) => {
    if (app.conversations.stats.draining) throw shuttingDown(what);
  };

  app.post('/v1/agents/:agent/runs', async (request, reply) => {
    const { agent } = parse(agentParams, request.params, 'path');
    requireRestoreConfirmation(request.body);
    const { countRun, runContext, runSuite, suiteToRun } = await loadSuites();
    const { suite } = suiteToRun(request.body, agent, app.model !== undefined);
    refuseWhileDraining('retry the run on another pod');
    const { caller, access } = await authorizeAgent(app, request, agent);
    // The caller hanging up cancels the run: running turns end, the rest are skipped, all closed.
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: HANG_UP_NOTE,
      run: async ({ signal, emit }) => {
        const onTurn = emit && ((event: TurnEvent) => emit({ turn: event }));
        const ctx = runContext(app, { caller, agent, access, signal, log: request.log, onTurn });
        return countRun(app.metrics, signal, () => runSuite(ctx, suite));
      },
    });
  });

  app.post('/v1/agents/:agent/comparisons', async (request, reply) => {
    const { agent: candidate } = parse(agentParams, request.params, 'path');
    requireRestoreConfirmation(request.body);
    const { baseline, suite: body } = baselineOf(request.body);
    const { compareSuite, runContext, suiteToRun } = await loadSuites();
    const { suite } = suiteToRun(body, candidate, app.model !== undefined);
    refuseWhileDraining('retry the comparison on another pod');
    // Viewer (and a runnable revision) on both agents' projects before anything is sent.
    const { caller, access } = await authorizeAgent(app, request, candidate);
    const baselineAccess = await app.authorizer.authorize(caller, baseline);
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: HANG_UP_NOTE,
      run: async ({ signal, emit }) => {
        const side = (name: 'baseline' | 'candidate', agent: AgentRef, sideAccess: AgentAccess) =>
          runContext(app, {
            caller,
            agent,
            access: sideAccess,
            signal,
            log: request.log,
            onTurn: emit && ((event: TurnEvent) => emit({ turn: { side: name, ...event } })),
          });
        return compareSuite(
          { baseline: side('baseline', baseline, baselineAccess), candidate: side('candidate', candidate, access) },
          suite,
        );
      },
    });
  });
}
