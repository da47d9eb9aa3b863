import { runAttempt } from './attempt.js';
import { sleep } from './cancel.js';
import { PROMPT_VERSION } from './prompts.js';
import type { RunContext } from './context.js';
import { restoreFixture, saveSnapshot, usesFixture } from './fixture.js';
import type { HttpMemory, Suite } from './format.js';
import {
  addUsage,
  conversationReportOf,
  noUsage,
  totalsOf,
  type AttemptReport,
  type ConversationReport,
  type RunReport,
} from './report.js';
import { prepareRun, type RunState } from './run-state.js';

// The runner API a comparison interleaves attempts with (prepareRun, runAttempt, conversationReportOf, runReportOf).
export { runAttempt } from './attempt.js';
export { conversationReportOf } from './report.js';
export { prepareRun, type RunState } from './run-state.js';

export const RUN_NOTES = {
  plainClose:
    'Every conversation of the run was closed with a plain socket close, never #exit: about 30 s later the engine runs each ' +
    "session's end-of-conversation work (post-session integrations, end-of-conversation evaluations), once per conversation.",
  usage: 'A run holds real engine sessions: they count towards usage like any other conversation.',
};

/** The units of work of a run: each a list of (conversation, attempt) run in order. */
function unitsOf(state: RunState): Array<Array<[number, number]>> {
  const { repeat } = state.suite;
  const attempts = Array.from({ length: repeat }, (_, k) => k + 1);
  return state.groups.flatMap((group) =>
    group.length === 1 && state.suite.conversations[group[0]!]!.connect.device_ref === undefined
      ? attempts.map((k): Array<[number, number]> => [[group[0]!, k]])
      : [attempts.flatMap((k) => group.map((i): [number, number] => [i, k]))],
  );
}

/**
 * Runs a suite: `repeat` attempts of every conversation, each on a fresh engine session through
 * the registry like any conversation's, in parallel up to the caller's conversation limit. A
 * group of conversations sharing a device runs one after the other, round by round (attempt 1 of
 * each in the order written, then attempt 2…), since they are one simulated user coming back;
 * every attempt of a conversation on no device is a unit of its own.
 */
export async function runSuite(ctx: RunContext, suite: Suite<HttpMemory>): Promise<RunReport> {
  const { registry, caller, config } = ctx;
  const state = prepareRun(ctx, suite);
  // A fixture no conversation's device uses is restored once, before the run.
  if (suite.memory?.restore !== undefined && state.memory !== null && !suite.conversations.some((c) => usesFixture(suite.memory, c))) {
    await restoreFixture(ctx, suite.memory, state.memory, undefined, state.runLabel);
  }
  const units = unitsOf(state);
  const busyElsewhere = registry.list(caller.id).filter((c) => c.state === 'busy' || c.state === 'connecting').length;
  const room = Math.max(1, config.maxConversationsPerCaller - busyElsewhere);
  const parallel = Math.min(units.length, room);
  if (room < config.maxConversationsPerCaller && units.length > room) {
    state.notes.push(
      `${busyElsewhere} of your other conversations had a turn running, so the run held at most ${room} conversations at once ` +
        `(the limit is ${config.maxConversationsPerCaller}).`,
    );
  }
  const attempts: AttemptReport[][] = suite.conversations.map(() => []);
  let next = 0;
  let running = 0;
  let peak = 0;
  const worker = async () => {
    while (next < units.length) {
      for (const [i, k] of units[next++]!) {
        running += 1;
        peak = Math.max(peak, running);
        try {
          attempts[i]![k - 1] = await runAttempt(ctx, state, i, k);
        } finally {
          running -= 1;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  const conversations = suite.conversations.map((spec, i) =>
    conversationReportOf({ name: spec.name, index: i }, attempts[i]!, suite.passRate),
  );
  if (suite.memory?.save === true && state.memory !== null) {
    await sleep(suite.memory.waitMs, ctx.signal);
    await saveSnapshot(ctx, suite.memory, state.memory, state.runId);
  }
  return runReportOf(ctx, state, conversations, peak);
}

/** The run's report from its conversations' reports. */
export function runReportOf(ctx: RunContext, state: RunState, conversations: ConversationReport[], parallelism: number): RunReport {
  const { access, signal } = ctx;
  const notes = [...state.notes, RUN_NOTES.plainClose, RUN_NOTES.usage];
  if (signal.aborted) notes.unshift('The run was cancelled: the caller hung up before it ended.');
  const finishedAt = Date.now();
  const report: RunReport = {
    run_id: state.runId,
    run_label: state.runLabel,
    agent: `agent:${access.agentKey}`,
    revision: { ref: access.agentKey.split('.')[0]!, revision: access.revision, state: access.revisionState },
    name: state.suite.name ?? null,
    passed: !signal.aborted && conversations.every((c) => c.passed),
    started_at: new Date(state.startedAt).toISOString(),
    finished_at: new Date(finishedAt).toISOString(),
    duration_ms: finishedAt - state.startedAt,
    parallelism,
    seed: state.seed,
    prompt_version: PROMPT_VERSION,
    repeat: state.suite.repeat,
    pass_rate: state.suite.passRate,
    totals: totalsOf(conversations),
    model_usage: conversations.reduce((sum, c) => addUsage(sum, c.model_usage), noUsage()),
    session_ids: conversations.flatMap((c) => c.attempts.flatMap((a) => (a.session_id === null ? [] : [a.session_id]))),
    memory: state.memory,
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
