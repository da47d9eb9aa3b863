import { z } from 'zod';
import { parseEngineIdentity, type EngineIdentity } from '../engine/identity.js';
import { peerConfig, peerEnvFields, type PeerConfig } from './peer-config.js';

const httpUrl = (name: string) =>
  z
    .string({ error: `${name} is required: the base URL, e.g. https://host` })
    .trim()
    .refine((value) => /^https?:\/\/[^/\s]+/i.test(value) && URL.canParse(value), {
      error: `${name} must be an absolute http:// or https:// URL`,
    })
    .transform((value) => value.replace(/\/+$/, ''));

const integer = (name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return fallback;
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a whole number from ${min} to ${max}` });
        return z.NEVER;
      }
      return parsed;
    });

/** A whole number, or undefined when unset (the caller derives the default). */
const optionalInteger = (name: string, min: number) =>
  integer(name, Number.NaN, min).transform((value) => (Number.isNaN(value) ? undefined : value));

/** A comma-separated list of absolute URLs; empty or unset: undefined (the caller picks the default). */
const urlList = (name: string) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      const urls = (value ?? '')
        .split(',')
        .map((url) => url.trim())
        .filter((url) => url !== '');
      if (urls.length === 0) return undefined;
      const bad = urls.find((url) => !/^https?:\/\/[^/\s]+/i.test(url) || !URL.canParse(url));
      if (bad !== undefined) {
        ctx.addIssue({ code: 'custom', message: `${name} must list absolute http:// or https:// URLs, separated by commas` });
        return z.NEVER;
      }
      return urls.map((url) => url.replace(/\/+$/, ''));
    });

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const envSchema = z.object({
  PROMETHIST_MCP_ENGINE_URL: httpUrl('PROMETHIST_MCP_ENGINE_URL'),
  PROMETHIST_PLATFORM_URL: httpUrl('PROMETHIST_PLATFORM_URL'),
  PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: z.string().optional(),
  PORT: integer('PORT', 8080, 0, 65535),
  HOST: z.string().trim().min(1, 'HOST must not be empty').default('0.0.0.0'),
  LOG_LEVEL: z.enum(logLevels, { error: `LOG_LEVEL must be one of ${logLevels.join(', ')}` }).default('info'),
  TURN_BUDGET_MS: integer('TURN_BUDGET_MS', 90_000, 1),
  IDLE_CLOSE_MS: integer('IDLE_CLOSE_MS', 240_000, 1),
  MAX_CONVERSATIONS_PER_CALLER: integer('MAX_CONVERSATIONS_PER_CALLER', 5, 1),
  MAX_CONVERSATIONS_PER_POD: integer('MAX_CONVERSATIONS_PER_POD', 200, 1),
  MAX_RUN_CONVERSATIONS_PER_POD: optionalInteger('MAX_RUN_CONVERSATIONS_PER_POD', 1),
  MAX_RUN_CONVERSATIONS_PER_CALLER: integer('MAX_RUN_CONVERSATIONS_PER_CALLER', 50, 1),
  SHUTDOWN_GRACE_MS: integer('SHUTDOWN_GRACE_MS', 95_000, 0),
  AUTH_CACHE_TTL_MS: integer('AUTH_CACHE_TTL_MS', 5_000, 0),
  PLATFORM_TIMEOUT_MS: integer('PLATFORM_TIMEOUT_MS', 5_000, 1),
  ENGINE_CONNECT_TIMEOUT_MS: integer('ENGINE_CONNECT_TIMEOUT_MS', 10_000, 1),
  ENGINE_MAX_FRAME_BYTES: integer('ENGINE_MAX_FRAME_BYTES', 1_048_576, 1_024),
  REMEMBERED_CONVERSATIONS_MAX: integer('REMEMBERED_CONVERSATIONS_MAX', 10_000, 1),
  MAX_MONITOR_SERIES: integer('MAX_MONITOR_SERIES', 2000, 1),
  MEMORY_POLL_MS: integer('MEMORY_POLL_MS', 3_000, 1, 60_000),
  REMEMBERED_CONVERSATIONS_TTL_MS: integer('REMEMBERED_CONVERSATIONS_TTL_MS', 86_400_000, 1),
  MAX_BODY_BYTES: integer('MAX_BODY_BYTES', 4_194_304, 1_024),
  RUN_FOLLOW_GRACE_MS: integer('RUN_FOLLOW_GRACE_MS', 60_000, 0),
  RUNS_KEPT_MAX: integer('RUNS_KEPT_MAX', 1_000, 1),
  RUNS_KEPT_MS: integer('RUNS_KEPT_MS', 86_400_000, 1_000),
  RUN_TAKEOVER_MS: integer('RUN_TAKEOVER_MS', 5_000, 100),
  MCP_RUN_WAIT_MS: integer('MCP_RUN_WAIT_MS', 45_000, 0),
  MCP_TASK_POLL_MS: integer('MCP_TASK_POLL_MS', 2_000, 10),
  DEBUG_PAGE: z
    .enum(['true', 'false', '1', '0', ''], { error: 'DEBUG_PAGE must be true or false' })
    .optional()
    .transform((value) => value === 'true' || value === '1'),
  RUNS_PAGE: z
    .enum(['true', 'false', '1', '0', ''], { error: 'RUNS_PAGE must be true or false' })
    .optional()
    .transform((value) => value !== 'false' && value !== '0'),
  // The source revision the image was built from (a build argument); only shown in build_info.
  GIT_REVISION: z.string().trim().optional(),
  MCP_AUTHORIZATION_SERVERS: urlList('MCP_AUTHORIZATION_SERVERS'),
  MCP_SESSION_IDLE_MS: integer('MCP_SESSION_IDLE_MS', 1_800_000, 1_000),
  ...peerEnvFields,
  PEER_TIMEOUT_MS: integer('PEER_TIMEOUT_MS', 300, 1, 60_000),
  MODEL_BASE_URL: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return undefined;
      const url = httpUrl('MODEL_BASE_URL').safeParse(value);
      if (url.success) return url.data;
      ctx.addIssue({ code: 'custom', message: url.error.issues[0]!.message });
      return z.NEVER;
    }),
  MODEL_API_KEY: z.string().optional(),
  SIMULATOR_MODEL: z.string().trim().optional(),
  JUDGE_MODEL: z.string().trim().optional(),
  MODEL_TIMEOUT_MS: integer('MODEL_TIMEOUT_MS', 60_000, 1, 600_000),
});

