import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { GatewayError } from '../errors.js';
import type { Metrics } from '../ops/metrics.js';
import { sleep } from '../suites/run/cancellation.js';
import type { Admitted } from '../suites/run/start.js';
import { applyCheckpoint, epochOf, type Checkpoint, type Refusal } from './checkpoint.js';
import { HeldRuns } from './held.js';
import { compareEpochs, nextEpoch, verdictOnPush } from './holding.js';
import { KeptRuns } from './kept.js';
import { Replicas } from './replicas.js';
import { REPORT_LINE, Run, type RunKind, type RunMove, type RunSpec } from './run.js';
import { noSiblings, type PushOutcomes, type RunSiblings } from './siblings.js';

/** How long a run is kept, how long it waits for a follower, how fast a sibling takes it over. */
export interface RunTimings {
  /** A run nobody follows (its follower hung up) is cancelled after this. */
  followGraceMs: number;
  keptMax: number;
  keptMs: number;
  /** What a pod keeps of runs at most, in bytes as serialized (RUNS_KEPT_BYTES): ./kept.ts. */
  keptBytes: number;
  /** A replica whose holder was silent this long (times its rank) asks it, and takes the run over if it does not answer. */
  takeoverMs: number;
}

const STREAM_POLL_MS = 100;

/** A drain's hand-over gets at least this long, however short the grace (a push to a live sibling takes milliseconds). */
const HAND_OVER_MIN_MS = 5_000;

/**
 * How long a drain with a shutdown grace of `graceMs` may take: the grace, but never less than
 * twice the hand-over's minimum, so that a run is handed over even under a short grace.
 */
export const drainBoundMs = (graceMs: number): number => Math.max(HAND_OVER_MIN_MS * 2, graceMs);

/** Why DELETE /v1/runs/{id} cancelled a run, as its report says it. */
export const CANCELLED_BY_DELETE = 'DELETE /v1/runs/{id} cancelled it';

const REASONS = {
  unfollowed: (ms: number) =>
    `nobody followed it for ${ms < 10_000 ? (ms / 1000).toFixed(1) : Math.round(ms / 1000)} s after its last follower hung up`,
  drainedAlone: 'the pod running it shut down, and no other pod of the release could take it over',
};

/** A line that ends a run's stream: its report, or its error. */
export const isFinalLine = (line: string): boolean => line.startsWith(REPORT_LINE) || line.startsWith('{"error":');

/**
 * The runs of this pod: those it holds (running here, or ended here: ./held.ts) and the replicas
 * of its siblings' runs (./replicas.ts), kept from their checkpoints so that this pod can answer
 * for them and continue them. A run starts here from a front's call, or continues here when its
 * holder hands it over (a drain) or stops answering (a crash). Ended runs are kept, bounded in
 * count and age.
 */
export class RunRegistry {
  readonly #runs = new Map<string, Run>();
  readonly #graceTimers = new Map<string, NodeJS.Timeout>();
  readonly #timings: RunTimings;
  readonly #metrics: Metrics;
  readonly #log: FastifyBaseLogger;
  readonly #held: HeldRuns;
  readonly #replicas: Replicas;
  #siblings: RunSiblings = noSiblings;
  #draining = false;
  readonly #kept: KeptRuns;
  readonly #closing = new AbortController();
  /** This pod's name, as runs' views show where they are. */
  readonly podName: string;
  /** This process's id: the epochs of the runs it takes over carry it, so that no two pods raise a run to the same epoch. */
  readonly #podId = randomUUID();

