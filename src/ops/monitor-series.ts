import type { Counter, Gauge } from 'prom-client';

/** How a monitored attempt ended; `invalid` (the simulated user spoiled it) is left out of pass rates like `error`. */
export const MONITOR_OUTCOMES = ['passed', 'failed', 'error', 'invalid'] as const;
export type MonitorOutcome = (typeof MONITOR_OUTCOMES)[number];

/** One monitored run's series: its conversations' counters, created at 0 when it starts. */
export interface MonitoredRun {
  /** Adds the run's attempts and sets the monitor's last run; answers the attempts dropped for the bound. */
  finish(attempts: Array<{ conversation: string; outcome: MonitorOutcome }>, finishedAt: number): number;
}

/**
 * The monitors' series, bounded: at most `max` label sets are ever recorded on this pod (a new
 * conversation name or revision is a new set, so no suite grows the scrape without end); the
 * attempts of a set past the bound are counted as dropped instead, and the run's notes say so.
 * A run's sets are created at 0 when it starts, so that Prometheus's increase() sees its first
 * attempts too.
 */
export class MonitorSeries {
  readonly #seen = new Set<string>();

  constructor(
    private readonly metrics: {
      attempts: Counter<'monitor' | 'agent' | 'revision' | 'conversation' | 'outcome'>;
      lastRun: Gauge<'monitor' | 'agent'>;
      dropped: Counter;
    },
    private readonly max: number,
  ) {}

  start(monitor: string, agentKey: string, revision: string, conversations: string[]): MonitoredRun {
    // One label set per conversation and outcome; its key is the same set, as text.
    const labels = (conversation: string, outcome: MonitorOutcome) => ({ monitor, agent: agentKey, revision, conversation, outcome });
    const keyOf = (set: ReturnType<typeof labels>) => JSON.stringify(Object.values(set));
    const kept = new Set<string>();
    for (const conversation of conversations) {
      for (const outcome of MONITOR_OUTCOMES) {
        const set = labels(conversation, outcome);
        const key = keyOf(set);
        if (!this.#seen.has(key) && this.#seen.size >= this.max) continue;
        this.#seen.add(key);
        kept.add(key);
        this.metrics.attempts.inc(set, 0);
      }
    }
    return {
      finish: (attempts, finishedAt) => {
        let dropped = 0;
        for (const { conversation, outcome } of attempts) {
          const set = labels(conversation, outcome);
          if (kept.has(keyOf(set))) this.metrics.attempts.inc(set);
          else dropped += 1;
        }
        if (dropped > 0) this.metrics.dropped.inc(dropped);
        this.metrics.lastRun.set({ monitor, agent: agentKey }, finishedAt / 1000);
        return dropped;
      },
    };
  }
}