/** Every environment variable the service reads (the chart's tests check each one is settable). */
export const ENV_VARIABLES = Object.keys(envSchema.shape);

export interface Config {
  engineUrl: string;
  platformUrl: string;
  engineIdentity: EngineIdentity;
  port: number;
  host: string;
  logLevel: (typeof logLevels)[number];
  turnBudgetMs: number;
  idleCloseMs: number;
  maxConversationsPerCaller: number;
  maxConversationsPerPod: number;
  /** The conversations of all suite runs on the pod together, below maxConversationsPerPod. */
  maxRunConversationsPerPod: number;
  /** The conversations of one caller's suite runs on the pod together. */
  maxRunConversationsPerCaller: number;
  shutdownGraceMs: number;
  authCacheTtlMs: number;
  platformTimeoutMs: number;
  engineConnectTimeoutMs: number;
  engineMaxFrameBytes: number;
  rememberedConversationsMax: number;
  /** Label sets of the monitors' attempt counters this pod records at most. */
  maxMonitorSeries: number;
  /** How far apart a suite's memory checks read the simulated user's memory while waiting for aggregation. */
  memoryPollMs: number;
  rememberedConversationsTtlMs: number;
  maxBodyBytes: number;
  /** Runs: the follower grace, how many ended runs are kept and how long, and how soon a sibling takes over a silent holder's run. */
  runs: { followGraceMs: number; keptMax: number; keptMs: number; takeoverMs: number };
  /** How long an MCP run_suite or compare_revisions call without a task waits for the report before it answers the run's id. */
  mcpRunWaitMs: number;
  /** How often an MCP client is told to poll a run's task (`pollInterval`). */
  mcpTaskPollMs: number;
  debugPage: boolean;
  /** The runs page (`/runs`) is served: the CLI and MCP answers give a run's page URL. */
  runsPage: boolean;
  revision: string;
  /** The OAuth authorization servers MCP clients are pointed to (default: the platform). */
  mcpAuthorizationServers: string[];
  /** An MCP session without a request for this long is closed. */
  mcpSessionIdleMs: number;
  /** The other pods of the release; undefined: a single pod. */
  peers: PeerConfig | undefined;
  /** The model simulated users and judges call; undefined: none configured (suites needing one are refused). */
  model: ModelConfig | undefined;
}

export interface ModelConfig {
  /** An OpenAI-compatible API base, e.g. https://api.openai.com/v1 */
  baseUrl: string;
  /** A secret: never logged (redacted by path), never in an error, a metric or a response. */
  apiKey: string | undefined;
  simulatorModel: string;
  judgeModel: string;
  timeoutMs: number;
}

