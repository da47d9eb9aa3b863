import { runAttempt } from './attempt.js';
import { cancelledBecause, sleep } from './cancellation.js';
import type { RunContext } from './context.js';
import { restoreFixture, takeSnapshotAfterRun, usesFixture } from './fixture.js';
import { PROMPT_VERSION } from './prompts.js';
import {
  addUsage,
  conversationReportOf,
  noUsage,
  totalsOf,
  type AttemptReport,
  type ConversationReport,
  type RunReport,
} from '../report/run-report.js';
import { RunHalted, type RunJournal } from './journal.js';
import type { RunState } from './run-state.js';

const RUN_NOTES = {
  plainClose:
    'Every conversation of the run was closed with a plain socket close, never #exit: about 30 s later the engine runs each ' +
    "session's end-of-conversation work (post-session integrations, end-of-conversation evaluations), once per conversation.",
  usage: 'A run holds real engine sessions: they count towards usage like any other conversation.',
};

/** One attempt to run: conversation `index` of the suite, attempt `attempt` (1-based). */
export type AttemptRef = [index: number, attempt: number];

/** A unit of work: rounds run one after the other, each round's attempts in order; units run in parallel. */
export type Unit = AttemptRef[][];

/**
 * One unit per group of conversations (a conversation of its own, or those sharing a device: one
 * simulated user coming back), whose round k holds attempt k of each, in the order written.
 */
function groupUnits(state: RunState): Unit[] {
  const attempts = Array.from({ length: state.suite.repeat }, (_, k) => k + 1);
  return state.groups.map((group) => attempts.map((k) => group.map((i): AttemptRef => [i, k])));
}

/** A run's units: a conversation on no device runs its attempts in parallel, each a unit of its own. */
function unitsOf(state: RunState): Unit[] {
  return groupUnits(state).flatMap((unit, g) => {
    const group = state.groups[g]!;
    const fresh = group.length === 1 && state.suite.conversations[group[0]!]!.connect.device_ref === undefined;
    return fresh ? unit.map((round) => [round]) : [unit];
  });
}

/**
 * Runs the units' tasks, as many units at once as the run's concurrency (each task holds one
 * conversation at a time); answers the peak of tasks at once. The registry holds the run to its
 * concurrency too, counting sockets still closing, and under the run budgets a start waits for room.
 * A halted journal starts no further unit.
 */
