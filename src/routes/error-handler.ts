/**
 * Every error leaves as `{ error, message }` (optionally `details`): the gateway's own errors as
 * they are, Fastify's (body parsing, limits, media types) translated into the same codes.
 */

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, invalidRequest, isGatewayError } from '../errors.js';
import { countRefusal, observeAnswer } from '../ops/http-metrics.js';

function translate(err: FastifyError, bodyLimit: number): GatewayError {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('body_too_large', `The body is larger than the limit of ${bodyLimit} bytes.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('unsupported_media_type', 'Send the body as application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', 'The Content-Length does not match the body.');
    default:
      if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err.code?.startsWith('FST_ERR_CTP')) {
        return new GatewayError('invalid_request', 'The body must be valid JSON; nothing was sent to the engine.');
      }
      if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
        return new GatewayError('invalid_request', err.message);
      }
      return new GatewayError('internal', 'The gateway failed on this request; it has been logged.');
  }
}

export function installErrorHandling(app: FastifyInstance): void {
  // JSON only: a text/plain body is a 415, not a string that fails validation later.
  app.removeContentTypeParser('text/plain');
  // An empty JSON body is "no fields" (every start field is optional), not a parse error.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body.toString();
    if (text.trim() === '') return done(null, undefined);
    // The default parser answers through `done`; it returns nothing to wait for.
    void parseJson(req, text, done);
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const error = isGatewayError(err) ? err : translate(err, app.config.maxBodyBytes);
    if (error.status >= 500 && error.code === 'internal') request.log.error({ err }, 'request failed');
    countRefusal(app.metrics, error);
    return reply.code(error.status).type('application/json').send(error.toJSON());
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const error =
      !app.config.debugPage && /^\/debug(\/|$)/.test(path)
        ? new GatewayError(
            'not_found',
            'The debug page is off: start the gateway with DEBUG_PAGE=true to serve /debug ' +
              "(it shows every caller's conversations on this pod, so it is off by default).",
          )
        : !app.config.runsPage && /^\/runs(\/|$)/.test(path)
          ? new GatewayError('not_found', 'The runs page is off on this gateway (RUNS_PAGE=false); the runs stay readable at /v1/runs.')
          : notFound(request.method, path);
    countRefusal(app.metrics, error);
    return reply.code(error.status).send(error.toJSON());
  });
}

const notFound = (method: string, path: string): GatewayError =>
  new GatewayError('not_found', `There is no route ${method} ${path}; see /openapi.json.`);

const PARAM_AFTER: Record<string, string> = { agents: 'agent', conversations: 'session_id', memory: 'device_ref' };

const decodes = (segment: string): boolean => {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
};

function badPathParameter(
  segments: string[],
  unreadable: (segment: string) => boolean,
  tooLong: boolean,
  maxParamLength: number,
): GatewayError {
  const at = segments.findIndex(unreadable);
  const field = (at > 0 ? PARAM_AFTER[segments[at - 1]!] : undefined) ?? 'path';
  const rule = tooLong
    ? `${field} is too long: over ${maxParamLength} characters in the path`
    : `${field} must be valid percent-encoded UTF-8`;
  return invalidRequest([{ field, rule }]);
}

/**
 * A path the router cannot read (bad percent-encoding, an over-long segment): a 400 naming the
 * field when the path is one of the routes' with a bad parameter, else the 404 of any unknown route.
 */
export function pathErrorHandler(maxParamLength: number) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const path = request.url.split('?')[0] ?? '';
    const segments = path.split('/');
    const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
    const unreadable = (segment: string): boolean => (tooLong ? segment.length > maxParamLength : !decodes(segment));
    // The router never got to match the path: ask it again with every unreadable segment made plain.
    const readable = segments.map((segment) => (unreadable(segment) ? 'x' : segment)).join('/');
    const error =
      request.server.findRoute({ method: request.method, url: readable }) === null
        ? notFound(request.method, path)
        : badPathParameter(segments, unreadable, tooLong, maxParamLength);
    countRefusal(request.server.metrics, error);
    void reply.code(error.status).type('application/json').send(error.toJSON());
    observeAnswer(request.server.metrics, request, reply);
  };
}