/** The model connection, all or nothing: a base URL needs the simulator's model name. */
function modelConfig(e: z.output<typeof envSchema>): ModelConfig | undefined | string {
  const key = e.MODEL_API_KEY?.trim() || undefined;
  if (e.MODEL_BASE_URL === undefined) {
    const stray = [key && 'MODEL_API_KEY', e.SIMULATOR_MODEL && 'SIMULATOR_MODEL', e.JUDGE_MODEL && 'JUDGE_MODEL'].filter(Boolean);
    return stray.length > 0
      ? `${stray.join(', ')} ${stray.length > 1 ? 'are' : 'is'} set but MODEL_BASE_URL is not: set MODEL_BASE_URL too, or leave ` +
          `the model unconfigured`
      : undefined;
  }
  if (!e.SIMULATOR_MODEL)
    return 'SIMULATOR_MODEL is required when MODEL_BASE_URL is set: the model name simulated users use (the judge defaults to it)';
  return {
    baseUrl: e.MODEL_BASE_URL,
    apiKey: key,
    simulatorModel: e.SIMULATOR_MODEL,
    judgeModel: e.JUDGE_MODEL || e.SIMULATOR_MODEL,
    timeoutMs: e.MODEL_TIMEOUT_MS,
  };
}

/** Unset: 100, or half the pod's limit when that is below 200 (at least 1). */
const DEFAULT_RUN_CONVERSATIONS_PER_POD = 100;

/** The run budget of the pod: set, it must leave interactive conversations room on the pod. */
function runConversationsPerPod(e: z.output<typeof envSchema>): number | string {
  const perPod = e.MAX_CONVERSATIONS_PER_POD;
  const set = e.MAX_RUN_CONVERSATIONS_PER_POD;
  if (set === undefined) return Math.max(1, Math.min(DEFAULT_RUN_CONVERSATIONS_PER_POD, Math.floor(perPod / 2)));
  return set < perPod
    ? set
    : `MAX_RUN_CONVERSATIONS_PER_POD (${set}) must be below MAX_CONVERSATIONS_PER_POD (${perPod}), so that conversations ` +
        `other than suite runs' always find room on the pod`;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the environment; every problem is named at once, never with a secret's value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => issue.message));
  }
  const e = parsed.data;
  const peers = peerConfig(e, e.PEER_TIMEOUT_MS);
  if (typeof peers === 'string') throw new ConfigError([peers]);
  const model = modelConfig(e);
  if (typeof model === 'string') throw new ConfigError([model]);
  const runsPerPod = runConversationsPerPod(e);
  if (typeof runsPerPod === 'string') throw new ConfigError([runsPerPod]);
  return {
    engineUrl: e.PROMETHIST_MCP_ENGINE_URL,
    platformUrl: e.PROMETHIST_PLATFORM_URL,
    engineIdentity: parseEngineIdentity(e.PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY),
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    turnBudgetMs: e.TURN_BUDGET_MS,
    idleCloseMs: e.IDLE_CLOSE_MS,
    maxConversationsPerCaller: e.MAX_CONVERSATIONS_PER_CALLER,
    maxConversationsPerPod: e.MAX_CONVERSATIONS_PER_POD,
    maxRunConversationsPerPod: runsPerPod,
    maxRunConversationsPerCaller: e.MAX_RUN_CONVERSATIONS_PER_CALLER,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    authCacheTtlMs: e.AUTH_CACHE_TTL_MS,
    platformTimeoutMs: e.PLATFORM_TIMEOUT_MS,
    engineConnectTimeoutMs: e.ENGINE_CONNECT_TIMEOUT_MS,
    engineMaxFrameBytes: e.ENGINE_MAX_FRAME_BYTES,
    rememberedConversationsMax: e.REMEMBERED_CONVERSATIONS_MAX,
    maxMonitorSeries: e.MAX_MONITOR_SERIES,
    memoryPollMs: e.MEMORY_POLL_MS,
    rememberedConversationsTtlMs: e.REMEMBERED_CONVERSATIONS_TTL_MS,
    maxBodyBytes: e.MAX_BODY_BYTES,
    runs: { followGraceMs: e.RUN_FOLLOW_GRACE_MS, keptMax: e.RUNS_KEPT_MAX, keptMs: e.RUNS_KEPT_MS, takeoverMs: e.RUN_TAKEOVER_MS },
    mcpRunWaitMs: e.MCP_RUN_WAIT_MS,
    mcpTaskPollMs: e.MCP_TASK_POLL_MS,
    debugPage: e.DEBUG_PAGE,
    runsPage: e.RUNS_PAGE,
    revision: e.GIT_REVISION || 'unknown',
    mcpAuthorizationServers: e.MCP_AUTHORIZATION_SERVERS ?? [e.PROMETHIST_PLATFORM_URL],
    mcpSessionIdleMs: e.MCP_SESSION_IDLE_MS,
    peers,
    model,
  };
}
