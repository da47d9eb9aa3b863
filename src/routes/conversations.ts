import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TurnRequest, TurnResult } from '../conversations/registry.js';
import type { Element } from '../engine/elements.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { INTRO } from '../schemas/connect.js';
import { agentParams, conversationParams, parse, startBody, turnBody } from '../schemas/requests.js';
import { authenticate, authorizeAgent, authorizeViewer, requireToken } from './access.js';
import { conversationView, turnResultView } from './views.js';

/**
 * The live test conversation routes: route (validate, authorize) → registry (find or open the
 * conversation, run the turn over its socket) → route (shape the result).
 */
export async function conversationRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);

  app.post('/v1/agents/:agent/conversations', async (request, reply) => {
    const { agent } = parse(agentParams, request.params, 'path');
    const { line = INTRO, ...connect } = parse(startBody, request.body === undefined ? {} : request.body, 'body');
    const { caller, access } = await authorizeAgent(app, request, agent);
    return answerTurn(request, reply, 201, line, (turn) => app.conversations.start(caller, access, connect, turn));
  });

  app.post('/v1/agents/:agent/conversations/:session_id/turns', async (request, reply) => {
    const { agent, session_id } = parse(conversationParams, request.params, 'path');
    const { line, ...connect } = parse(turnBody, request.body === undefined ? {} : request.body, 'body');
    const { caller, access } = await authorizeAgent(app, request, agent);
    return answerTurn(request, reply, 200, line, (turn) =>
      app.conversations.turn(caller, access, session_id, connect, turn),
    );
  });

  app.get('/v1/agents/:agent/conversations/:session_id', async (request) => {
    const { agent, session_id } = parse(conversationParams, request.params, 'path');
    const caller = await authorizeViewer(app, request, agent);
    return conversationView(app.conversations.get(caller, agent.key, session_id));
  });

  app.delete('/v1/agents/:agent/conversations/:session_id', async (request, reply) => {
    const { agent, session_id } = parse(conversationParams, request.params, 'path');
    const caller = await authorizeViewer(app, request, agent);
    const conv = app.conversations.closeByCaller(caller, agent.key, session_id);
    // 204 has no body: the note travels in a header, and a later GET shows it too.
    return reply.code(204).header('x-conversation-note', conversationView(conv).notes.join(' ')).send();
  });

  app.get('/v1/conversations', async (request) => {
    const caller = await authenticate(app, request);
    const now = Date.now();
    return { conversations: app.conversations.list(caller.id).map((conv) => conversationView(conv, now)) };
  });
}

const NDJSON = 'application/x-ndjson';
const wantsStream = (request: FastifyRequest): boolean => (request.headers.accept ?? '').includes(NDJSON);
const locationOf = (request: FastifyRequest, sessionId: string): string =>
  `${request.url.split('?')[0]!.replace(/\/+$/, '')}/${sessionId}`;

/**
 * Runs one turn for an HTTP call: a caller that hangs up cancels it (the registry then closes
 * the socket), and `Accept: application/x-ndjson` streams each element as it arrives, then the
 * result. Errors before the first element are ordinary JSON errors.
 */
async function answerTurn(
  request: FastifyRequest,
  reply: FastifyReply,
  status: 200 | 201,
  line: string,
  run: (turn: TurnRequest) => Promise<TurnResult>,
): Promise<FastifyReply> {
  const hangUp = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) hangUp.abort('The turn was cancelled: the caller hung up before it ended.');
  };
  reply.raw.on('close', onClose);

  let stream: PassThrough | undefined;
  const onElement = wantsStream(request)
    ? (element: Element) => {
        if (stream === undefined) {
          stream = new PassThrough();
          reply.code(status).type(NDJSON).header('cache-control', 'no-store').header('x-accel-buffering', 'no');
          if (status === 201 && element.type === 'session' && typeof element.sessionId === 'string') {
            reply.header('location', locationOf(request, element.sessionId.toLowerCase()));
          }
          void reply.send(stream);
        }
        stream.write(`${JSON.stringify({ element })}\n`);
      }
    : undefined;

  try {
    const result = await run({ line, signal: hangUp.signal, ...(onElement ? { onElement } : {}) });
    const body = turnResultView(result, line);
    if (stream !== undefined) {
      stream.end(`${JSON.stringify({ result: body })}\n`);
      return reply;
    }
    if (status === 201) reply.header('location', locationOf(request, body.session_id));
    return reply.code(status).send(body);
  } catch (err) {
    if (stream === undefined) throw err;
    const error = isGatewayError(err) ? err : new GatewayError('internal', 'The gateway failed during the turn.');
    stream.end(`${JSON.stringify(error.toJSON())}\n`);
    return reply;
  } finally {
    reply.raw.off('close', onClose);
  }
}
