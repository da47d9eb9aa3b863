import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AgentRef, Caller } from '../domain/vocabulary.js';
import type { Grant } from '../platform/authorizer.js';
import { GatewayError } from '../errors.js';

/**
 * Every /v1 route needs a bearer token. Its mere presence is checked before the input (so a
 * call without one is a 401, not a 400); the platform is asked only once the input is valid.
 */
export function requireToken(app: FastifyInstance): void {
  // A callback hook, not an async one: no promise per request for a header check.
  app.addHook('onRequest', (request, _reply, done) => {
    done(
      request.headers.authorization
        ? undefined
        : new GatewayError('unauthenticated', 'Send Authorization: Bearer <platform access token>.'),
    );
  });
}

export const authenticate = (app: FastifyInstance, request: FastifyRequest): Promise<Caller> =>
  app.authorizer.authenticate(request.headers.authorization);

/** The caller and its access to the agent: from the caches without waiting when they are fresh (nearly every turn). */
export function authorizeAgent(app: FastifyInstance, request: FastifyRequest, agent: AgentRef): Grant | Promise<Grant> {
  return app.authorizer.cachedGrant(request.headers.authorization, agent) ?? askPlatform(app, request, agent);
}

async function askPlatform(app: FastifyInstance, request: FastifyRequest, agent: AgentRef): Promise<Grant> {
  const caller = await authenticate(app, request);
  return { caller, access: await app.authorizer.authorize(caller, agent) };
}

/** Viewer on the agent's project, whatever its revisions: reading, closing, memory. */
export async function authorizeViewer(app: FastifyInstance, request: FastifyRequest, agent: AgentRef): Promise<Caller> {
  const caller = await authenticate(app, request);
  await app.authorizer.authorizeViewer(caller, agent);
  return caller;
}
