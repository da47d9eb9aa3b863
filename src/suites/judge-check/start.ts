import type { FastifyInstance } from 'fastify';
import type { Caller } from '../../domain/vocabulary.js';
import { GatewayError, invalidRequest } from '../../errors.js';
import { checkJudge, type JudgeCheckReport } from './check.js';
import { parseJudgeCheck } from './input.js';

/**
 * The one start of a judge-check, whichever front asks (the REST route, the MCP tool): the input
 * checked (every problem a 400 naming its field, nothing sent to the model), a model configured,
 * then Viewer on the project of every agent the transcripts are of — the judge is the gateway's
 * model, spent for that agent's team — and the check. It never touches the engine.
 */
export async function startJudgeCheck(
  app: FastifyInstance,
  ask: { body: unknown; authenticate: () => Promise<Caller> },
): Promise<JudgeCheckReport> {
  const parsed = parseJudgeCheck(ask.body);
  if (!parsed.ok) {
    const [first, ...rest] = parsed.problems.map(({ field, rule }) => ({ field, rule }));
    throw invalidRequest([first!, ...rest], 'nothing was sent to the model');
  }
  if (app.model === undefined) {
    throw new GatewayError(
      'model_not_configured',
      'A judge-check needs the judge, a model, and this gateway has none: set MODEL_BASE_URL (and JUDGE_MODEL) on the gateway. ' +
        'Nothing was sent to a model.',
      { variable: 'MODEL_BASE_URL' },
    );
  }
  const caller = await ask.authenticate();
  for (const agent of parsed.input.agents) await app.authorizer.authorizeViewer(caller, agent);
  return checkJudge(app.model, parsed.input);
}
