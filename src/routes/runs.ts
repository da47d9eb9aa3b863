import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../errors.js';
import { agentParams, parse } from '../schemas/requests.js';
import { parseHttpSuite } from '../suites/format.js';
import type { RunResult } from '../ops/metrics.js';
import type { RunReport, TurnEvent } from '../suites/report.js';
import { runSuite } from '../suites/runner.js';
import { authorizeAgent, requireToken } from './access.js';
import { RESTORE_CLEARS } from './memory.js';
import { answerLongCall } from './streaming.js';

/**
 * Test suites: `POST /v1/agents/{agent}/runs` runs a suite (validate, authorize, run every
 * conversation through the registry, close each) and answers its report.
 * `Accept: application/x-ndjson` streams `{"turn": …}` as each turn is evaluated, then
 * `{"report": …}`; errors before the first turn are ordinary JSON errors.
 */
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every run that started counts once: passed, failed, cancelled by a hang-up, or error. */
async function countRun(app: FastifyInstance, signal: AbortSignal, run: () => Promise<RunReport>): Promise<RunReport> {
  let result: RunResult = 'error';
  try {
    const report = await run();
    result = signal.aborted ? 'cancelled' : report.passed ? 'passed' : 'failed';
    return report;
  } finally {
    app.metrics.suiteRuns.inc({ result });
  }
}

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
    const parsed = parseHttpSuite(body);
    if (!parsed.ok) {
      const first = parsed.problems[0]!;
      throw new GatewayError('invalid_request', `${first.rule}; nothing was sent to the engine`, {
        // The whole suite is the request's body, as the other routes name it.
        problems: parsed.problems.map(({ field, rule }) => ({ field: field === 'the suite' ? 'body' : field, rule })),
      });
    }
    const suite = parsed.suite;
    if (suite.agent !== undefined && suite.agent.key !== agent.key) {
      throw new GatewayError(
        'invalid_request',
        `agent must be ${agent.key}, the agent in the path, or be left out; nothing was sent to the engine`,
        { problems: [{ field: 'agent', rule: `agent must be ${agent.key}, the agent in the path, or be left out` }] },
      );
    }
    if (app.conversations.stats.draining) {
      throw new GatewayError('shutting_down', 'This gateway pod is shutting down; retry the run on another pod.');
    }
    const { caller, access } = await authorizeAgent(app, request, agent);

    // The caller hanging up cancels the run: running turns end, the rest are skipped, all closed.
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: 'The turn was cancelled: the caller hung up before the run ended.',
      run: async ({ signal, emit }) => {
        const onTurn = emit && ((event: TurnEvent) => emit({ turn: event }));
        return countRun(app, signal, () => runSuite(
          {
            registry: app.conversations,
            engine: app.engine,
            config: app.config,
            caller,
            access,
            signal,
            log: request.log,
            ...(onTurn ? { onTurn } : {}),
          },
          suite,
        ));
      },
    });
  });
}