export async function runUnits(ctx: RunContext, journal: RunJournal, units: Array<Array<() => Promise<void>>>): Promise<number> {
  let next = 0;
  let running = 0;
  let peak = 0;
  const worker = async () => {
    while (next < units.length && !journal.halted) {
      for (const task of units[next++]!) {
        running += 1;
        peak = Math.max(peak, running);
        try {
          await task();
        } finally {
          running -= 1;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(units.length, ctx.room.concurrency) }, worker));
  return peak;
}

/** A fixture no conversation's device uses is restored once, before the run (not again when the run moved). */
export async function restoreUnusedFixture(ctx: RunContext, state: RunState): Promise<void> {
  const { memory } = state.suite;
  if (memory?.restore === undefined || state.memory === null || state.memory.restores > 0) return;
  if (state.suite.conversations.some((c) => usesFixture(memory, c))) return;
  await restoreFixture(ctx, memory, state.memory, undefined, state.runLabel);
}

/** The snapshot after the run, when the suite asked for one. */
export async function saveAfterRun(ctx: RunContext, state: RunState): Promise<void> {
  const { memory } = state.suite;
  if (memory?.save !== true || state.memory === null) return;
  await sleep(memory.waitMs, ctx.signal);
  await takeSnapshotAfterRun(ctx, memory, state.memory, state.runId);
}

/**
 * A round's attempts, run one after the other, with the conversation of each: one the cancel came
 * before is left out, and a halted journal starts no further one (the round runs again elsewhere).
 */
async function runRound(
  ctx: RunContext,
  state: RunState,
  round: AttemptRef[],
  journal: RunJournal,
): Promise<{ attempts: AttemptReport[]; conversations: number[] }> {
  const ran = { attempts: [] as AttemptReport[], conversations: [] as number[] };
  for (const [i, k] of round) {
    if (journal.halted) break;
    const attempt = await runAttempt(ctx, state, i, k);
    if (attempt === null) continue;
    ran.attempts.push(attempt);
    ran.conversations.push(i);
  }
  return ran;
}

/**
 * Runs a suite: `repeat` attempts of every conversation, each on a fresh engine session through
 * the conversation service like any front's turns, in parallel up to the suite's `concurrency`
 * (see Unit for what runs in order). Each completed round goes to the journal; a round the journal
 * already holds (the run moved here from another pod) is taken from it. A halted journal ends the
 * run without a report (RunHalted): what was in flight is abandoned, to run again elsewhere.
 */
export async function runSuite(ctx: RunContext, state: RunState, journal: RunJournal): Promise<RunReport> {
  await restoreUnusedFixture(ctx, state);
  const attempts: AttemptReport[][] = state.suite.conversations.map(() => []);
  const units = unitsOf(state).map((unit, u) =>
    unit.map((round, r) => async () => {
      if (journal.halted) return;
      let ran = journal.completed(u, r + 1);
      if (ran === undefined) {
        // A cancelled run starts nothing more: its report holds the attempts that were made.
        if (ctx.signal.aborted) return;
        journal.starting(u, r + 1, round.length);
        const made = await runRound(ctx, state, round, journal);
        if (journal.halted) return;
        ran = { unit: u, round: r + 1, ...made, sides: [] };
        journal.complete(ran);
      }
      ran.attempts.forEach((attempt, j) => (attempts[ran.conversations[j]!]![attempt.attempt - 1] = attempt));
    }),
  );
  const peak = await runUnits(ctx, journal, units);
  if (journal.halted) throw new RunHalted();
  await saveAfterRun(ctx, state);
  // Attempts a cancellation left unstarted are holes: not reported.
  return runReportOf(
    ctx,
    state,
    attempts.map((made) => made.filter((attempt) => attempt !== undefined)),
    peak,
  );
}

/** A run's conversation the cancel left undecided: not all of its `repeat` attempts ran to their end. */
const cutShort = (suite: RunState['suite'], made: AttemptReport[]): boolean =>
  made.filter((a) => a.status !== 'cancelled').length < suite.repeat;

/**
 * Every engine session an attempt used, in the order it used them, so a person can find each one:
 * an attack's plant, the attempt's own, the attack's control.
 */
const sessionsOf = (a: AttemptReport): string[] =>
  [a.attack?.plant?.session_id, a.session_id, a.attack?.control?.session_id].filter((id) => typeof id === 'string');

/**
 * The run's report from its conversations' attempts. A cancelled run decides nothing (`passed`
 * null, `cancelled` first); `undecided` says which conversations it left undecided (a run's: those
 * whose attempts did not all run; a comparison's side: those the gate had not decided).
 */
export function runReportOf(
  ctx: RunContext,
  state: RunState,
  attempts: AttemptReport[][],
  parallelism: number,
  undecided: (index: number) => boolean = (i) => cutShort(state.suite, attempts[i]!),
): RunReport {
  const { access, signal } = ctx;
  const { suite } = state;
  const conversations: ConversationReport[] = suite.conversations.map((spec, i) =>
    conversationReportOf({ name: spec.name, index: i }, attempts[i]!, suite.passRate, signal.aborted && undecided(i)),
  );
  const waited = ctx.room.note();
  const notes = [...state.notes, ...(waited === undefined ? [] : [waited]), RUN_NOTES.plainClose, RUN_NOTES.usage];
  if (suite.agent !== undefined && suite.agent.key !== ctx.agent.key) {
    notes.unshift(`The suite names ${suite.agent.key}; it ran against ${ctx.agent.key}, as the call asked.`);
  }
  const sessions = conversations.reduce((n, c) => n + c.attempts_total, 0);
  const cancelled = signal.aborted
    ? { reason: cancelledBecause(signal), sessions, sessions_budget: suite.conversations.length * suite.repeat }
    : null;
  if (cancelled !== null) notes.unshift(`The run was cancelled: ${cancelled.reason}.`);
  const finishedAt = Date.now();
  const report: RunReport = {
    run_id: state.runId,
    run_label: state.runLabel,
    agent: `agent:${access.agentKey}`,
    revision: { ref: ctx.agent.ref, revision: access.revision, state: access.revisionState },
    name: suite.name ?? null,
    passed: cancelled === null ? conversations.every((c) => c.passed) : null,
    cancelled,
    started_at: new Date(state.startedAt).toISOString(),
    finished_at: new Date(finishedAt).toISOString(),
    duration_ms: finishedAt - state.startedAt,
    parallelism,
    seed: state.seed,
    prompt_version: PROMPT_VERSION,
    repeat: suite.repeat,
    pass_rate: suite.passRate,
    totals: totalsOf(conversations),
    model_usage: conversations.reduce((sum, c) => addUsage(sum, c.model_usage), noUsage()),
    session_ids: conversations.flatMap((c) => c.attempts.flatMap(sessionsOf)),
    memory: state.memory,
    monitor: null,
    conversations,
    notes,
  };
  ctx.log?.info(
    {
      event: 'run_finished',
      run_id: state.runId,
      run_label: state.runLabel,
      passed: report.passed,
      expectations_failed: report.totals.expectations.failed,
      duration_ms: report.duration_ms,
    },
    'suite run finished',
  );
  return report;
}
