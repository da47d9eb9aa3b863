// Mode (c) of the bench: the gateway's REST shape, but a new engine socket for every turn —
// what a per-turn client does. Same configuration, validation, authorization (cached), error
// handling and logger as the real gateway; no registry: connect, run the turn, close.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { loggerOptions } from '../src/app.js';
import { type AgentRef, type ConnectSettings, DEVICE_NAMESPACE, settingsFrom } from '../src/domain/vocabulary.js';
import { createEngineAdapter } from '../src/engine/adapter.js';
import { summarize } from '../src/engine/elements.js';
import type { TurnRecord } from '../src/engine/socket.js';
import { loadConfig } from '../src/ops/config.js';
import { createMetrics } from '../src/ops/metrics.js';
import { createAuthorizer } from '../src/platform/authorizer.js';
import { createPlatformClient } from '../src/platform/client.js';
import { installErrorHandling } from '../src/routes/error-handler.js';
import { INTRO } from '../src/schemas/connect.js';
import { agentParams, parse, parseTurn, startBody } from '../src/schemas/requests.js';
import { exitWhenParentGoes } from './child.js';

const config = loadConfig();
const metrics = createMetrics(config);
const engine = createEngineAdapter(config, metrics);
const platform = createPlatformClient(config, metrics);
const authorizer = createAuthorizer(config, platform, metrics);
/** What a per-turn client keeps between its turns: the settings the session was opened with. */
const sessions = new Map<string, { callerId: string; agentKey: string; settings: ConnectSettings; turns: number }>();

const app = Fastify({ logger: loggerOptions(config.logLevel), bodyLimit: config.maxBodyBytes, requestTimeout: 0 });
app.decorate('config', config);
app.decorate('metrics', metrics);
installErrorHandling(app);

async function authorize(authorization: string | undefined, agent: AgentRef) {
  const cached = authorizer.cachedGrant(authorization, agent);
  if (cached !== undefined) return cached;
  const caller = await authorizer.authenticate(authorization);
  return { caller, access: await authorizer.authorize(caller, agent) };
}

async function oneSocketTurn(agentKey: string, signIn: boolean, settings: ConnectSettings, line: string, sessionId?: string) {
  const socket = await engine.connect({ agentKey, settings, signIn, ...(sessionId === undefined ? {} : { sessionId }) });
  try {
    return { sessionId: socket.sessionId, record: await socket.runTurn(line, { budgetMs: config.turnBudgetMs }) };
  } finally {
    socket.close();
  }
}

function view(sessionId: string, agentKey: string, settings: ConnectSettings, turns: number, line: string, record: TurnRecord) {
  const summary = summarize(record.elements);
  return {
    session_id: sessionId,
    agent: `agent:${agentKey}`,
    turn: { line, outcome: record.outcome, elements: record.elements, ...summary, duration_ms: record.durationMs },
    conversation: {
      device_ref: settings.deviceRef,
      locale: settings.locale,
      time_zone: settings.timeZone,
      run_label: settings.runLabel,
      time_offset: settings.timeOffset,
      turns,
      connection: 'closed',
      ended_by_agent: record.endedByAgent,
      reconnected: turns > 1,
      planning_lost: turns > 1,
    },
    notes: record.notes,
  };
}

app.get('/readyz', async () => ({ ready: true }));

app.post('/v1/agents/:agent/conversations', async (request, reply) => {
  const { agent } = parse(agentParams, request.params, 'path');
  const { line = INTRO, ...connect } = parse(startBody, request.body ?? {}, 'body');
  const { caller, access } = await authorize(request.headers.authorization, agent);
  const settings = settingsFrom(connect, () => `${DEVICE_NAMESPACE}${randomUUID()}`);
  const { sessionId, record } = await oneSocketTurn(access.agentKey, access.signIn, settings, line);
  sessions.set(sessionId, { callerId: caller.id, agentKey: access.agentKey, settings, turns: 1 });
  return reply
    .code(201)
    .header('location', `${request.url}/${sessionId}`)
    .send(view(sessionId, access.agentKey, settings, 1, line, record));
});

app.post('/v1/agents/:agent/conversations/:session_id/turns', async (request, reply) => {
  const {
    params: { agent, session_id },
    body: { line, ...connect },
  } = parseTurn(request.params, request.body);
  const { caller, access } = await authorize(request.headers.authorization, agent);
  const known = sessions.get(session_id);
  if (known !== undefined && (known.callerId !== caller.id || known.agentKey !== access.agentKey)) {
    return reply.code(403).send({ error: 'conversation_not_yours', message: 'This conversation belongs to another caller or agent.' });
  }
  const settings = known?.settings ?? settingsFrom(connect, () => `${DEVICE_NAMESPACE}${randomUUID()}`);
  const turns = (known?.turns ?? 0) + 1;
  const { record } = await oneSocketTurn(access.agentKey, access.signIn, settings, line, session_id);
  sessions.set(session_id, { callerId: caller.id, agentKey: access.agentKey, settings, turns });
  return view(session_id, access.agentKey, settings, turns, line, record);
});

exitWhenParentGoes(async () => {
  await app.close();
  await Promise.allSettled([engine.close(), platform.close()]);
});
await app.listen({ port: config.port, host: config.host });