  constructor(deps: { app: FastifyInstance; timings: RunTimings; metrics: Metrics; log: FastifyBaseLogger; port: number }) {
    this.#timings = deps.timings;
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.podName = `${hostname()}:${deps.port}`;
    const siblings = () => this.#siblings;
    this.#held = new HeldRuns({
      app: deps.app,
      metrics: deps.metrics,
      log: deps.log,
      siblings,
      ended: (run) => this.#clearGrace(run.id),
      takeoverMs: deps.timings.takeoverMs,
      draining: () => this.#draining,
    });
    this.#replicas = new Replicas({
      takeoverMs: deps.timings.takeoverMs,
      siblings,
      adopt: (run, from) => this.#adopt(run, 'takeover', from),
      watching: () => !this.#draining,
    });
    this.#kept = new KeptRuns(deps.timings);
  }

  /** Whether a run this pod no longer keeps was dropped for room (RUNS_KEPT_BYTES). */
  droppedForRoom(id: string): boolean {
    return this.#kept.droppedForRoom(id);
  }

  /** What the siblings' answers to the pushes of runs held here tell the fence (the peers report them). */
  get pushes(): PushOutcomes {
    return this.#held;
  }

  /** How many of a run's lines its followers may read here (./fence.ts). */
  visibleLines(run: Run): number {
    return this.#held.leases.visibleLines(run.id, run.lines.length);
  }

  /** The siblings, once the peers are installed. */
  useSiblings(siblings: RunSiblings): void {
    this.#siblings = siblings;
  }

  get siblings(): RunSiblings {
    return this.#siblings;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Aborted when a drain's grace has run out: followers still reading here stop (a stream ends
   * without its last line, a caller waiting for the JSON report is told where the run goes on),
   * so that none is cut off by the pod going away.
   */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  get takeoverMs(): number {
    return this.#timings.takeoverMs;
  }

  /** A run this pod knows (held or a replica), unless it expired. */
  get(id: string): Run | undefined {
    this.#prune();
    return this.#runs.get(id);
  }

  /** A caller's runs this pod knows, newest first. */
  list(callerId: string): Run[] {
    return this.all().filter((run) => run.spec.callerId === callerId);
  }

  /** Every run this pod knows, newest first (the debug page). */
  all(): Run[] {
    this.#prune();
    return [...this.#runs.values()].sort((a, b) => b.spec.createdAt - a.spec.createdAt);
  }

  /** Runs held here now, running. */
  get running(): Run[] {
    return [...this.#runs.values()].filter((run) => run.holder === null && !run.ended);
  }

  /** Starts a run a front admitted: its first line written, its runner under way. */
  start(kind: RunKind, admitted: Admitted, opts: { detached: boolean }): Run {
    if (this.#draining) throw new GatewayError('shutting_down', `This pod is shutting down: retry the ${kind} on another pod.`);
    this.#prune();
    const { suite } = admitted;
    const { attempts: plan } = suite;
    const spec: RunSpec = {
      id: randomUUID(),
      kind,
      body: admitted.body,
      callerId: admitted.caller.id,
      callerEmail: admitted.caller.email,
      agent: admitted.agent,
      access: admitted.access,
      baseline: admitted.baseline,
      monitor: admitted.monitor,
      detached: opts.detached,
      createdAt: Date.now(),
      outline: {
        suite: suite.name ?? null,
        names: suite.conversations.map((c) => c.name),
        budget: kind === 'run' ? suite.repeat : plan.kind === 'repeat' ? plan.attempts : plan.max,
      },
    };
    const run = new Run(spec, null, this.podName);
    this.#runs.set(spec.id, run);
    this.#held.hold(run);
    const sides = kind === 'comparison' ? 2 : 1;
    const sessionsBudget = spec.outline.names.length * spec.outline.budget * sides;
    run.emit({ run: { id: spec.id, status: 'running', kind, conversations: spec.outline.names.length, sessions_budget: sessionsBudget } });
    this.#held.execute(run, admitted);
    return run;
  }

  /** Counts a follower of a run held here; the returned function releases it (a run nobody follows is cancelled after the grace). */
  follow(run: Run): () => void {
    run.followers += 1;
    this.#clearGrace(run.id);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      run.followers -= 1;
      this.#graceIfUnfollowed(run);
    };
  }

  /** Cancels a run held here: its running turns end with a plain close, its report says so. */
  cancel(run: Run, why: string): Promise<void> {
    return this.#held.cancel(run, why);
  }

  /**
   * Cancels a run this pod knows, held here or not, and resolves once its end (its cancelled flag
   * at least) reached the siblings. A replica whose holder does not take the cancel (it is gone,
   * or a takeover is pending) is taken over now and ended here: a cancelled run starts nothing
   * more, so no sibling resumes it and no engine session is opened for it.
   */
  async cancelHere(run: Run, why: string): Promise<void> {
    if (run.ended) return;
    if (run.holder === null) {
      await this.#held.cancel(run, why);
      await this.#siblings.flush(run);
      return;
    }
    run.cancel(why);
    const holder = (await this.#siblings.survey(run.id)).find((answer) => answer.held && !answer.ended);
    if (holder !== undefined && (await this.#siblings.cancel(holder.address, run.id, why)) !== undefined) return;
    const now = this.#runs.get(run.id) ?? run;
    if (now.ended || now.holder === null) return this.cancelHere(now, why);
    now.cancel(why);
    this.#adopt(now, 'takeover', now.holder);
    await this.#held.settled(now.id);
    await this.#siblings.flush(now);
  }

  /**
   * A sibling's push of a run (`holder`: where it is listed): refused when it is older than what
   * this pod knows (`stale`) or does not follow what it holds (`gap`: send everything); a run held
   * here that the push shows taken over is fenced first. A replica keeps watching its holder; with
   * `adopt`, the sibling hands the run over and it continues here now.
   */
  receive(id: string, push: Checkpoint, holder: string): Refusal | undefined {
    if (this.#draining) throw new GatewayError('shutting_down', 'This pod is shutting down: it keeps no run.');
    const held = this.get(id);
    // An end this pod keeps already (a draining sibling hands its ended runs on): nothing to change.
    if (held?.ended && push.status !== 'running' && compareEpochs(epochOf(push), held.epoch) === 0) return undefined;
    const known = held && { epoch: held.epoch, heldHere: held.holder === null, ended: held.ended };
    const verdict = verdictOnPush(known, { epoch: epochOf(push), ended: push.status !== 'running' });
    if (verdict === 'stale') {
      // A pod this one took the run over from calls: it is alive, and is sent the run from now on.
      if (held?.holder === null) this.#held.leases.called(id, holder);
      return 'stale';
    }
    if (verdict === 'fence') this.#held.fence(held!, holder, 'newer_epoch');
    const applied = applyCheckpoint(this.get(id), push, holder);
    if (typeof applied === 'string') return applied;
    this.#received(applied, push.adopt);
    return undefined;
  }

  #received(run: Run, adopt: boolean): void {
    this.#runs.set(run.id, run);
    this.#kept.kept(run.id);
    if (run.ended) {
      run.compact();
      this.#replicas.forget(run.id);
      return;
    }
    if (adopt) this.#adopt(run, 'drain', run.holder ?? undefined);
    else this.#replicas.watch(run);
  }

  /**
   * SIGTERM: no run starts here any more; each running run stops starting attempts and is handed
   * to a sibling, which continues it from its last completed round. With no sibling to take it,
   * it ends here, cancelled, with a report of what it completed. Followers on this pod follow it
   * on, through the sibling, until the pod closes. With a `deadline` (the shutdown grace), the
   * drain ends by then whatever it waits for (a runner's turn, a sibling); without, followers get
   * no grace but runs are still handed over or ended.
   */
  async drain(deadline?: number): Promise<void> {
    this.#draining = true;
    this.#replicas.close();
    const running = this.running;
    for (const run of running) run.halt();
    const graceOver = deadline === undefined ? undefined : sleep(drainBoundMs(deadline - Date.now()), this.#closing.signal);
    const bounded = (work: Promise<unknown>) => (graceOver === undefined ? work : Promise.race([work, graceOver]));
    // Half the grace (at least 5 s) to hand a run over; the rest to end it here, cancelled, if no sibling takes it.
    const handOverBy = deadline === undefined ? Infinity : Date.now() + Math.max(HAND_OVER_MIN_MS, (deadline - Date.now()) / 2);
    // Ended runs go to the siblings that stay (a rolling update starts the new pod first), at once and
    // alongside the running ones: a rollout that replaces every pod keeps them readable.
    const ended = [...this.#runs.values()].filter((run) => run.ended);
    const handedOn = ended.length === 0 ? Promise.resolve(0) : this.#siblings.handOn(ended, handOverBy);
    await bounded(Promise.all(running.map((run) => this.#held.settled(run.id))));
    await bounded(
      Promise.all(
        running.map(async (run) => {
          const to = await this.#siblings.handOver(run, handOverBy);
          if (to !== undefined) {
            this.#metrics.runsMoved.inc({ cause: 'drain', direction: 'out' });
            this.#log.info({ event: 'run_handed_over', run_id: run.id, to }, 'run handed over to a sibling');
            run.holder = to;
            run.changed();
            return;
          }
          run.reopen();
          run.cancel(REASONS.drainedAlone);
          this.#held.resume(run, this.#held.resumedOf(run));
          await this.#held.settled(run.id);
        }),
      ),
    );
    await bounded(handedOn);
    // Followers here read on (through the sibling now holding their run) until the grace ends,
    // then are told to stop, and answer their callers before the pod closes.
    const until = deadline ?? Date.now();
    while (this.#streams > 0 && Date.now() < until) await sleep(STREAM_POLL_MS, AbortSignal.timeout(until - Date.now()));
    this.#closing.abort();
    const answered = Date.now() + STREAM_POLL_MS * 10;
    while (this.#streams > 0 && Date.now() < answered) await sleep(STREAM_POLL_MS, AbortSignal.timeout(answered - Date.now()));
  }

  /** Followers' streams open on this pod: a drain gives them the grace to read to the end. */
  #streams = 0;

  /** A follower's stream opened here; the returned function says it closed. */
  streamOpened(): () => void {
    this.#streams += 1;
    let closed = false;
    return () => {
      if (!closed) this.#streams -= 1;
      closed = true;
    };
  }

  /** Stops every timer (the app closes). */
  close(): void {
    for (const timer of this.#graceTimers.values()) clearTimeout(timer);
    this.#graceTimers.clear();
    this.#replicas.close();
    this.#held.close();
  }

  /** The run continues here: after a drain handed it over, or its holder (at `from`) stopped answering. */
  #adopt(run: Run, cause: RunMove['cause'], from?: string): void {
    this.#replicas.forget(run.id);
    const move: RunMove = {
      from: run.pod,
      to: this.podName,
      at: Date.now(),
      cause,
      rounds_completed: run.rounds.length,
      attempts_rerun: run.attemptsInFlight,
    };
    run.epoch = nextEpoch(run.epoch, this.#podId);
    this.#held.hold(run, from ?? null);
    run.holder = null;
    run.pod = this.podName;
    run.inFlight.clear();
    run.moves.push(move);
    this.#metrics.runsMoved.inc({ cause, direction: 'in' });
    this.#log.info({ event: 'run_adopted', run_id: run.id, cause, from: move.from }, 'run continues on this pod');
    run.emit({ moved: { ...move, at: new Date(move.at).toISOString() } });
    this.#held.resume(run, run.resumed);
    this.#graceIfUnfollowed(run);
  }

  #graceIfUnfollowed(run: Run): void {
    if (run.spec.detached || run.followers > 0 || run.ended || run.holder !== null || this.#graceTimers.has(run.id)) return;
    const timer = setTimeout(() => {
      this.#graceTimers.delete(run.id);
      if (run.followers === 0 && !run.ended && run.holder === null) void this.cancel(run, REASONS.unfollowed(this.#timings.followGraceMs));
    }, this.#timings.followGraceMs);
    timer.unref();
    this.#graceTimers.set(run.id, timer);
  }

  #clearGrace(id: string): void {
    clearTimeout(this.#graceTimers.get(id));
    this.#graceTimers.delete(id);
  }

  /** Ended runs past the count, the age or the bytes kept are forgotten (./kept.ts). */
  #prune(): void {
    this.#metrics.runsKeptBytes.set(this.#kept.prune(this.#runs));
  }
}
