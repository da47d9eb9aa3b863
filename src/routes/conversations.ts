import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Conversation, ConversationList, responseSchema, TurnResult } from '../api/responses.js';
import { callContext, type CallContext, type TurnCall } from '../conversations/calls.js';
import type { TurnResultView } from '../conversations/views.js';
import type { AgentRef, Caller } from '../domain/vocabulary.js';
import type { Element } from '../engine/elements.js';
import { GatewayError } from '../errors.js';
import { INTRO } from '../schemas/connect.js';
import { agentParams, conversationParams, parse, parseTurn, startBody } from '../schemas/requests.js';
import { authenticate, authorizeAgent, authorizeViewer, requireToken } from './access.js';
import { answerLongCall } from './streaming.js';

/**
 * The live test conversation routes: route (validate, authorize) → conversation service (run the
 * call here or on the pod holding the conversation; the registry finds or opens it and runs the
 * turn over its socket; the service shapes the result) → route (answer as JSON or NDJSON).
 */
export async function conversationRoutes(app: FastifyInstance): Promise<void> {
  requireToken(app);
  // Fastify serializes each answer with a serializer compiled from its shape (a stream is sent as it is).
  const turnResult = responseSchema(TurnResult);

  app.post('/v1/agents/:agent/conversations', { schema: { response: { 201: turnResult } } }, async (request, reply) => {
    const { agent } = parse(agentParams, request.params, 'path');
    const { line = INTRO, ...connect } = parse(startBody, request.body === undefined ? {} : request.body, 'body');
    const { caller, access } = await authorizeAgent(app, request, agent);
    return answerTurn(request, reply, 201, line, (turn) =>
      app.conversationService.start({ ...callOf(request, caller, agent), access, connect, ...turn }),
    );
  });

  app.post('/v1/agents/:agent/conversations/:session_id/turns', { schema: { response: { 200: turnResult } } }, async (request, reply) => {
    const {
      params: { agent, session_id },
      body: { line, ...connect },
    } = parseTurn(request.params, request.body);
    const { caller, access } = await authorizeAgent(app, request, agent);
    return answerTurn(request, reply, 200, line, (turn) =>
      app.conversationService.turn({ ...callOf(request, caller, agent, session_id), access, connect, ...turn }),
    );
  });

  app.get(
    '/v1/agents/:agent/conversations/:session_id',
    { schema: { response: { 200: responseSchema(Conversation) } } },
    async (request) => {
      const { agent, session_id } = parse(conversationParams, request.params, 'path');
      const caller = await authorizeViewer(app, request, agent);
      return app.conversationService.get(callOf(request, caller, agent, session_id));
    },
  );

  app.delete('/v1/agents/:agent/conversations/:session_id', { onRequest: refuseBody }, async (request, reply) => {
    const { agent, session_id } = parse(conversationParams, request.params, 'path');
    const caller = await authorizeViewer(app, request, agent);
    const note = await app.conversationService.close(callOf(request, caller, agent, session_id));
    // 204 has no body: the note travels in a header, and a later GET shows it too.
    return reply.code(204).header('x-conversation-note', note).send();
  });

  app.get('/v1/conversations', { schema: { response: { 200: responseSchema(ConversationList) } } }, async (request) => {
    const caller = await authenticate(app, request);
    return { conversations: await app.conversationService.list(caller) };
  });

  /** A call as the service takes it; a sibling's forwarded call runs here and is never forwarded again. */
  const callOf = (request: FastifyRequest, caller: Caller, agent: AgentRef, sessionId = ''): CallContext =>
    callContext(caller, agent, sessionId, app.peers?.isForwarded(request.headers) === true);
}

/** DELETE takes no body: one is refused before it is read, whatever its size or media type. */
async function refuseBody(request: FastifyRequest): Promise<void> {
  const { 'content-length': length, 'transfer-encoding': chunked } = request.headers;
  if (chunked === undefined && (length === undefined || length === '0')) return;
  const rule = 'DELETE takes no body';
  throw new GatewayError('invalid_request', `${rule}: send the request without one; nothing was closed`, {
    problems: [{ field: 'body', rule }],
  });
}

const locationOf = (request: FastifyRequest, sessionId: string): string => `${request.url.split('?')[0]!.replace(/\/+$/, '')}/${sessionId}`;

/** The session id a start's first stream line or its JSON body names, for its Location. */
function startedSession(lineOrBody: object): string | undefined {
  const { element, session_id } = lineOrBody as { element?: Element; session_id?: unknown };
  if (element === undefined) return typeof session_id === 'string' ? session_id : undefined;
  return element.type === 'session' && typeof element.sessionId === 'string' ? element.sessionId.toLowerCase() : undefined;
}

/**
 * Runs one turn for an HTTP call: a caller that hangs up cancels it (the registry then closes
 * the socket), and `Accept: application/x-ndjson` streams each element as it arrives, then the
 * result.
 */
function answerTurn(
  request: FastifyRequest,
  reply: FastifyReply,
  status: 200 | 201,
  line: string,
  run: (turn: Pick<TurnCall, 'line' | 'signal' | 'onElement' | 'relayElementLine'>) => Promise<TurnResultView>,
): Promise<FastifyReply> {
  return answerLongCall(request, reply, {
    status,
    finalKey: 'result',
    hangUpNote: 'The turn was cancelled: the caller hung up before it ended.',
    // A start's Location names its session; a turn's answer has no header of its own.
    ...(status === 201
      ? {
          headersFor: (lineOrBody: object): Record<string, string> => {
            const sessionId = startedSession(lineOrBody);
            return sessionId === undefined ? {} : { location: locationOf(request, sessionId) };
          },
        }
      : {}),
    run: ({ signal, emit, relay }) =>
      run({ line, signal, onElement: emit && ((element: Element) => emit({ element })), relayElementLine: relay }),
  });
}
