/**
 * Test suites: `POST /v1/agents/{agent}/runs` runs a suite (validate, authorize, run every
 * conversation through the conversation service, close each) and answers its report.
 * `Accept: application/x-ndjson` streams `{"turn": …}` as each turn is evaluated, then
 * `{"report": …}`; errors before the first turn are ordinary JSON errors.
 */

import type { FastifyInstance } from 'fastify';
import { GatewayError, shuttingDown } from '../errors.js';
import { RESTORE_CLEARS } from '../memory/snapshots.js';
import { agentParams, parse } from '../schemas/requests.js';
import type { TurnEvent } from '../suites/report.js';
import { authorizeAgent, requireToken } from './access.js';
import { answerLongCall } from './streaming.js';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The suite format and runner load on the first run, not at start-up: many pods never run one. */
const loadSuites = async () => {
  const [request, runner, context] = await Promise.all([
    import('../suites/request.js'),
    import('../suites/runner.js'),
    import('../suites/context.js'),
  ]);
  return { ...request, ...runner, ...context };
};

export async function runRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  app.post('/v1/agents/:agent/runs', async (request, reply) => {
    const { agent } = parse(agentParams, request.params, 'path');
    const body: unknown = request.body;
    if (isObject(body) && isObject(body.memory) && body.memory.restore !== undefined && body.memory.confirm !== true) {
      throw new GatewayError(
        'confirmation_required',
        `Send "memory": { "confirm": true, … } to restore memory before the run. ${RESTORE_CLEARS} Nothing was sent.`,
      );
    }
    const { countRun, runContext, runSuite, suiteToRun } = await loadSuites();
    const { suite } = suiteToRun(body, agent, app.model !== undefined);
    if (app.conversations.stats.draining) {
      throw shuttingDown('retry the run on another pod');
    }
    const { caller, access } = await authorizeAgent(app, request, agent);

    // The caller hanging up cancels the run: running turns end, the rest are skipped, all closed.
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: 'The turn was cancelled: the caller hung up before the run ended.',
      run: async ({ signal, emit }) => {
        const onTurn = emit && ((event: TurnEvent) => emit({ turn: event }));
        return countRun(app.metrics, signal, () =>
          runSuite(runContext(app, { caller, agent, access, signal, log: request.log, onTurn }), suite),
        );
      },
    });
  });
}
