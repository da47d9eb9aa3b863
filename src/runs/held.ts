import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { isGatewayError } from '../errors.js';
import type { FenceReason, Metrics } from '../ops/metrics.js';
import type { ComparisonReport } from '../suites/report/comparison.js';
import type { RunReport } from '../suites/report/run-report.js';
import { RunHalted } from '../suites/run/journal.js';
import { launchComparison, launchRun, readmit, type Admitted, type Launched, type Resumed } from '../suites/run/start.js';
import { resumedOf } from './checkpoint.js';
import { Leases } from './fence.js';
import type { Run, RunStatus } from './run.js';
import type { PushOutcomes, RunSiblings } from './siblings.js';

type ComparisonAdmitted = Admitted & { baseline: NonNullable<Admitted['baseline']> };

/**
 * The runs this pod holds: their runners, how they end (report or error), a cancel, and the fence
 * (./fence.ts) that says whether this pod still knows it holds each (./holding.ts decides). A run
 * whose lease lapsed stops starting attempts (its runner halts, without a report) and goes on
 * from its journal once its siblings acknowledge it again; a run fenced by a sibling that knows a
 * newer holder is followed there.
 */
export class HeldRuns implements PushOutcomes {
  readonly #executions = new Map<string, Promise<void>>();
  /** The runs whose runner is under way here, looked at often enough that a lapsed lease ends their turns at once. */
  readonly #executing = new Set<Run>();
  readonly #leaseCheck: NodeJS.Timeout;
  readonly leases: Leases;
  readonly #app: FastifyInstance;
  readonly #metrics: Metrics;
  readonly #log: FastifyBaseLogger;
  readonly #siblings: () => RunSiblings;
  /** A run ended here (its follow grace is over). */
  readonly #ended: (run: Run) => void;
  /** A draining pod resumes nothing: its runs are handed over. */
  readonly #draining: () => boolean;

