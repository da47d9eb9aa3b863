import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayError } from '../errors.js';
import { refusalReason, type Metrics } from './metrics.js';

/** The `route` of a request no route matched (404s, malformed paths): never the raw path. */
const UNMATCHED = 'unmatched';

/**
 * One onResponse hook on the root instance sees every answer, including those given before a
 * handler runs (401 from a hook, 400/413/415 from the body parser, 404 from the not-found
 * handler, the router's own 400s). prom-client directly rather than fastify-metrics: the
 * plugin would bring a second way of registering default metrics and its own /metrics route,
 * while the service needs one registry with its own buckets; the hook is a few lines.
 * Probes and scrapes are counted too (their route label tells them apart): a failing probe
 * shows on the dashboard, and the recording rules leave them out of the API's rates.
 */
export function observeRequests(app: FastifyInstance): void {
  // A callback hook, not an async one: no promise per request for a synchronous observation.
  app.addHook('onResponse', (request, reply, done) => {
    observeAnswer(app.metrics, request, reply);
    done();
  });
}

/** Also called by the router's bad-path handler, whose answers run no hooks. */
export function observeAnswer(metrics: Metrics, request: FastifyRequest, reply: FastifyReply): void {
  metrics.httpRequestDuration.observe(
    { method: request.method, route: request.routeOptions.url ?? UNMATCHED, status_code: String(reply.statusCode) },
    reply.elapsedTime / 1000,
  );
}

/** Called once where an error becomes the answer: a status and body, or a stream's last line. */
export function countRefusal(metrics: Metrics, error: GatewayError): void {
  metrics.refusals.inc({ reason: refusalReason(error.code) });
}
