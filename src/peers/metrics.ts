import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { REFUSAL_REASONS } from './client.js';

/**
 * The peers' metrics, in the service's registry. Labels take values from the fixed sets below
 * only: never a peer address, a session id or a caller.
 */
export const LOOKUP_RESULTS = ['held', 'known', 'unknown', 'error'] as const;
export type LookupResult = (typeof LOOKUP_RESULTS)[number];

/**
 * answered: the holder answered (any status); fallback: it had gone or was shutting down, so this
 * pod ran the call (or, when the holder was only remembered, asked the siblings again); moved:
 * the remembered holder no longer held the conversation, so the siblings were asked again;
 * failed: an answer broke off (also counted as answered); cancelled: the caller hung up.
 */
const FORWARD_OUTCOMES = ['answered', 'fallback', 'moved', 'failed', 'cancelled'] as const;

const NOTICE_RESULTS = ['sent', 'failed', 'dropped'] as const;

export function createPeerMetrics(registry: Registry, prefix = 'agent_test_gateway_') {
  const metrics = {
    lookups: new Histogram({
      name: `${prefix}peer_lookup_duration_seconds`,
      help:
        'Asking one peer about a session this pod does not hold, by its answer (held, known, unknown, error: no answer in ' +
        'time counts as error).',
      labelNames: ['result'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [registry],
    }),
    forwarded: new Counter({
      name: `${prefix}peer_forwarded_calls_total`,
      help:
        'Calls forwarded to the peer holding the conversation, by outcome (answered, fallback: run here after all, moved: ' +
        'the remembered holder no longer held it, failed: the answer broke off, cancelled: the caller hung up).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    noticesSent: new Counter({
      name: `${prefix}peer_ownership_notices_sent_total`,
      help: 'Ownership notices (a connect or a close here) to peers, by result (dropped: the bounded queue was full).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    noticesReceived: new Counter({
      name: `${prefix}peer_ownership_notices_received_total`,
      help: 'Ownership notices (a connect or a close there) received from peers.',
      registers: [registry],
    }),
    refusals: new Counter({
      name: `${prefix}peer_refusals_total`,
      help:
        "Calls between pods refused, by direction (here: this pod refused a sibling's; by_sibling: a sibling refused this " +
        "pod's) and reason (secret: the secrets differ; not_listed: the address the call named is not in the peer list).",
      labelNames: ['direction', 'reason'] as const,
      registers: [registry],
    }),
    runsUnreplicated: new Gauge({
      name: `${prefix}runs_unreplicated`,
      help:
        'Runs running on this pod that no sibling acknowledged holding a replica of within RUN_TAKEOVER_MS: lost if this ' + 'pod dies.',
      registers: [registry],
    }),
    peers: new Gauge({
      name: `${prefix}peers`,
      help: 'Other pods of the release this pod currently knows.',
      registers: [registry],
    }),
  };
  for (const result of LOOKUP_RESULTS) metrics.lookups.zero({ result });
  for (const outcome of FORWARD_OUTCOMES) metrics.forwarded.inc({ outcome }, 0);
  for (const result of NOTICE_RESULTS) metrics.noticesSent.inc({ result }, 0);
  metrics.noticesReceived.inc(0);
  for (const direction of ['here', 'by_sibling']) for (const reason of REFUSAL_REASONS) metrics.refusals.inc({ direction, reason }, 0);
  return metrics;
}

export type PeerMetrics = ReturnType<typeof createPeerMetrics>;