  constructor(deps: {
    app: FastifyInstance;
    metrics: Metrics;
    log: FastifyBaseLogger;
    siblings: () => RunSiblings;
    ended: (run: Run) => void;
    takeoverMs: number;
    draining: () => boolean;
  }) {
    this.#draining = deps.draining;
    this.#app = deps.app;
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#siblings = deps.siblings;
    this.#ended = deps.ended;
    this.leases = new Leases({ takeoverMs: deps.takeoverMs, addresses: () => this.#siblings().addresses });
    // Reading `halted` halts a run whose lease lapsed: its turns in flight end now, not at their next step.
    this.#leaseCheck = setInterval(() => this.#executing.forEach((run) => run.halted), Math.max(20, Math.floor(deps.takeoverMs / 8)));
    this.#leaseCheck.unref();
  }

  /** Stops the lease check (the app closes). */
  close(): void {
    clearInterval(this.#leaseCheck);
  }

  /**
   * The run is held here from now on: started here (`from` undefined), or taken over from the pod
   * at `from` (a takeover; a drain's pod hands the run over and keeps no holder's record: null).
   */
  hold(run: Run, from?: string | null): void {
    if (from === undefined) this.leases.started(run.id);
    else this.leases.adopted(run.id, from ?? undefined);
    run.leaseHolds = () => {
      if (this.#mayGoOn(run)) return true;
      if (!this.leases.fenced(run.id)) this.#fenced(run, 'lease_lapsed');
      return false;
    };
  }

  /** A cancelled run starts nothing more: it writes its report whatever its lease, unless a newer holder fenced it. */
  #mayGoOn(run: Run): boolean {
    return this.leases.holds(run.id) || (run.cancelled && !this.leases.fenced(run.id));
  }

  pushesTo(run: Run, address: string): boolean {
    return this.leases.pushesTo(run.id, address);
  }

  sending(run: Run, address: string): number {
    return this.leases.sending(run.id, address);
  }

  /** A sibling acknowledged a push: a run whose lease had lapsed goes on when it holds again. */
  acknowledged(run: Run, address: string, sentAt: number, lines: number): void {
    this.leases.acknowledged(run.id, address, sentAt, lines);
    this.resumeIfHeld(run);
  }

  unanswered(run: Run, address: string, absent: boolean): void {
    this.leases.unanswered(run.id, address, absent);
    if (absent) this.resumeIfHeld(run);
  }

  refusedAsStale(run: Run, address: string): void {
    this.fence(run, address, 'stale');
  }

  /**
   * A sibling knows a newer holder of a run held here (it refused a push as stale, or pushed the
   * newer epoch): the run halts here without a report and is followed at `address`.
   */
  fence(run: Run, address: string, reason: Exclude<FenceReason, 'lease_lapsed'>): void {
    if (run.holder !== null || run.ended) return;
    this.leases.fence(run.id);
    this.#fenced(run, reason);
    run.halt();
    run.holder = address;
    this.leases.release(run.id);
    run.changed();
  }

  /** A run held here whose runner halted when its lease lapsed goes on from its journal, once it holds again. */
  resumeIfHeld(run: Run): void {
    if (run.holder !== null || run.ended || this.executing(run.id) || this.#draining() || !this.#mayGoOn(run)) return;
    run.reopen();
    this.resume(run, this.resumedOf(run));
  }

  #fenced(run: Run, reason: FenceReason): void {
    this.#metrics.runsFenced.inc({ reason });
    this.#log.warn({ event: 'run_fenced', run_id: run.id, reason }, 'this pod stops starting attempts of the run');
  }

  /** Whether the runner of a run is under way here. */
  executing(id: string): boolean {
    return this.#executions.has(id);
  }

  /** Resolves when the runner of a run here has stopped (at once when none runs). */
  settled(id: string): Promise<void> {
    return this.#executions.get(id) ?? Promise.resolve();
  }

  /** Cancels a run held here: its running turns end with a plain close, its report says so. */
  async cancel(run: Run, why: string): Promise<void> {
    if (run.ended || run.holder !== null) return;
    run.cancel(why);
    // A run halted by a lapsed lease ends now, with the report of what it completed.
    this.resumeIfHeld(run);
    await this.settled(run.id);
  }

  /** Continues a run here from its journal (after a move, or a drain with no sibling); an error ends it if it cannot be admitted again. */
  resume(run: Run, resumed: Resumed | undefined): void {
    let admitted: Admitted;
    try {
      admitted = readmit(this.#app, run.spec);
    } catch (err) {
      this.#fail(run, err);
      return;
    }
    this.execute(run, admitted, resumed);
  }

  /** What the runner prepared here, or what the run carried when it moved here. */
  resumedOf(run: Run): Resumed | undefined {
    return run.states === undefined ? run.resumed : resumedOf(run.states);
  }

  /** Runs (or continues, `resumed`) the runner of a run held here, and ends the run with what it answers. */
  execute(run: Run, admitted: Admitted, resumed?: Resumed): void {
    const log = this.#log.child({ run_id: run.id });
    const running = {
      signal: run.signal,
      log,
      journal: run,
      onTurn: (turn: object) => {
        if (!run.halted) run.emit({ turn });
      },
      onWaiting: (full: { limit: string; held: number }, why: string) => {
        if (!run.halted) run.emit({ waiting: { limit: full.limit, held: full.held, message: why } });
      },
    };
    let launched: Launched<RunReport | ComparisonReport>;
    try {
      launched =
        run.spec.kind === 'run'
          ? launchRun(this.#app, admitted, run.id, running, resumed)
          : launchComparison(this.#app, admitted as ComparisonAdmitted, run.id, running, resumed);
    } catch (err) {
      this.#fail(run, err);
      return;
    }
    run.states = launched.states;
    this.#metrics.runsRunning.inc();
    this.#executing.add(run);
    const siblings = this.#siblings();
    const unwatch = run.watch(() => siblings.replicate(run));
    siblings.replicate(run);
    const done = launched.report.then(
      (report) => this.#finish(run, report),
      (err: unknown) => {
        if (!(err instanceof RunHalted)) this.#fail(run, err);
      },
    );
    this.#executions.set(
      run.id,
      done.finally(() => {
        this.#metrics.runsRunning.dec();
        this.#executions.delete(run.id);
        this.#executing.delete(run);
        // The last change (its end) is pushed before the watch ends.
        siblings.replicate(run);
        unwatch();
        // Halted by a lapsed lease that holds again meanwhile: it goes on.
        this.resumeIfHeld(run);
      }),
    );
  }

  #finish(run: Run, report: RunReport | ComparisonReport): void {
    this.#ended(run);
    this.leases.release(run.id);
    let status: RunStatus;
    if (run.cancelled) status = 'cancelled';
    else if ('regressed' in report)
      status = report.regressed ? 'failed' : report.totals.error === report.totals.conversations ? 'error' : 'passed';
    else status = report.passed ? 'passed' : report.totals.conversations.error === report.totals.conversations.total ? 'error' : 'failed';
    const body = report as unknown as Record<string, unknown>;
    run.end(status, { report: body }, JSON.stringify({ report: body }));
  }

  #fail(run: Run, err: unknown): void {
    this.#ended(run);
    this.leases.release(run.id);
    if (!isGatewayError(err)) this.#log.error({ err, run_id: run.id }, 'a run failed');
    const error = isGatewayError(err)
      ? { error: err.code, message: err.message }
      : { error: 'internal', message: 'The gateway failed during the run; it has been logged.' };
    run.end('error', { error }, JSON.stringify(error));
  }
}
