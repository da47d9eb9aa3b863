/**
 * `POST /v1/judge-checks`: the judge rules again on transcripts a person labelled, and the answer
 * says how often it agrees with the person (src/suites/judge-check). One JSON answer, written by a
 * serializer compiled from openapi.yaml's JudgeCheckReport.
 */

import type { FastifyInstance } from 'fastify';
import { serializedComponent } from '../api/openapi.js';
import { authenticate, requireToken } from './access.js';

/** The check loads with the first call, not at start-up: most pods never run one. */
const loadStart = () => import('../suites/judge-check/start.js');

export async function judgeCheckRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);
  app.post('/v1/judge-checks', async (request, reply) => {
    const { startJudgeCheck } = await loadStart();
    const report = await startJudgeCheck(app, { body: request.body, authenticate: () => authenticate(app, request) });
    const serialize = reply.compileSerializationSchema(await serializedComponent('JudgeCheckReport'), '200') as (r: object) => string;
    return reply.code(200).type('application/json; charset=utf-8').serializer(serialize).send(report);
  });
}
