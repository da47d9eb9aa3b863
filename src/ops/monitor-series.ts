import type { Counter, Gauge } from 'prom-client';

/** How a monitored attempt ended; `invalid` (the simulated user spoiled it) is left out of pass rates like `error`. */
export const MONITOR_OUTCOMES = ['passed', 'failed', 'error', 'invalid'] as const;
export type MonitorOutcome = (typeof MONITOR_OUTCOMES)[number];

/**
 * Who the failure review found responsible for a reviewed attempt: a failed one (`agent`, `judge`,
 * `unclear`) or an invalid one (`simulated_user`). The alerts' annotations read them.
 */
export const MONITOR_RESPONSIBLE = { failed: ['agent', 'judge', 'unclear'], invalid: ['simulated_user'] } as const;
export type MonitorResponsible = (typeof MONITOR_RESPONSIBLE)[keyof typeof MONITOR_RESPONSIBLE][number];

/** How an attempt of an attack conversation was judged (docs/red-team.md): the agent held, or the attack broke it. */
export const ATTACK_OUTCOMES = ['held', 'broke'] as const;
export type AttackOutcome = (typeof ATTACK_OUTCOMES)[number];

/**
 * One monitored attempt: its conversation, outcome and, when it was reviewed, who was responsible;
 * for an attack conversation, whether the agent held (absent when the attempt could not be judged).
 */
export interface MonitoredAttempt {
  conversation: string;
  outcome: MonitorOutcome;
  responsible?: MonitorResponsible | undefined;
  attack?: AttackOutcome | undefined;
}

/** One monitored run's series: its conversations' counters, created at 0 when it starts. */
export interface MonitoredRun {
  /** Adds the run's attempts and sets the monitor's last run; answers the attempts dropped for the bound. */
  finish(attempts: MonitoredAttempt[], finishedAt: number): number;
}

type AttemptLabels = {
  monitor: string;
  agent: string;
  revision: string;
  conversation: string;
  outcome: MonitorOutcome;
  responsible?: MonitorResponsible;
};

type AttackLabels = { monitor: string; agent: string; revision: string; conversation: string; outcome: AttackOutcome };

/**
 * The monitors' series, bounded: at most `max` label sets are ever recorded on this pod (a new
 * conversation name or revision is a new set, so no suite grows the scrape without end); the
 * attempts of a set past the bound are counted as dropped instead, and the run's notes say so.
 * A run's sets are created at 0 when it starts, so that Prometheus's increase() sees its first
 * attempts too; but a run shorter than the scrape interval would show a new set first at its final
 * count (no increase at all: a first break on a new revision unseen), so a new set's attempts wait
 * until a scrape has read it at 0 (`scrape`), and the next scrape shows them. A reviewed
 * conversation (a simulated user or criteria) also gets the sets of its failed and invalid
 * attempts by who was responsible, next to the unreviewed ones (label absent).
 * An attack conversation also gets its attempts by whether the agent held or broke, the series the
 * attack alert reads (a held attack can still fail its control visit, so the outcomes do not say it).
 */
export class MonitorSeries {
  readonly #seen = new Set<string>();
  /** The sets created at 0 that no scrape has read yet, with the attempts waiting for that read. */
  readonly #unread = new Map<string, { add: (count: number) => void; waiting: number }>();

  constructor(
    private readonly metrics: {
      attempts: Counter<keyof AttemptLabels>;
      attacks: Counter<keyof AttackLabels>;
      lastRun: Gauge<'monitor' | 'agent'>;
      dropped: Counter;
    },
    private readonly max: number,
  ) {}

  start(
    monitor: string,
    agentKey: string,
    revision: string,
    conversations: Array<{ name: string; reviewed: boolean; attack: boolean }>,
  ): MonitoredRun {
    const labels = (conversation: string, outcome: MonitorOutcome, responsible?: MonitorResponsible): AttemptLabels => ({
      monitor,
      agent: agentKey,
      revision,
      conversation,
      outcome,
      ...(responsible === undefined ? {} : { responsible }),
    });
    const attackLabels = (conversation: string, outcome: AttackOutcome): AttackLabels => ({
      monitor,
      agent: agentKey,
      revision,
      conversation,
      outcome,
    });
    // A label set's key is the set, as text (an attack's marked apart: the same labels, another series).
    const keyOf = (set: AttemptLabels) =>
      JSON.stringify([set.conversation, set.outcome, set.responsible ?? null, monitor, agentKey, revision]);
    const attackKeyOf = (set: AttackLabels) => JSON.stringify(['attack', set.conversation, set.outcome, monitor, agentKey, revision]);
    const kept = new Set<string>();
    /** Keeps a set within the bound (and creates it at 0), unless the bound is reached. */
    const keep = (key: string, add: (count: number) => void) => {
      if (!this.#seen.has(key) && this.#seen.size >= this.max) return;
      if (!this.#seen.has(key)) this.#unread.set(key, { add, waiting: 0 });
      this.#seen.add(key);
      kept.add(key);
      add(0);
    };
    for (const { name, reviewed, attack } of conversations) {
      const sets = MONITOR_OUTCOMES.map((outcome) => labels(name, outcome));
      if (reviewed) {
        for (const [outcome, who] of Object.entries(MONITOR_RESPONSIBLE) as Array<[MonitorOutcome, readonly MonitorResponsible[]]>) {
          sets.push(...who.map((responsible) => labels(name, outcome, responsible)));
        }
      }
      for (const set of sets) keep(keyOf(set), (count) => this.metrics.attempts.inc(set, count));
      if (!attack) continue;
      for (const outcome of ATTACK_OUTCOMES) {
        const set = attackLabels(name, outcome);
        keep(attackKeyOf(set), (count) => this.metrics.attacks.inc(set, count));
      }
    }
    /** Adds one attempt to a kept set: now, or once a scrape has read the set at 0. */
    const count = (key: string, add: () => void) => {
      const unread = this.#unread.get(key);
      if (unread === undefined) add();
      else unread.waiting += 1;
    };
    return {
      finish: (attempts, finishedAt) => {
        let dropped = 0;
        for (const { conversation, outcome, responsible, attack } of attempts) {
          const set = labels(conversation, outcome, responsible);
          const attackSet = attack === undefined ? undefined : attackLabels(conversation, attack);
          if (kept.has(keyOf(set))) count(keyOf(set), () => this.metrics.attempts.inc(set));
          if (attackSet !== undefined && kept.has(attackKeyOf(attackSet)))
            count(attackKeyOf(attackSet), () => this.metrics.attacks.inc(attackSet));
          // Dropped when any of its series is past the bound.
          if (!kept.has(keyOf(set)) || (attackSet !== undefined && !kept.has(attackKeyOf(attackSet)))) dropped += 1;
        }
        if (dropped > 0) this.metrics.dropped.inc(dropped);
        this.metrics.lastRun.set({ monitor, agent: agentKey }, finishedAt / 1000);
        return dropped;
      },
    };
  }

  /**
   * Serves a scrape (`collect` renders the registry): the sets unread when it began have now been
   * read at 0, so the attempts waiting for that are added, for the next scrape to show.
   */
  async scrape<T>(collect: () => Promise<T>): Promise<T> {
    const reading = [...this.#unread.keys()];
    const text = await collect();
    for (const key of reading) {
      const unread = this.#unread.get(key);
      if (unread === undefined) continue; // a scrape that began beside this one added them
      this.#unread.delete(key);
      if (unread.waiting > 0) unread.add(unread.waiting);
    }
    return text;
  }
}
