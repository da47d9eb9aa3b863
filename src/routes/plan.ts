import type { FastifyInstance } from 'fastify';
import { serializedComponent } from '../api/openapi.js';
import { parse } from '../schemas/requests.js';
import { planAnswer, planBody } from '../suites/spec/plan-request.js';
import { authenticate, requireToken } from './access.js';

/**
 * `POST /v1/comparisons/plan`: a plan before a comparison (src/stats/plan.ts), as the CLI's `plan`
 * and the MCP tool `plan_comparison` answer it. It touches no agent, so the caller need only be one
 * the platform authenticates (no project role: docs/decisions.md); the body is checked first, as
 * every route does. The answer is written by a serializer compiled from openapi.yaml's
 * ComparisonPlan on the first plan.
 */
export async function planRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  app.post('/v1/comparisons/plan', async (request, reply) => {
    const body = parse(planBody, request.body ?? {}, 'body');
    await authenticate(app, request);
    const serialize = reply.compileSerializationSchema(await serializedComponent('ComparisonPlan'), '200') as (plan: object) => string;
    const answer = await planAnswer(body);
    return reply.code(200).type('application/json; charset=utf-8').serializer(serialize).send(answer);
  });
}
