import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { RunLimitFull } from '../../conversations/admission.js';
import type { AgentAccess, AgentRef, Caller } from '../../domain/vocabulary.js';
import { shuttingDown } from '../../errors.js';
import type { RunKind, RunResult } from '../../ops/metrics.js';
import type { ComparisonReport, Side } from '../report/comparison.js';
import type { RunReport, TurnEvent } from '../report/run-report.js';
import type { HttpMemory, Suite } from '../spec/format.js';
import { suiteToRun } from '../spec/request.js';

export { monitorOf } from '../spec/request.js';
import { compareSuite } from './comparison-runner.js';
import { runContext, type RunContext } from './context.js';
import { RunHalted, type RunJournal } from './journal.js';
import { reviewable } from './review.js';
import { RunRoom } from './room.js';
import { comparisonIdentities, prepareRun, runIdentity, type RunGathered, type RunIdentity, type RunState } from './run-state.js';
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

/**
 * A run or comparison the gateway admitted: valid, authorized, on a pod that takes work. `body` is
 * the suite as the front sent it (with the front's overrides): a pod the run moves to checks it
 * again rather than trusting a parsed copy.
 */
export interface Admitted {
  body: unknown;
  suite: Suite<HttpMemory>;
  caller: Caller;
  agent: AgentRef;
  access: AgentAccess;
  /** The monitor a run feeds (its series), if it names one. */
  monitor?: string | undefined;
  /** A comparison's baseline: the revision the candidate (`agent`) is compared with. */
  baseline?: { agent: AgentRef; access: AgentAccess } | undefined;
}

/** Who receives the run's progress, when it is cancelled, and where its completed rounds are kept. */
export interface Running {
  signal: AbortSignal;
  log: FastifyBaseLogger;
  /** Each turn as soon as it has been evaluated; `side` in a comparison. */
  onTurn: ((event: TurnEvent & { side?: Side }) => void) | undefined;
  /** Each time the run starts waiting for room, with the limit that is full and a sentence. */
  onWaiting?: (full: RunLimitFull, why: string) => void;
  journal: RunJournal;
}

/** A run's prepared states: one for a run, one per side for a comparison. */
export type RunStates = { run: RunState } | Record<Side, RunState>;

/** Identities and what was gathered, when a run continues on this pod after a move. */
export type Resumed =
  | { identities: { run: RunIdentity }; gathered: { run: RunGathered } }
  | {
      identities: Record<Side, RunIdentity>;
      gathered: Record<Side, RunGathered>;
    };

/** A run under way: its prepared states (what a move carries besides the rounds) and its report to come. */
export interface Launched<R> {
  states: RunStates;
  report: Promise<R>;
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
  return { body: ask.body, suite, caller, agent, access: await app.authorizer.authorize(caller, agent), monitor: ask.monitor };
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
  return { body: ask.body, suite, caller, agent: ask.candidate, access, baseline };
}

/**
 * A run admitted on another pod, continuing here: its suite checked again (the same rules, the
 * same answer), its caller and access as that pod established them. The caller's token stays on
 * the pod it was sent to: a run's conversations start on the pod that runs it and are never
 * forwarded, so none is needed.
 */
export function readmit(app: FastifyInstance, held: Omit<Admitted, 'suite' | 'caller'> & { callerId: string }): Admitted {
  const { suite } = suiteToRun(held.body, held.agent, app.model !== undefined);
  return { ...held, suite, caller: { id: held.callerId, token: '' } };
}

/**
 * Every run or comparison that ended here counts once: passed, failed (a comparison: something
 * regressed), cancelled, or error; one handed over to another pod counts where it ends.
 */
async function counted<T>(
  app: FastifyInstance,
  kind: RunKind,
  signal: AbortSignal,
  passed: (report: T) => boolean,
  run: () => Promise<T>,
): Promise<T> {
  let result: RunResult | undefined = 'error';
  try {
    const report = await run();
    result = signal.aborted ? 'cancelled' : passed(report) ? 'passed' : 'failed';
    return report;
  } catch (err) {
    if (err instanceof RunHalted) result = undefined;
    throw err;
  } finally {
    if (result !== undefined) app.metrics.suiteRuns.inc({ kind, result });
  }
}

