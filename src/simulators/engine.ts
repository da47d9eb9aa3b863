// The engine simulator: the pipeline socket and memory endpoints of docs/engine-contract.md over a
// World. It is hostile where the real engine is (the query is decoded twice, a Draft never runs
// anonymously, speech goes on after response-end) and records everything it is sent, so tests
// can prove what the gateway put on the wire — and what it never did.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { frameText } from '../http/ws-frames.js';
import { agentReply } from './agent.js';
import { seededDraws } from './chance.js';
import { aggregated, memoryApi, type Json } from './engine-memory.js';
import { decodeEngineQuery, type EngineConnection, type EngineFaults, type MemoryRequest } from './engine-record.js';
import { demoWorld, isClosedProject, type Agent, type EngineIdentity, type World } from './world.js';

export interface EngineSimulator {
  url: string;
  world: World;
  /** every upgrade attempt (refused ones too, with their `status`), memory request and end of conversation */
  record: {
    connections: EngineConnection[];
    memoryRequests: MemoryRequest[];
    endOfConversation: Array<{ sessionId: string; at: number }>;
  };
  /** deviceId → engine user id, as the engine assigned them */
  devices: Map<string, string>;
  /** engine user id → memory units */
  memory: Map<string, Json[]>;
  openSockets(): number;
  /** ends open sockets from the engine's side without a close frame (the client sees 1006): every
   * one, or those `match` picks; answers how many */
  dropSockets(match?: (conn: EngineConnection) => boolean): number;
  /** `true`: stops listening, so a new connect is refused (ECONNREFUSED) while open sockets stay;
   * `false`: listens again on the same port */
  refuseConnections(refuse: boolean): Promise<void>;
  faults: EngineFaults;
  /** clears the record (not sessions, devices, memory or faults) */
  reset(): void;
  close(): Promise<void>;
}

export interface EngineSimulatorOptions {
  world?: World;
  host?: string;
  port?: number;
  /** how long after its last socket closes a session's end-of-conversation work runs (default 30000) */
  sessionEndDelayMs?: number;
  /** pause between the element frames of a reply (default 0) */
  replyDelayMs?: number;
  /** paced speech, for the demo: the default agent speaks in a few sentences (text elements),
   * this far apart, so that a stream visibly arrives element by element (default 0: off, one
   * sentence at once, as the tests expect) */
  speechPaceMs?: number;
  /** the seed of `sim:chance` draws: the k-th session of an agent key draws the same number for the same seed (default 1) */
  chanceSeed?: number;
  /** answer 401 to HTTP Basic credentials the engine does not know, as engines from 2026.42.1 do
   * (default true); older engines ignore them and treat the session as anonymous */
  rejectUnknownIdentityWith401?: boolean;
  /** a longer line is refused with close 1009 (default: no limit) */
  maxLineLength?: number;
  logger?: boolean;
}

interface Session {
  id: string;
  /** 1 for the engine's first session, 2 for the next… (sim:flaky alternates on it) */
  ordinal: number;
  userId?: string;
  /** the agent key and revision that opened it: what its aggregation keeps depends on them */
  agentKey: string;
  revision?: number;
  /** every line of the session, across its sockets */
  lines: string[];
  /** what the agent repeated of other users' facts in it (kept in this user's memory too) */
  told: string[];
  sockets: Set<WebSocket>;
  endTimer?: NodeJS.Timeout;
  ended: boolean;
}

/** What the handshake resolved, handed from the preValidation hook to the socket handler. */
interface Admitted {
  conn: EngineConnection;
  agent: Agent;
  identity?: EngineIdentity;
}

