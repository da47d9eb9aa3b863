import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { isGatewayError } from '../errors.js';
import type { Metrics } from '../ops/metrics.js';
import type { ComparisonReport } from '../suites/report/comparison.js';
import type { RunReport } from '../suites/report/run-report.js';
import { RunHalted } from '../suites/run/journal.js';
import { launchComparison, launchRun, readmit, type Admitted, type Launched, type Resumed } from '../suites/run/start.js';
import { resumedOf } from './checkpoint.js';
import type { Run, RunStatus } from './run.js';
import type { RunSiblings } from './siblings.js';

type ComparisonAdmitted = Admitted & { baseline: NonNullable<Admitted['baseline']> };

/**
 * The runs this pod executes (it holds them): their runners, how they end (report or error), a
 * cancel, and the hand-over of a drain. Whether a run may go on here is decided in ./holding.ts.
 */
export class HeldRuns {
  readonly #executions = new Map<string, Promise<void>>();
  readonly #app: FastifyInstance;
  readonly #metrics: Metrics;
  readonly #log: FastifyBaseLogger;
  readonly #siblings: () => RunSiblings;
  /** A run ended here (its follow grace is over). */
  readonly #ended: (run: Run) => void;

  constructor(deps: {
    app: FastifyInstance;
    metrics: Metrics;
    log: FastifyBaseLogger;
    siblings: () => RunSiblings;
    ended: (run: Run) => void;
  }) {
    this.#app = deps.app;
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#siblings = deps.siblings;
    this.#ended = deps.ended;
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
        // The last change (its end) is pushed before the watch ends.
        siblings.replicate(run);
        unwatch();
      }),
    );
  }

  #finish(run: Run, report: RunReport | ComparisonReport): void {
    this.#ended(run);
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
    if (!isGatewayError(err)) this.#log.error({ err, run_id: run.id }, 'a run failed');
    const error = isGatewayError(err)
      ? { error: err.code, message: err.message }
      : { error: 'internal', message: 'The gateway failed during the run; it has been logged.' };
    run.end('error', { error }, JSON.stringify(error));
  }
}
