/**
 * Every metric of the service, created once per app, in one registry with prom-client's default
 * process and Node.js metrics under their standard names. The service's own carry the
 * `agent_test_gateway_` prefix. Labels take values from small fixed sets only (outcomes, causes,
 * reasons, route templates): never a session id, a ref, a device or a token. docs/operations.md
 * describes each one.
 */

import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { MonitorSeries } from './monitor-series.js';
import { CLOSE_CAUSES, CONNECT_RESULTS, EVICTION_LIMITS, TURN_OUTCOMES } from '../domain/vocabulary.js';
import { errorStatus, type ErrorCode } from '../errors.js';
import type { Config } from './config.js';

const PREFIX = 'agent_test_gateway_';

const MEMORY_OPERATIONS = ['snapshot', 'restore'] as const;
export const RUN_RESULTS = ['passed', 'failed', 'cancelled', 'error'] as const;
export type RunResult = (typeof RUN_RESULTS)[number];
/** A suite run, or a comparison of two revisions (a comparison passes when nothing regressed). */
export const RUN_KINDS = ['run', 'comparison'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** The `reason` of a refused call: its error code, with the two limits named shortly. */
const REASON_OF: Partial<Record<ErrorCode, string>> = {
  caller_conversation_limit: 'caller_limit',
  pod_conversation_limit: 'pod_limit',
};
export const refusalReason = (code: ErrorCode): string => REASON_OF[code] ?? code;
export const REFUSAL_REASONS = (Object.keys(errorStatus) as ErrorCode[]).map(refusalReason);

/**
 * Histogram bounds from 5 ms to just past `limitMs` (the budget or timeout the measured thing is
 * cut at) on the 1-2-3-5 series, so no bound is more than twice the one before, with the limit
 * itself and 1.1 × the limit as bounds: what was cut off lands just above the limit, not far above.
 */
export function bucketsUpTo(limitMs: number): number[] {
  const limit = limitMs / 1000;
  const bounds = new Set<number>([limit, round(limit * 1.1)]);
  for (let decade = 0.001; decade < limit; decade *= 10) {
    for (const step of [1, 2, 3, 5]) {
      const bound = round(decade * step);
      if (bound >= 0.005 && bound < limit) bounds.add(bound);
    }
  }
  return [...bounds].sort((a, b) => a - b);
}
const round = (n: number) => Number(n.toPrecision(6));

/** The container's memory limit (cgroup); without one, the machine's memory. */
const memoryLimit = (): number => {
  const constrained = process.constrainedMemory();
  return constrained > 0 && constrained < totalmem() ? constrained : totalmem();
};

const PACKAGE_JSON = new URL('../../package.json', import.meta.url);
const packageVersion = (): string => (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;

export type MetricsConfig = Pick<
  Config,
  | 'turnBudgetMs'
  | 'platformTimeoutMs'
  | 'engineConnectTimeoutMs'
  | 'maxConversationsPerCaller'
  | 'maxConversationsPerPod'
  | 'revision'
  | 'maxMonitorSeries'
  | 'runs'
> & { model?: { timeoutMs: number } | undefined };

/** Who calls the model and how a call ended (the model adapter's vocabulary, kept here with the other label sets). */
export const MODEL_ROLES = ['simulator', 'judge'] as const;
export const MODEL_OUTCOMES = ['ok', 'http_error', 'timeout', 'unreachable', 'invalid_answer'] as const;
const DEFAULT_MODEL_TIMEOUT_MS = 60_000;

/** Why a pod stopped starting attempts of a run it held (src/runs/fence.ts). */
export const FENCE_REASONS = ['lease_lapsed', 'stale', 'newer_epoch'] as const;
export type FenceReason = (typeof FENCE_REASONS)[number];

export function createMetrics(config: MetricsConfig) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters (`…_total`): promtool flags them, and the by-type gauges
  // (nodejs_active_handles, nodejs_active_requests, nodejs_active_resources) hold the same sums.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(name);
  }
  const registers = [registry];
  const p = PREFIX;

  const metrics = {
    registry,
    httpRequestDuration: new Histogram({
      name: `${p}http_request_duration_seconds`,
      help: 'HTTP requests answered, by method, route template (unmatched: no route) and status code; duration until the last byte.',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: bucketsUpTo(config.turnBudgetMs),
      registers,
    }),
    refusals: new Counter({
      name: `${p}refusals_total`,
      help: 'Calls answered with an error (status 4xx/5xx, or the last line of a stream), by reason.',
      labelNames: ['reason'] as const,
      registers,
    }),
    turnDuration: new Histogram({
      name: `${p}turn_duration_seconds`,
      help: 'Duration of a turn, from the line sent to the exit element or the cut-off, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: bucketsUpTo(config.turnBudgetMs),
      registers,
    }),
    turnBudget: new Gauge({ name: `${p}turn_budget_seconds`, help: 'The configured turn budget (TURN_BUDGET_MS).', registers }),
    conversationLimit: new Gauge({
      name: `${p}conversation_limit`,
      help: 'The configured limit of open conversations, per caller and per pod.',
      labelNames: ['limit'] as const,
      registers,
    }),
    openConversations: new Gauge({
      name: `${p}open_conversations`,
      help: 'Conversations holding an engine socket on this pod (connecting, idle or busy).',
      registers,
    }),
    busyConversations: new Gauge({ name: `${p}busy_conversations`, help: 'Conversations with a turn running.', registers }),
    rememberedConversations: new Gauge({
      name: `${p}remembered_conversations`,
      help: 'Closed conversations this pod still remembers for ownership and settings.',
      registers,
    }),
    draining: new Gauge({ name: `${p}draining`, help: '1 while the pod drains for shutdown, else 0.', registers }),
    memoryLimit: new Gauge({
      name: `${p}memory_limit_bytes`,
      help: "The memory this process may use: its container's limit, else the machine's memory.",
      registers,
    }),
    buildInfo: new Gauge({
      name: `${p}build_info`,
      help: 'Always 1: the running version, source revision and Node.js version.',
      labelNames: ['version', 'revision', 'node'] as const,
      registers,
    }),
    evictions: new Counter({
      name: `${p}evictions_total`,
      help: 'Idle conversations closed to make room for a new one, by the limit that needed room.',
      labelNames: ['limit'] as const,
      registers,
    }),
    closes: new Counter({
      name: `${p}conversation_closes_total`,
      help: 'Engine sockets closed, by cause.',
      labelNames: ['cause'] as const,
      registers,
    }),
    engineConnects: new Counter({
      name: `${p}engine_connects_total`,
      help: 'Engine socket connects, by result (ok once the session is admitted) and kind.',
      labelNames: ['result', 'kind'] as const,
      registers,
    }),
    engineConnectDuration: new Histogram({
      name: `${p}engine_connect_duration_seconds`,
      help: 'Engine socket connects, from the upgrade request to the session element or the failure.',
      buckets: bucketsUpTo(config.engineConnectTimeoutMs),
      registers,
    }),
    platformRequestDuration: new Histogram({
      name: `${p}platform_request_duration_seconds`,
      help: 'Platform API request duration, by operation (path template) and status class.',
      labelNames: ['operation', 'status'] as const,
      buckets: bucketsUpTo(config.platformTimeoutMs),
      registers,
    }),
    authCache: new Counter({
      name: `${p}auth_cache_requests_total`,
      help: 'Authorization cache look-ups, by result (hit, miss, coalesced).',
      labelNames: ['result'] as const,
      registers,
    }),
    memoryCalls: new Counter({
      name: `${p}memory_calls_total`,
      help: 'Engine memory snapshot and restore calls, by operation and result (ok, error).',
      labelNames: ['operation', 'result'] as const,
      registers,
    }),
    modelRequests: new Counter({
      name: `${p}model_requests_total`,
      help:
        'Model calls (chat completions), by role (simulator, judge) and outcome (ok, http_error, timeout, unreachable, ' +
        'invalid_answer); a retry is a call of its own.',
      labelNames: ['role', 'outcome'] as const,
      registers,
    }),
    modelRequestDuration: new Histogram({
      name: `${p}model_request_duration_seconds`,
      help: 'Model call duration, by role, until the answer or the failure.',
      labelNames: ['role'] as const,
      buckets: bucketsUpTo(config.model?.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS),
      registers,
    }),
    modelTokens: new Counter({
      name: `${p}model_tokens_total`,
      help: 'Tokens the model reported using, by role and kind (prompt, completion).',
      labelNames: ['role', 'kind'] as const,
      registers,
    }),
    monitorAttempts: new Counter({
      name: `${p}monitor_attempts_total`,
      help:
        'Attempts of monitored runs (a run naming a monitor), by monitor, agent, revision, conversation and outcome ' +
        '(passed, failed, error, invalid), and for a reviewed failed or invalid attempt who the failure review found ' +
        'responsible (agent, judge, unclear, simulated_user), added when the run finishes (to a new label set, after a ' +
        'scrape has read it at 0); at most MAX_MONITOR_SERIES label sets per pod.',
      labelNames: ['monitor', 'agent', 'revision', 'conversation', 'outcome', 'responsible'] as const,
      registers,
    }),
    monitorAttacks: new Counter({
      name: `${p}monitor_attack_attempts_total`,
      help:
        'Attempts of the attack conversations of monitored runs that could be judged, by monitor, agent, revision, ' +
        'conversation and outcome (held: the agent held; broke: the attack broke it), added when the run finishes (to a ' +
        'new label set, after a scrape has read it at 0); within MAX_MONITOR_SERIES.',
      labelNames: ['monitor', 'agent', 'revision', 'conversation', 'outcome'] as const,
      registers,
    }),
    monitorLastRun: new Gauge({
      name: `${p}monitor_last_run_timestamp_seconds`,
      help: "When the monitor's last run on this pod finished (Unix seconds), by monitor and agent.",
      labelNames: ['monitor', 'agent'] as const,
      registers,
    }),
    monitorSeriesDropped: new Counter({
      name: `${p}monitor_series_dropped_total`,
      help: 'Monitored attempts not recorded because their label set would have passed MAX_MONITOR_SERIES.',
      registers,
    }),
    runsRunning: new Gauge({
      name: `${p}runs_running`,
      help: 'Runs and comparisons running on this pod now (those moved here included).',
      registers,
    }),
    runsKeptBytes: new Gauge({
      name: `${p}runs_kept_bytes`,
      help:
        'What this pod keeps of runs (its own and replicas, running and ended), in bytes as serialized; bounded by ' +
        'RUNS_KEPT_BYTES, except by running runs.',
      registers,
    }),
    runsKeptBytesLimit: new Gauge({
      name: `${p}runs_kept_bytes_limit`,
      help: 'RUNS_KEPT_BYTES: the bound on runs_kept_bytes, for alerts and the dashboard to compare it with.',
      registers,
    }),
    runsMoved: new Counter({
      name: `${p}runs_moved_total`,
      help:
        'Runs moved between pods, by cause (drain: handed over on SIGTERM; takeover: the holder stopped answering) and ' +
        'direction (out: this pod handed it over; in: it continues here).',
      labelNames: ['cause', 'direction'] as const,
      registers,
    }),
    runsFenced: new Counter({
      name: `${p}runs_fenced_total`,
      help:
        'Runs this pod stopped starting attempts of, because it no longer knew it held them, by reason (lease_lapsed: no ' +
        'acknowledgement from a sibling that could take over within half RUN_TAKEOVER_MS; stale: a sibling refused its push as ' +
        'older than the run it knows; newer_epoch: a sibling that took the run over pushed it here).',
      labelNames: ['reason'] as const,
      registers,
    }),
    suiteRuns: new Counter({
      name: `${p}suite_runs_total`,
      help: 'Test suite runs and comparisons, by kind (run, comparison) and result (passed, failed, cancelled, error).',
      labelNames: ['kind', 'result'] as const,
      registers,
    }),
  };

  metrics.turnBudget.set(config.turnBudgetMs / 1000);
  metrics.conversationLimit.set({ limit: 'caller' }, config.maxConversationsPerCaller);
  metrics.conversationLimit.set({ limit: 'pod' }, config.maxConversationsPerPod);
  metrics.draining.set(0);
  metrics.memoryLimit.set(memoryLimit());
  metrics.runsKeptBytesLimit.set(config.runs.keptBytes);
  metrics.buildInfo.set({ version: packageVersion(), revision: config.revision, node: process.version }, 1);

  // Zero every known series, so a dashboard sees 0 rather than nothing before the first event.
  for (const outcome of TURN_OUTCOMES) metrics.turnDuration.zero({ outcome });
  for (const reason of REFUSAL_REASONS) metrics.refusals.inc({ reason }, 0);
  for (const cause of CLOSE_CAUSES) metrics.closes.inc({ cause }, 0);
  for (const limit of EVICTION_LIMITS) metrics.evictions.inc({ limit }, 0);
  for (const result of ['hit', 'miss', 'coalesced']) metrics.authCache.inc({ result }, 0);
  for (const result of CONNECT_RESULTS) for (const kind of ['new', 'reconnect']) metrics.engineConnects.inc({ result, kind }, 0);
  for (const operation of MEMORY_OPERATIONS) for (const result of ['ok', 'error']) metrics.memoryCalls.inc({ operation, result }, 0);
  for (const kind of RUN_KINDS) for (const result of RUN_RESULTS) metrics.suiteRuns.inc({ kind, result }, 0);
  metrics.runsMoved.inc({ cause: 'drain', direction: 'out' }, 0);
  for (const cause of ['drain', 'takeover']) metrics.runsMoved.inc({ cause, direction: 'in' }, 0);
  for (const reason of FENCE_REASONS) metrics.runsFenced.inc({ reason }, 0);
  for (const role of MODEL_ROLES) {
    for (const outcome of MODEL_OUTCOMES) metrics.modelRequests.inc({ role, outcome }, 0);
    for (const kind of ['prompt', 'completion']) metrics.modelTokens.inc({ role, kind }, 0);
    metrics.modelRequestDuration.zero({ role });
  }
  const monitorSeries = new MonitorSeries(
    {
      attempts: metrics.monitorAttempts,
      attacks: metrics.monitorAttacks,
      lastRun: metrics.monitorLastRun,
      dropped: metrics.monitorSeriesDropped,
    },
    config.maxMonitorSeries,
  );
  return { ...metrics, monitorSeries };
}

export type Metrics = ReturnType<typeof createMetrics>;

export const statusClass = (status: number | 'error'): string => (status === 'error' ? 'error' : `${Math.floor(status / 100)}xx`);