export async function startEngineSimulator(opts: EngineSimulatorOptions = {}): Promise<EngineSimulator> {
  const world = opts.world ?? demoWorld();
  const sessionEndDelayMs = opts.sessionEndDelayMs ?? 30_000;
  const replyDelayMs = opts.replyDelayMs ?? 0;
  const speechPaceMs = opts.speechPaceMs ?? 0;
  const rejectUnknownIdentity = opts.rejectUnknownIdentityWith401 ?? true;
  const chance = seededDraws(opts.chanceSeed ?? 1);

  const record: EngineSimulator['record'] = { connections: [], memoryRequests: [], endOfConversation: [] };
  const sessions = new Map<string, Session>();
  const devices = new Map<string, string>();
  const memory = new Map<string, Json[]>();
  /** every fact an aggregation kept, in order, with its user: what a leaky agent repeats of other users */
  const factLog: Array<{ userId: string; text: string }> = [];
  /** the open server-side sockets and their records */
  const open = new Map<WebSocket, EngineConnection>();
  const tcpSockets = new Set<Socket>();
  const admitted = new WeakMap<IncomingMessage, Admitted>();
  let connectionSeq = 0;
  let closing = false;
  const host = opts.host ?? '127.0.0.1';
  let boundPort = 0;
  let refusing = false;

  // Long device ids and agent keys, as the gateway allows them, are not the router's 414.
  const app = Fastify({ logger: opts.logger ?? false, routerOptions: { maxParamLength: 4096 } });
  await app.register(websocket);

  const sim: EngineSimulator = {
    url: '',
    world,
    record,
    devices,
    memory,
    faults: {},
    openSockets: () => open.size,
    dropSockets(match) {
      let dropped = 0;
      for (const [ws, conn] of open) {
        if (match && !match(conn)) continue;
        conn.closedBy ??= 'engine';
        ws.terminate();
        dropped += 1;
      }
      return dropped;
    },
    async refuseConnections(refuse) {
      if (refuse === refusing) return;
      refusing = refuse;
      // Closing the listener does not touch the sockets already open.
      if (refuse) app.server.close();
      else await new Promise<void>((resolve) => app.server.listen({ host, port: boundPort }, resolve));
    },
    reset() {
      record.connections.length = 0;
      record.memoryRequests.length = 0;
      record.endOfConversation.length = 0;
    },
    async close() {
      closing = true;
      for (const s of sessions.values()) clearTimeout(s.endTimer);
      for (const [ws, conn] of open) {
        conn.closedBy ??= 'engine';
        ws.terminate();
      }
      // Hung handshakes are plain HTTP requests that would keep app.close() waiting.
      for (const s of tcpSockets) s.destroy();
      await sim.refuseConnections(false);
      await app.close();
    },
  };

  app.server.on('connection', (s: Socket) => {
    tcpSockets.add(s);
    s.on('close', () => tcpSockets.delete(s));
  });

  /** The known identity, 'unknown' for Basic credentials the engine does not have, undefined when anonymous. */
  function basicIdentity(header: string | undefined): EngineIdentity | 'unknown' | undefined {
    if (!header || !/^Basic\b/i.test(header)) return undefined;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const [username, password] = colon < 0 ? [decoded, undefined] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
    return world.engineIdentities.find((i) => i.username === username && i.password === password) ?? 'unknown';
  }

  /** The revision the key runs, if any: the Published one for a plain ref; never Archived; Draft only signed in. */
  function runnable(agentKey: string, identity: EngineIdentity | undefined): { agent: Agent; revision: number } | undefined {
    const m = /^(.+)\.(\d+)$/.exec(agentKey);
    const agent = world.agents[m?.[1] ?? agentKey];
    if (!agent) return undefined;
    const revision = m
      ? agent.revisions.find((r) => r.revision === Number(m[2]))
      : [...agent.revisions].reverse().find((r) => r.state === 'Published');
    if (!revision || revision.state === 'Archived' || (revision.state === 'Draft' && !identity)) return undefined;
    return { agent, revision: revision.revision };
  }

  // Refusals happen before the upgrade so that the client sees the HTTP status, as with the real engine.
  async function handshake(req: FastifyRequest<{ Params: { target: string } }>, reply: FastifyReply) {
    if (!req.ws) return; // a plain GET: the websocket route answers 404
    const url = req.raw.url ?? '';
    const q = url.indexOf('?');
    const rawQuery = q < 0 ? '' : url.slice(q + 1);
    const { params, query } = decodeEngineQuery(rawQuery);
    const testMode = query.testMode === 'true';
    const conn: EngineConnection = {
      id: ++connectionSeq,
      path: q < 0 ? url : url.slice(0, q),
      agentKey: req.params.target.replace(/^agent:/, ''),
      rawQuery,
      params,
      query,
      settings: {
        testMode,
        locale: query.locale,
        deviceId: query.deviceId,
        timeZone: query.timeZone,
        runLabel: query.runLabel,
        timeOffset: testMode ? query.timeOffset : undefined,
      },
      authorization: req.headers.authorization,
      frames: [],
      openedAt: Date.now(),
    };
    record.connections.push(conn);
    const refuse = (status: number, message: string) => {
      conn.status = status;
      conn.closedAt = Date.now();
      return reply.code(status).send({ error: 'handshake_refused', message });
    };

    const fault = sim.faults.handshake;
    if (fault === 'hang') return new Promise<never>(() => {}); // close() destroys the socket
    if (fault !== undefined) return refuse(fault, 'Simulated handshake fault.');
    if (!req.params.target.startsWith('agent:')) return refuse(404, 'Not an agent pipeline.');
    const found = basicIdentity(req.headers.authorization);
    if (found === 'unknown' && rejectUnknownIdentity) return refuse(401, 'Unknown credentials.');
    const identity = found === 'unknown' ? undefined : found;
    const run = runnable(conn.agentKey, identity);
    if (!run) return refuse(404, `No runnable revision for agent:${conn.agentKey}.`);
    conn.revision = run.revision;
    admitted.set(req.raw, { conn, identity, agent: run.agent });
  }

  function deviceUser(deviceId: string): string {
    let userId = devices.get(deviceId);
    if (!userId) devices.set(deviceId, (userId = `u-${randomUUID()}`));
    return userId;
  }

  /** End-of-conversation work, once per session: record it and aggregate the session into memory. */
  function endConversation(session: Session) {
    if (session.ended) return;
    session.ended = true;
    clearTimeout(session.endTimer);
    record.endOfConversation.push({ sessionId: session.id, at: Date.now() });
    if (!session.userId) return; // no deviceId: nobody to remember it for
    if (session.lines.length === 0) return; // nothing was said (a warm-up): nothing to aggregate
    const context = { revision: session.revision, draw: (stream: string) => chance(session, session.agentKey, stream) };
    const units = aggregated(memory.get(session.userId) ?? [], session.id, session.lines, context, session.told);
    memory.set(session.userId, units);
    for (const unit of units)
      if (unit.kind === 'fact' && unit.sessionId === session.id) factLog.push({ userId: session.userId, text: String(unit.text) });
  }

  /** The client went away: the engine keeps the session and ends it later unless a socket of it opens again. */
  function socketClosed(session: Session, ws: WebSocket) {
    session.sockets.delete(ws);
    if (closing || session.ended || session.sockets.size > 0) return;
    clearTimeout(session.endTimer);
    session.endTimer = setTimeout(() => {
      if (session.sockets.size === 0) endConversation(session);
    }, sessionEndDelayMs);
  }

  /** The session a connect names (undefined when the engine does not know it), or a new one. */
  function sessionFor(sessionId: string | undefined, userId: string | undefined, conn: EngineConnection): Session | undefined {
    if (sessionId !== undefined) return sessions.get(sessionId);
    const session: Session = {
      id: randomUUID(),
      ordinal: sessions.size + 1,
      userId,
      agentKey: conn.agentKey,
      revision: conn.revision,
      lines: [],
      told: [],
      sockets: new Set(),
      ended: false,
    };
    sessions.set(session.id, session);
    return session;
  }

  function onSocket(ws: WebSocket, req: FastifyRequest) {
    const { conn, agent, identity } = admitted.get(req.raw)!;
    conn.status = 101;
    open.set(ws, conn);
    const { deviceId, sessionId } = conn.query;
    const userId = deviceId === undefined ? undefined : deviceUser(deviceId);
    const silent = sim.faults.silentAfterConnect ?? false;
    const session = silent ? undefined : sessionFor(sessionId, userId, conn);
    const project = world.projects[agent.projectId];
    const admittedHere = !project || !isClosedProject(project) || (identity?.enabledProjects.includes(project.id) ?? false);

    const closeBy = (code: number, reason: string) => {
      conn.closedBy ??= 'engine';
      ws.close(code, reason);
    };
    const send = (e: Json | string) => {
      if (ws.readyState === ws.OPEN) ws.send(typeof e === 'string' ? e : JSON.stringify(e));
    };

    async function turn(s: Session, line: string, socketLines: number) {
      if (!admittedHere) {
        send({ type: 'error', code: 'FORBIDDEN', message: `Not admitted to project ${agent.projectId}.` });
        return closeBy(1008, 'forbidden');
      }
      const facts = (s.userId === undefined ? [] : (memory.get(s.userId) ?? [])).flatMap((u) =>
        u.kind === 'fact' ? [String(u.text)] : [],
      );
      const reply = agentReply(line, agent.ref, socketLines, s.lines.length, speechPaceMs > 0, {
        session: s.ordinal,
        facts,
        revision: conn.revision,
        draw: (stream) => chance(s, conn.agentKey, stream),
        others: factLog.flatMap((f) => (f.userId === s.userId ? [] : [f.text])),
      });
      s.lines.push(line);
      s.told.push(...(reply.told ?? []));
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      for (const [i, element] of reply.elements.entries()) {
        // Paced speech pauses before each sentence but the first, as a speaking agent would.
        const pause = i === 0 ? 0 : replyDelayMs + (typeof element === 'object' && element.type === 'text' ? speechPaceMs : 0);
        if (pause > 0) await new Promise((r) => setTimeout(r, pause));
        send(element);
      }
      switch (reply.then) {
        case undefined:
        case 'hang':
          return;
        case 'exit':
          endConversation(s);
          return closeBy(1000, 'session ended');
        case 'drop':
          conn.closedBy ??= 'engine';
          return ws.terminate(); // no close frame: the client sees 1006
        default:
          return closeBy(reply.then, reply.then === 1000 ? 'conversation ended' : 'internal error');
      }
    }

    let turns = Promise.resolve();
    ws.on('message', (data) => {
      const line = frameText(data);
      const socketLines = conn.frames.length;
      conn.frames.push(line);
      // Silent, or an unknown session already refused: the line is recorded, never answered.
      if (!session) return;
      if (opts.maxLineLength !== undefined && line.length > opts.maxLineLength) return closeBy(1009, 'line too long');
      // One turn at a time, in arrival order, as the engine reads its socket.
      turns = turns.then(() => turn(session, line, socketLines));
    });
    ws.on('close', (code, reason) => {
      open.delete(ws);
      conn.closeCode = code;
      conn.closeReason = reason.toString();
      conn.closedBy ??= 'client';
      conn.closedAt = Date.now();
      if (session) socketClosed(session, ws);
    });

    if (silent) return;
    if (!session) {
      send({ type: 'error', code: 'NOT_FOUND', message: `No session ${sessionId}.` });
      return closeBy(1008, 'unknown session');
    }
    session.sockets.add(ws);
    conn.sessionId = session.id;
    conn.resumed = sessionId !== undefined;
    send({ type: 'session', sessionId: session.id, resumed: conn.resumed });
  }

  app.get<{ Params: { target: string } }>('/socket/pipeline/:target', { websocket: true, preValidation: handshake }, onSocket);

  await app.register(memoryApi({ record, devices, memory, faults: () => sim.faults }));

  await app.listen({ host, port: opts.port ?? 0 });
  const addr = app.server.address();
  boundPort = typeof addr === 'object' && addr ? addr.port : (opts.port ?? 0);
  sim.url = `http://${host}:${boundPort}`;
  return sim;
}
