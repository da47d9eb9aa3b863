import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp, loggerOptions } from '../../src/app.js';
import { loadConfig } from '../../src/ops/config.js';
import { startEngineSimulator, type EngineSimulator, type EngineSimulatorOptions } from '../../src/simulators/engine.js';
import { startModelSimulator, type ModelSimulator } from '../../src/simulators/model.js';
import { startPlatformSimulator, type PlatformSimulator } from '../../src/simulators/platform.js';
import { demoWorld } from '../../src/simulators/world.js';
import { callAt, type Answer, type CallOptions } from './http.js';
import { scaled, scaledEnv } from './time.js';

export { eventually } from './time.js';
export { childEnv } from './child.js';

/**
 * A real stack on loopback for one test: the engine and platform simulators, and the gateway
 * built from app.ts listening on a port, with short timers so no test waits for real budgets
 * (scaled by TEST_TIME_SCALE, see time.ts: long enough for the legitimate work of a busy machine).
 */
export interface Stack {
  app: FastifyInstance;
  engine: EngineSimulator;
  platform: PlatformSimulator;
  /** The model simulator, when the stack was started with `model: true` (MODEL_BASE_URL points at it). */
  model: ModelSimulator | undefined;
  url: string;
  /** Every log line the gateway wrote, as text. */
  logs: string[];
  call(method: string, path: string, opts?: CallOptions): Promise<Answer>;
  /** Opens a conversation and returns its session id (asserting the 201). */
  open(agent?: string, body?: Record<string, unknown>, token?: string): Promise<Answer & { sessionId: string }>;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The stack's turn budget unless a test sets TURN_BUDGET_MS: 1.5 s on an idle machine, scaled. */
export const STACK_TURN_BUDGET_MS = scaled(1500);

/**
 * The limits for a workload that provokes every refusal: one conversation a caller, two a pod, a
 * 1 KiB body, and a 1 s turn budget (scaled) so its two hanging turns run while the refusals are asked.
 */
export const REFUSAL_WORKLOAD_ENV: Record<string, string> = {
  TURN_BUDGET_MS: String(scaled(1000)),
  MAX_CONVERSATIONS_PER_CALLER: '1',
  MAX_CONVERSATIONS_PER_POD: '2',
  MAX_BODY_BYTES: '1024',
};

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function startStack(
  t: Teardown,
  opts: { env?: Record<string, string>; engine?: EngineSimulatorOptions; model?: boolean } = {},
): Promise<Stack> {
  const world = demoWorld();
  const engine = await startEngineSimulator({ world, sessionEndDelayMs: 50, ...opts.engine });
  const platform = await startPlatformSimulator({ world });
  const model = opts.model ? await startModelSimulator() : undefined;
  const modelEnv = model
    ? {
        MODEL_BASE_URL: model.url,
        MODEL_API_KEY: 'sk-test-secret-key',
        SIMULATOR_MODEL: 'sim-user',
        JUDGE_MODEL: 'sim-judge',
        MODEL_TIMEOUT_MS: scaledEnv(10_000),
      }
    : {};
  const config = loadConfig({
    PROMETHIST_MCP_ENGINE_URL: engine.url,
    PROMETHIST_PLATFORM_URL: platform.url,
    PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: 'tester:s3cret',
    TURN_BUDGET_MS: String(STACK_TURN_BUDGET_MS),
    ENGINE_CONNECT_TIMEOUT_MS: scaledEnv(1000),
    PLATFORM_TIMEOUT_MS: scaledEnv(1000),
    AUTH_CACHE_TTL_MS: '60000',
    LOG_LEVEL: 'debug',
    ...modelEnv,
    ...opts.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const app = await buildApp(config, { logger: { ...(loggerOptions('debug') as object), stream: sink } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  t.teardown(async () => {
    await app.close();
    await engine.close();
    await platform.close();
    await model?.close();
  });

  const call = (method: string, path: string, o: CallOptions = {}): Promise<Answer> => callAt(url, method, path, o);

  async function open(agent = 'coach', body: Record<string, unknown> = {}, token = 'demo-token') {
    const answer = await call('POST', `/v1/agents/${agent}/conversations`, { token, body });
    if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status}: ${answer.text}`);
    return { ...answer, sessionId: answer.body.session_id as string };
  }

  return { app, engine, platform, model, url, logs, call, open };
}