/**
 * The run's room: it refuses an engine session once the journal is halted, which reading it does
 * when this pod's lease on the run lapsed (a pod resumed after a pause, even for an attempt it had
 * decided on before the pause, or a reconnect of a conversation the engine closed meanwhile).
 */
const roomOf = (admitted: Admitted, running: Running): RunRoom =>
  new RunRoom(admitted.suite.concurrency, running.onWaiting, () => !running.journal.halted);

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

/** Starts (or, resumed, continues) a run of `admitted` with id `id`. */
export function launchRun(app: FastifyInstance, admitted: Admitted, id: string, running: Running, resumed?: Resumed): Launched<RunReport> {
  const room = roomOf(admitted, running);
  const ctx = sideContext(app, admitted, { ...running, room }, admitted.agent, admitted.access);
  const state =
    resumed !== undefined && 'run' in resumed.identities
      ? prepareRun(ctx, admitted.suite, resumed.identities.run, (resumed.gathered as { run: RunGathered }).run)
      : prepareRun(ctx, admitted.suite, runIdentity(admitted.suite, id));
  const report = counted(
    app,
    'run',
    running.signal,
    (r: RunReport) => r.passed === true,
    () => monitored(app, admitted, () => runSuite(ctx, state, running.journal)),
  );
  return { states: { run: state }, report };
}

/** A run naming a monitor adds its attempts to the monitor's series when it finishes (none when it failed as a whole). */
async function monitored(app: FastifyInstance, admitted: Admitted, run: () => Promise<RunReport>): Promise<RunReport> {
  const { monitor, agent, access, suite } = admitted;
  if (monitor === undefined) return run();
  const conversations = suite.conversations.map((c) => ({
    name: c.name,
    reviewed: suite.review && reviewable(c),
    attack: c.attack !== undefined,
  }));
  const series = app.metrics.monitorSeries.start(monitor, agent.key, String(access.revision), conversations);
  const report = await run();
  // An attempt the run's cancel cut short says nothing of the agent: not recorded.
  const attempts = report.conversations.flatMap((c) =>
    c.attempts.flatMap((a) =>
      a.status === 'cancelled'
        ? []
        : [{ conversation: c.name, outcome: a.status, responsible: a.review?.responsible, attack: a.attack?.outcome ?? undefined }],
    ),
  );
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

/** Starts (or, resumed, continues) a comparison of `admitted` (which names its baseline) with id `id`. */
export function launchComparison(
  app: FastifyInstance,
  admitted: Admitted & { baseline: NonNullable<Admitted['baseline']> },
  id: string,
  running: Running,
  resumed?: Resumed,
): Launched<ComparisonReport> {
  // Both sides' conversations count under the one concurrency.
  const both = { ...running, room: roomOf(admitted, running) };
  const sides: Record<Side, RunContext> = {
    baseline: sideContext(app, admitted, both, admitted.baseline.agent, admitted.baseline.access, 'baseline'),
    candidate: sideContext(app, admitted, both, admitted.agent, admitted.access, 'candidate'),
  };
  // Each side's run is sized to the gate's budget of rounds.
  const { attempts: plan } = admitted.suite;
  const sized = { ...admitted.suite, repeat: plan.kind === 'repeat' ? plan.attempts : plan.max };
  const prior =
    resumed !== undefined && 'baseline' in resumed.identities
      ? (resumed as Extract<Resumed, { identities: Record<Side, RunIdentity> }>)
      : undefined;
  const identities = prior?.identities ?? comparisonIdentities(admitted.suite, id);
  const states: Record<Side, RunState> = {
    baseline: prepareRun(sides.baseline, sized, identities.baseline, prior?.gathered.baseline),
    candidate: prepareRun(sides.candidate, sized, identities.candidate, prior?.gathered.candidate),
  };
  const report = counted(
    app,
    'comparison',
    running.signal,
    (r: ComparisonReport) => r.regressed === false,
    () => compareSuite(id, sides, states, running.journal),
  );
  return { states, report };
}
