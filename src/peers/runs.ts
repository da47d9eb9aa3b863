import type { FastifyBaseLogger } from 'fastify';
import type { Gauge } from 'prom-client';
import { ndjsonLines } from '../http/ndjson.js';
import { checkpointOf } from '../runs/checkpoint.js';
import type { RunRegistry } from '../runs/registry.js';
import type { Run } from '../runs/run.js';
import type { RunFilter, RunSiblings, SiblingAnswer, SiblingRun } from '../runs/siblings.js';
import { sleep } from '../suites/run/cancellation.js';
import type { RunView } from '../runs/views.js';
import type { Peer } from './peer-list.js';
import type { Peers } from './peers.js';

/** The internal routes of runs (./run-routes.ts). */
const RUN_PATHS = {
  run: (id: string) => `/internal/peer/runs/${id}`,
  checkpoint: (id: string) => `/internal/peer/runs/${id}/checkpoint`,
  events: (id: string, after: number) => `/internal/peer/runs/${id}/events?after=${after}`,
  cancel: (id: string, why: string) => `/internal/peer/runs/${id}?why=${encodeURIComponent(why)}`,
  list: (filter: RunFilter) =>
    'callerId' in filter
      ? `/internal/peer/runs?caller_id=${encodeURIComponent(filter.callerId)}`
      : `/internal/peer/runs?agent=${encodeURIComponent(filter.agent.key)}`,
};

/** Offsets a sibling acknowledged holding, and when. */
interface Acked {
  lines: number;
  rounds: number;
  at: number;
  /** A push to it is out now; `again`: something changed meanwhile. */
  pushing: boolean;
  again: boolean;
}

/** A checkpoint on its way is cheap to build but not free: a hanging sibling gets this long. */
const PUSH_TIMEOUT_MS = 10_000;

/** How often a cancel waiting for its push to be acknowledged looks again. */
const FLUSH_POLL_MS = 20;

/** The call found nothing listening at the sibling's address: no process there, so no replica either. */
const isRefused = (err: unknown): boolean => (err as { code?: unknown } | undefined)?.code === 'ECONNREFUSED';

/**
 * Runs across the pods of the release, over the internal peer routes: every change of a run held
 * here is pushed to every sibling (what was added since what it acknowledged; each sibling one push
 * at a time, the changes meanwhile coalesced into the next), and at least every third of
 * RUN_TAKEOVER_MS as a heartbeat, so that a sibling can continue the run from its last completed
 * round when this pod dies. A sibling's rank (its place in this pod's peer list) orders who takes
 * over first.
 */
export class PeerRunSiblings implements RunSiblings {
  readonly #peers: Peers;
  readonly #registry: RunRegistry;
  readonly #log: FastifyBaseLogger;
  readonly #ownPort: number;
  /** Keyed by the run's record, so that they go with it when the pod drops the run. */
  readonly #acked = new WeakMap<Run, Map<string, Acked>>();
  readonly #heartbeat: NodeJS.Timeout;

