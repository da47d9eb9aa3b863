import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every metric of the service, created once per app. Labels take values from small fixed sets
 * only (outcomes, causes, templates): never a session id, a ref, a device or a token.
 */
export const CLOSE_CAUSES = [
  'idle',
  'turn_failed',
  'cancelled',
  'agent_ended',
  'caller',
  'evicted',
  'engine_closed',
  'shutdown',
  'moved',
] as const;
export type CloseCause = (typeof CLOSE_CAUSES)[number];

export const TURN_OUTCOMES = ['exit', 'timeout', 'engine_closed', 'engine_error', 'cancelled'] as const;
export type TurnOutcome = (typeof TURN_OUTCOMES)[number];

export type ConnectResult = 'ok' | 'unrecognised' | 'refused' | 'unavailable';
export type ConnectKind = 'new' | 'reconnect';
export type EvictionLimit = 'caller' | 'pod';

export function createMetrics(prefix = 'agent_test_gateway_') {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });

  const metrics = {
    registry,
    turnDuration: new Histogram({
      name: `${prefix}turn_duration_seconds`,
      help: 'Duration of a turn, from the line sent to the exit element or the cut-off, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120],
      registers: [registry],
    }),
    openConversations: new Gauge({
      name: `${prefix}open_conversations`,
      help: 'Conversations holding an engine socket on this pod (connecting, idle or busy).',
      registers: [registry],
    }),
    busyConversations: new Gauge({
      name: `${prefix}busy_conversations`,
      help: 'Conversations with a turn running.',
      registers: [registry],
    }),
    rememberedConversations: new Gauge({
      name: `${prefix}remembered_conversations`,
      help: 'Closed conversations this pod still remembers for ownership and settings.',
      registers: [registry],
    }),
    evictions: new Counter({
      name: `${prefix}evictions_total`,
      help: 'Idle conversations closed to make room for a new one, by the limit that needed room.',
      labelNames: ['limit'] as const,
      registers: [registry],
    }),
    closes: new Counter({
      name: `${prefix}conversation_closes_total`,
      help: 'Engine sockets closed, by cause.',
      labelNames: ['cause'] as const,
      registers: [registry],
    }),
    engineConnects: new Counter({
      name: `${prefix}engine_connects_total`,
      help: 'Engine socket connects, by result and kind.',
      labelNames: ['result', 'kind'] as const,
      registers: [registry],
    }),
    platformRequestDuration: new Histogram({
      name: `${prefix}platform_request_duration_seconds`,
      help: 'Platform API request duration, by endpoint template and status class.',
      labelNames: ['endpoint', 'status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    authCache: new Counter({
      name: `${prefix}auth_cache_requests_total`,
      help: 'Authorization cache look-ups, by result (hit, miss, coalesced).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
  };
  // Zero every known series, so a dashboard sees 0 rather than nothing before the first event.
  for (const outcome of TURN_OUTCOMES) metrics.turnDuration.zero({ outcome });
  for (const cause of CLOSE_CAUSES) metrics.closes.inc({ cause }, 0);
  for (const limit of ['caller', 'pod'] as const) metrics.evictions.inc({ limit }, 0);
  for (const result of ['hit', 'miss', 'coalesced']) metrics.authCache.inc({ result }, 0);
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

export const statusClass = (status: number | 'error'): string =>
  status === 'error' ? 'error' : `${Math.floor(status / 100)}xx`;
