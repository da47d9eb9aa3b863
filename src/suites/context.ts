import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ConversationRegistry } from '../conversations/registry.js';
import type { EngineAdapter } from '../engine/adapter.js';
import type { ModelClient } from '../model/client.js';
import type { Config } from '../ops/config.js';
import type { AgentAccess, Caller } from '../domain/vocabulary.js';
import type { TurnEvent } from './report.js';

/** What a run needs: the registry and engine it runs on, who runs it against which revision, and where progress goes. */
export interface RunContext {
  registry: ConversationRegistry;
  engine: EngineAdapter;
  config: Config;
  /** The model simulated users and judges call; undefined when none is configured. */
  model: ModelClient | undefined;
  caller: Caller;
  access: AgentAccess;
  /** Aborted when the caller hangs up: running turns are cancelled, the rest skipped. */
  signal: AbortSignal;
  /** Each turn as soon as it has been evaluated (the streamed form of the route). */
  onTurn?: (event: TurnEvent) => void;
  log?: FastifyBaseLogger;
}

/** What a front (the runs route, the run_suite tool) knows of a run. */
export interface RunFront {
  caller: Caller;
  access: AgentAccess;
  signal: AbortSignal;
  log: FastifyBaseLogger;
  onTurn: ((event: TurnEvent) => void) | undefined;
}

/** The run context, built the same way for every front. */
export function runContext(app: FastifyInstance, front: RunFront): RunContext {
  return {
    registry: app.conversations,
    engine: app.engine,
    config: app.config,
    model: app.model,
    caller: front.caller,
    access: front.access,
    signal: front.signal,
    log: front.log,
    ...(front.onTurn ? { onTurn: front.onTurn } : {}),
  };
}