  constructor(deps: {
    peers: Peers;
    registry: RunRegistry;
    log: FastifyBaseLogger;
    ownPort: number;
    takeoverMs: number;
    /** agent_test_gateway_runs_unreplicated, set on every heartbeat. */
    unreplicatedGauge: Gauge;
  }) {
    this.#peers = deps.peers;
    this.#registry = deps.registry;
    this.#log = deps.log;
    this.#ownPort = deps.ownPort;
    this.#heartbeat = setInterval(
      () => {
        const running = this.#registry.running;
        for (const run of running) this.replicate(run, true);
        deps.unreplicatedGauge.set(running.filter((run) => this.unreplicated(run)).length);
      },
      Math.max(50, Math.floor(deps.takeoverMs / 3)),
    );
    this.#heartbeat.unref();
  }

  get any(): boolean {
    return this.#peers.list.length > 0;
  }

  get addresses(): string[] {
    return this.#peers.list.map((peer) => peer.address);
  }

  close(): void {
    clearInterval(this.#heartbeat);
  }

  replicate(run: Run, heartbeat = false): void {
    if (run.holder !== null) return;
    let acks = this.#acked.get(run);
    if (acks === undefined) {
      acks = new Map();
      this.#acked.set(run, acks);
    }
    const outcomes = this.#registry.pushes;
    this.#peers.list.forEach((peer, i) => {
      if (!outcomes.pushesTo(run, peer.address)) return;
      let acked = acks.get(peer.address);
      if (acked === undefined) {
        acked = { lines: 0, rounds: 0, at: 0, pushing: false, again: false };
        acks.set(peer.address, acked);
      }
      const behind = acked.lines < run.lines.length || acked.rounds < run.rounds.length;
      if (!behind && !heartbeat) return;
      if (acked.pushing) {
        acked.again = true;
        return;
      }
      void this.#push(run, peer, i + 1, acked);
    });
  }

  async #push(run: Run, peer: Peer, rank: number, acked: Acked): Promise<void> {
    acked.pushing = true;
    acked.again = false;
    const from = { lines: acked.lines, rounds: acked.rounds };
    const body = checkpointOf(run, from, { holderPort: this.#ownPort, pod: this.#registry.podName, rank, adopt: false });
    const sent = { lines: run.lines.length, rounds: run.rounds.length };
    const outcomes = this.#registry.pushes;
    const sentAt = outcomes.sending(run, peer.address);
    try {
      const { status, body: answer } = await this.#peers.client.internal(peer, 'POST', RUN_PATHS.checkpoint(run.id), body, PUSH_TIMEOUT_MS);
      const { refused, epoch, ended } = (answer ?? {}) as {
        refused?: unknown;
        epoch?: { n?: unknown; by?: unknown } | null;
        ended?: unknown;
      };
      if (status === 204) {
        const gained = sent.lines > acked.lines;
        Object.assign(acked, sent, { at: Date.now() });
        outcomes.acknowledged(run, peer.address, sentAt, sent.lines);
        if (gained) run.changed();
      } else if (status === 409 && refused === 'gap') {
        Object.assign(acked, { lines: 0, rounds: 0 });
        acked.again = true;
      } else if (status === 409 && refused === 'stale' && typeof epoch?.n === 'number' && typeof epoch.by === 'string') {
        outcomes.refusedAsStale(run, peer.address, { epoch: { n: epoch.n, by: epoch.by }, ended: ended === true });
      } else outcomes.unanswered(run, peer.address, status === 503);
    } catch (err) {
      // Nothing listens there (it keeps no replica), or it did not answer: the next heartbeat tries again, never at once.
      outcomes.unanswered(run, peer.address, isRefused(err));
      acked.again = false;
    } finally {
      acked.pushing = false;
    }
    // Only this sibling is pushed again: a push to another one is its own (two failing siblings must not re-arm each other).
    if (acked.again && run.holder === null && outcomes.pushesTo(run, peer.address)) void this.#push(run, peer, rank, acked);
  }

  async flush(run: Run): Promise<void> {
    this.replicate(run);
    const until = Date.now() + PUSH_TIMEOUT_MS;
    const outcomes = this.#registry.pushes;
    // Each sibling's push is under way or answered: wait for the answers, a short poll, never a spin.
    const behind = () =>
      this.#peers.list.some((peer) => {
        const acked = this.#acked.get(run)?.get(peer.address);
        return outcomes.pushesTo(run, peer.address) && acked !== undefined && (acked.pushing || acked.again);
      });
    while (behind() && Date.now() < until) await sleep(FLUSH_POLL_MS, AbortSignal.timeout(until - Date.now()));
  }

  unreplicated(run: Run): boolean {
    const fresh = Date.now() - this.#registry.takeoverMs;
    if (run.holder !== null || run.ended || (run.moves.at(-1)?.at ?? run.spec.createdAt) > fresh) return false;
    return ![...(this.#acked.get(run)?.values() ?? [])].some((acked) => acked.at >= fresh);
  }

  async handOver(run: Run, deadline: number): Promise<string | undefined> {
    for (const [i, peer] of this.#peers.list.entries()) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      try {
        const { status, body: answer } = await this.#pushWhole(run, peer, { rank: i + 1, adopt: true }, left);
        // `stale`: it took the run already (a hand-over retried after a timeout) or knows who did.
        if (status === 204 || (status === 409 && (answer as { refused?: unknown } | undefined)?.refused === 'stale')) {
          this.#acked.delete(run);
          return peer.address;
        }
      } catch {
        // Not this one: try the next.
      }
    }
    this.#log.warn({ event: 'run_not_handed_over', run_id: run.id }, 'no sibling took the run over');
    return undefined;
  }

  async handOn(runs: Run[], deadline: number): Promise<number> {
    const newestFirst = [...runs].sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    const taken = await Promise.all(
      this.#peers.list.map(async (peer, i) => {
        let n = 0;
        for (const run of newestFirst) {
          const left = deadline - Date.now();
          if (left <= 0) break;
          try {
            const { status } = await this.#pushWhole(run, peer, { rank: i + 1, adopt: false }, left);
            // It drains too (503), or keeps a newer end (409): the next run may still be taken.
            if (status === 204) n += 1;
            else if (status === 503) break;
          } catch {
            // Nothing listens there, or it hangs: it gets no more of them.
            break;
          }
        }
        return n;
      }),
    );
    const handedOn = taken.reduce((a, b) => a + b, 0);
    this.#log.info(
      { event: 'ended_runs_handed_on', runs: runs.length, checkpoints_taken: handedOn },
      'ended runs handed on to the siblings',
    );
    return handedOn;
  }

  /** Pushes all of a run to a sibling (a hand-over, or an ended run handed on), waiting at most `left` ms. */
  #pushWhole(run: Run, peer: Peer, to: { rank: number; adopt: boolean }, left: number) {
    const body = checkpointOf(run, { lines: 0, rounds: 0 }, { holderPort: this.#ownPort, pod: this.#registry.podName, ...to });
    return this.#peers.client.internal(peer, 'POST', RUN_PATHS.checkpoint(run.id), body, Math.min(PUSH_TIMEOUT_MS, left));
  }

  async survey(id: string): Promise<SiblingAnswer[]> {
    const answers = await Promise.all(
      this.#peers.list.map(async (peer): Promise<SiblingAnswer | undefined> => {
        try {
          const { status, body } = await this.#peers.client.internal(peer, 'GET', RUN_PATHS.run(id));
          const answer = body as { held?: unknown; epoch?: { n?: unknown; by?: unknown }; run?: { status?: unknown } } | undefined;
          if (status !== 200 || typeof answer?.epoch?.n !== 'number' || typeof answer.epoch.by !== 'string') return undefined;
          const epoch = { n: answer.epoch.n, by: answer.epoch.by };
          return { address: peer.address, held: answer.held === true, epoch, ended: answer.run?.status !== 'running' };
        } catch {
          return undefined;
        }
      }),
    );
    return answers.filter((a) => a !== undefined);
  }

  async find(id: string): Promise<SiblingRun | undefined> {
    const answers = await Promise.all(
      this.#peers.list.map(async (peer) => {
        try {
          const { status, body } = await this.#peers.client.internal(peer, 'GET', RUN_PATHS.run(id));
          const answer = body as { held?: unknown; run?: SiblingRun['view'] } | undefined;
          if (status !== 200 || typeof answer?.held !== 'boolean' || typeof answer.run?.id !== 'string') return undefined;
          return { view: answer.run, held: answer.held, address: peer.address };
        } catch {
          return undefined;
        }
      }),
    );
    const known = answers.filter((a) => a !== undefined);
    return known.find((a) => a.held) ?? known.find((a) => a.view.status !== 'running') ?? known[0];
  }

  async listOf(filter: RunFilter): Promise<Array<{ view: RunView; held: boolean }>> {
    const lists = await Promise.all(
      this.#peers.list.map(async (peer) => {
        try {
          const { status, body } = await this.#peers.client.internal(peer, 'GET', RUN_PATHS.list(filter));
          const runs = (body as { runs?: unknown } | undefined)?.runs;
          return status === 200 && Array.isArray(runs) ? (runs as Array<{ view: RunView; held: boolean }>) : [];
        } catch {
          return [];
        }
      }),
    );
    return lists.flat();
  }

  async *follow(address: string, id: string, after: number, signal: AbortSignal): AsyncGenerator<string> {
    const peer = this.#peerAt(address);
    if (peer === undefined) return;
    const res = await this.#peers.client.stream(peer, RUN_PATHS.events(id, after), signal);
    if (res.statusCode !== 200) {
      await res.body.dump();
      return;
    }
    yield* ndjsonLines(res.body);
  }

  async cancel(address: string, id: string, why: string): Promise<RunView | undefined> {
    const peer = this.#peerAt(address);
    if (peer === undefined) return undefined;
    try {
      const { status, body } = await this.#peers.client.internal(peer, 'DELETE', RUN_PATHS.cancel(id, why), undefined, PUSH_TIMEOUT_MS);
      return status === 200 ? ((body as { run: RunView }).run ?? undefined) : undefined;
    } catch {
      return undefined;
    }
  }

  #peerAt(address: string): Peer | undefined {
    return this.#peers.list.find((p) => p.address === address);
  }
}
