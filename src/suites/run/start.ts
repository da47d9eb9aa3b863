import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { AgentAccess, AgentRef, Caller } from '../../domain/vocabulary.js';
import { shuttingDown } from '../../errors.js';
import type { RunKind, RunResult } from '../../ops/metrics.js';
import type { ComparisonReport, Side } from '../report/comparison.js';
import type { RunReport, TurnEvent } from '../report/run-report.js';
import type { HttpMemory, Suite } from '../spec/format.js';
import { suiteToRun } from '../spec/request.js';

export { monitorOf } from '../spec/request.js';
import { compareSuite } from './comparison-runner.js';
import { runContext } from './context.js';
import { RunRoom } from './room.js';
import { runSuite } from './runner.js';

/**
 * The one start of a run and of a comparison, whichever front asks (the REST routes, the MCP
 * tools): the suite checked (every problem a 400, nothing sent), the pod not draining, the caller
 * authorized on every agent involved, then the run, counted in `suite_runs_total` by kind and result.
 */

/** A front's call, before anything was checked. `authenticate` is asked only once the suite is valid. */
interface Ask {
  body: unknown;
  authenticate: () => Promise<Caller>;
}

/** A run or comparison the gateway admitted: valid, authorized, on a pod that takes work. */
export interface Admitted {
  suite: Suite<HttpMemory>;
  caller: Caller;
  agent: AgentRef;
  access: AgentAccess;
  /** The monitor a run feeds (its series), if it names one. */
  monitor?: string | undefined;
  /** A comparison's baseline: the revision the candidate (`agent`) is compared with. */
  baseline?: { agent: AgentRef; access: AgentAccess };
}

/** Who receives the run's progress, and when it is cancelled. */
export interface Running {
  signal: AbortSignal;
  log: FastifyBaseLogger;
  /** Each turn as soon as it has been evaluated; `side` in a comparison. */
  onTurn: ((event: TurnEvent & { side?: Side }) => void) | undefined;
}

function refuseWhileDraining(app: FastifyInstance, what: 'run' | 'comparison'): void {
  if (app.conversationRegistry.stats.draining) throw shuttingDown(`retry the ${what} on another pod`);
}

/** A run of `body` against `agent` (or the suite's own agent when the call names none). */
export async function admitRun(
  app: FastifyInstance,
  ask: Ask & { agent: AgentRef | undefined; monitor: string | undefined },
): Promise<Admitted> {
  const { suite, agent } = suiteToRun(ask.body, ask.agent, app.model !== undefined);
  refuseWhileDraining(app, 'run');
  const caller = await ask.authenticate();
  return { suite, caller, agent, access: await app.authorizer.authorize(caller, agent), monitor: ask.monitor };
}

/** A comparison of `candidate` with `baseline`: Viewer (and a runnable revision) on both agents' projects. */
export async function admitComparison(
  app: FastifyInstance,
  ask: Ask & { candidate: AgentRef; baseline: AgentRef },
): Promise<Admitted & { baseline: NonNullable<Admitted['baseline']> }> {
  const { suite } = suiteToRun(ask.body, ask.candidate, app.model !== undefined);
  refuseWhileDraining(app, 'comparison');
  const caller = await ask.authenticate();
  const access = await app.authorizer.authorize(caller, ask.candidate);
  const baseline = { agent: ask.baseline, access: await app.authorizer.authorize(caller, ask.baseline) };
  return { suite, caller, agent: ask.candidate, access, baseline };
}

/** Every run or comparison that started counts once: passed, failed (a comparison: something regressed), cancelled, or error. */
async function counted<T>(
  app: FastifyInstance,
  kind: RunKind,
  signal: AbortSignal,
  passed: (report: T) => boolean,
  run: () => Promise<T>,
): Promise<T> {
  let result: RunResult = 'error';
  try {
    const report = await run();
    result = signal.aborted ? 'cancelled' : passed(report) ? 'passed' : 'failed';
    return report;
  } finally {
    app.metrics.suiteRuns.inc({ kind, result });
  }
}

const sideContext = (
  app: FastifyInstance,
  admitted: Admitted,
  running: Running & { room: RunRoom },
  agent: AgentRef,
  access: AgentAccess,
  side?: Side,
) => {
  const { onTurn } = running;
  return runContext(app, {
    caller: admitted.caller,
    agent,
    access,
    signal: running.signal,
    room: running.room,
    log: running.log,
    onTurn: onTurn && (side === undefined ? onTurn : (event: TurnEvent) => onTurn({ ...event, side })),
  });
};

export const startRun = (app: FastifyInstance, admitted: Admitted, running: Running): Promise<RunReport> =>
  counted(
    app,
    'run',
    running.signal,
    (report: RunReport) => report.passed,
    () => {
      const room = new RunRoom(admitted.suite.concurrency);
      return monitored(app, admitted, () =>
        runSuite(sideContext(app, admitted, { ...running, room }, admitted.agent, admitted.access), admitted.suite),
      );
    },
  );

/** A run naming a monitor adds its attempts to the monitor's series when it finishes (none when it failed as a whole). */
async function monitored(app: FastifyInstance, admitted: Admitted, run: () => Promise<RunReport>): Promise<RunReport> {
  const { monitor, agent, access, suite } = admitted;
  if (monitor === undefined) return run();
  const names = suite.conversations.map((c) => c.name);
  const series = app.metrics.monitorSeries.start(monitor, agent.key, String(access.revision), names);
  const report = await run();
  const attempts = report.conversations.flatMap((c) => c.attempts.map((a) => ({ conversation: c.name, outcome: a.status })));
  const dropped = series.finish(attempts, Date.parse(report.finished_at));
  report.monitor = { name: monitor, recorded: attempts.length - dropped, dropped };
  if (dropped > 0) {
    report.notes.push(
      `${dropped} of this run's attempts were not recorded for monitor ${monitor}: this pod already holds ` +
        `MAX_MONITOR_SERIES (${app.config.maxMonitorSeries}) label sets of the monitors' series.`,
    );
  }
  return report;
}

export const startComparison = (
  app: FastifyInstance,
  admitted: Admitted & { baseline: NonNullable<Admitted['baseline']> },
  running: Running,
): Promise<ComparisonReport> =>
  counted(
    app,
    'comparison',
    running.signal,
    (report: ComparisonReport) => !report.regressed,
    () => {
      // Both sides' conversations count under the one concurrency.
      const both = { ...running, room: new RunRoom(admitted.suite.concurrency) };
      return compareSuite(
        {
          baseline: sideContext(app, admitted, both, admitted.baseline.agent, admitted.baseline.access, 'baseline'),
          candidate: sideContext(app, admitted, both, admitted.agent, admitted.access, 'candidate'),
        },
        admitted.suite,
      );
    },
  );
