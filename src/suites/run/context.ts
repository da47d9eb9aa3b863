import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ConversationService } from '../../conversations/service.js';
import type { AgentAccess, AgentRef, Caller } from '../../domain/vocabulary.js';
import type { EngineAdapter } from '../../engine/adapter.js';
import type { ModelClient } from '../../model/client.js';
import type { Config } from '../../ops/config.js';
import type { TurnEvent } from '../report/run-report.js';
import type { RunRoom } from './room.js';

/**
 * What a run needs: the conversation service its turns go through (like every front's), the
 * engine adapter for memory fixtures, who runs it against which revision, and where progress goes.
 */
export interface RunContext {
  conversationService: ConversationService;
  engine: EngineAdapter;
  config: Config;
  /** The model simulated users and judges call; undefined when none is configured. */
  model: ModelClient | undefined;
  caller: Caller;
  agent: AgentRef;
  access: AgentAccess;
  /** Aborted when the caller hangs up: running turns are cancelled, the rest skipped. */
  signal: AbortSignal;
  /**
   * The run's place among the pod's conversations (a comparison's two sides share one); it refuses
   * an engine session once this pod no longer knows that it holds the run (RunRoom.opening).
   */
  room: RunRoom;
  /** Each turn as soon as it has been evaluated (the streamed form of the route). */
  onTurn?: (event: TurnEvent) => void;
  log?: FastifyBaseLogger;
}

/** What a front (the runs and comparisons routes, the MCP tools) knows of a run. */
export interface RunFront {
  caller: Caller;
  agent: AgentRef;
  access: AgentAccess;
  signal: AbortSignal;
  room: RunRoom;
  log: FastifyBaseLogger;
  onTurn: ((event: TurnEvent) => void) | undefined;
}

/** The run context, built the same way for every front. */
export function runContext(app: FastifyInstance, front: RunFront): RunContext {
  return {
    conversationService: app.conversationService,
    engine: app.engine,
    config: app.config,
    model: app.model,
    caller: front.caller,
    agent: front.agent,
    access: front.access,
    signal: front.signal,
    room: front.room,
    log: front.log,
    ...(front.onTurn ? { onTurn: front.onTurn } : {}),
  };
}
