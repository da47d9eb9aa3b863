/**
 * A long call (a turn, a suite run) answered as JSON, or with `Accept: application/x-ndjson` as
 * one JSON line per event as it happens and then the final body. The caller hanging up aborts
 * the work. Errors before the first line are ordinary JSON errors; after it, a last error line.
 */

import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { NDJSON } from '../http/ndjson.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { countRefusal } from '../ops/http-metrics.js';

const ANSWER_TYPES = ['application/json', NDJSON];

// A stream only when the caller prefers it: q-values count, and any type or no Accept means JSON.
// Only an Accept that names NDJSON can prefer it, so the others need no negotiation.
const NAMES_NDJSON = /x-ndjson/i;
export const wantsStream = (request: FastifyRequest): boolean => {
  const accept = request.headers.accept;
  return accept !== undefined && NAMES_NDJSON.test(accept) && new Negotiator(request.raw).mediaType(ANSWER_TYPES) === NDJSON;
};

/**
 * Aborted (with `reason`) when the caller hangs up: the reply's socket closes before the answer is
 * complete. `stop` stops listening once the answer is written.
 */
export function hangUpOf(reply: FastifyReply, reason?: string): { signal: AbortSignal; stop: () => void } {
  const hangUp = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) hangUp.abort(reason);
  };
  reply.raw.on('close', onClose);
  return { signal: hangUp.signal, stop: () => reply.raw.off('close', onClose) };
}

export interface LongCall {
  /** Aborted when the caller hangs up, with `hangUpNote` as the reason. */
  signal: AbortSignal;
  /** Streams one line; undefined when the caller asked for plain JSON. */
  emit: ((line: Record<string, unknown>) => void) | undefined;
  /** With `emit`: streams one line already encoded (a sibling's, passed on as it came), without its newline. */
  relay: ((encoded: string) => void) | undefined;
}

export interface LongCallOptions<T extends object> {
  status: 200 | 201;
  /** The key of the last line: `{"result": …}`, `{"report": …}`. */
  finalKey: string;
  hangUpNote: string;
  /** Headers known once the first line is out (a stream) or the body is ready (JSON). */
  headersFor?: (firstLineOrBody: object) => Record<string, string>;
  /**
   * Writes the final body, as JSON or as the last line: a serializer compiled from its shape. Without
   * one, the route's own response schema for `status` serializes it.
   */
  serialize?: (body: T) => string;
  run: (call: LongCall) => Promise<T>;
}

export async function answerLongCall<T extends object>(
  request: FastifyRequest,
  reply: FastifyReply,
  o: LongCallOptions<T>,
): Promise<FastifyReply> {
  const hangUp = hangUpOf(reply, o.hangUpNote);

  let stream: PassThrough | undefined;
  let emit: LongCall['emit'];
  let relay: LongCall['relay'];
  // The stream's writers exist only for a caller that asked for a stream.
  if (wantsStream(request)) {
    const write = (encoded: string, line: () => object): void => {
      if (stream === undefined) {
        stream = new PassThrough();
        reply.code(o.status).type(NDJSON).header('cache-control', 'no-store').header('x-accel-buffering', 'no');
        if (o.headersFor !== undefined) reply.headers(o.headersFor(line()));
        void reply.send(stream);
      }
      stream.write(`${encoded}\n`);
    };
    emit = (line) => write(JSON.stringify(line), () => line);
    relay = (encoded) => write(encoded, () => JSON.parse(encoded) as object);
  }

  try {
    const body = await o.run({ signal: hangUp.signal, emit, relay });
    if (stream !== undefined) {
      const serialize =
        o.serialize ?? (reply.getSerializationFunction(String(o.status)) as ((body: T) => string) | undefined) ?? JSON.stringify;
      stream.end(`{${JSON.stringify(o.finalKey)}:${serialize(body)}}\n`);
      return reply;
    }
    if (o.serialize !== undefined) reply.type('application/json; charset=utf-8').serializer(o.serialize);
    reply.code(o.status);
    if (o.headersFor !== undefined) reply.headers(o.headersFor(body));
    return reply.send(body);
  } catch (err) {
    if (stream === undefined) throw err;
    if (!isGatewayError(err)) request.log.error({ err }, 'a streamed call failed');
    const error = isGatewayError(err) ? err : new GatewayError('internal', 'The gateway failed during the call; it has been logged.');
    countRefusal(request.server.metrics, error);
    stream.end(`${JSON.stringify(error.toJSON())}\n`);
    return reply;
  } finally {
    hangUp.stop();
  }
}
