import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Conversation } from '../conversations/conversation.js';
import { closeNotes, END_OF_CONVERSATION_NOTE } from '../conversations/notes.js';
import type { ConversationRegistry, TurnResult } from '../conversations/registry.js';
import { type AgentAccess, type Caller, settingsFrom } from '../domain/vocabulary.js';
import type { EngineAdapter } from '../engine/adapter.js';
import { summarize } from '../engine/elements.js';
import { isGatewayError } from '../errors.js';
import { snapshotMemory } from '../memory/snapshots.js';
import type { Config } from '../ops/config.js';
import { conversationEndedEarly, evaluate, failTurn, skipTurn } from './expectations.js';
import type { HttpMemory, Suite, SuiteConversation } from './format.js';
import { totalsOf, type ConversationReport, type MemoryReport, type RunReport, type TurnEvent, type TurnReport } from './report.js';

/**
 * Runs a suite: its conversations in parallel (up to the caller's conversation limit; those
 * sharing a device_ref one after the other, in the order written, since they are one simulated
 * user coming back), each turn through the registry like any conversation's, each conversation
 * closed plainly when done. Memory is restored before and read after, when the suite says so.
 */
export interface RunContext {
  registry: ConversationRegistry;
  engine: EngineAdapter;
  config: Config;
  caller: Caller;
  access: AgentAccess;
  /** Aborted when the caller hangs up: running turns are cancelled, the rest skipped. */
  signal: AbortSignal;
  /** Each turn as soon as it has been evaluated (the streamed form of the route). */
  onTurn?: (event: TurnEvent) => void;
  log?: FastifyBaseLogger;
}

export const RUN_NOTES = {
  plainClose:
    "Every conversation of the run was closed with a plain socket close, never #exit: about 30 s later the engine runs each session's end-of-conversation work (post-session integrations, end-of-conversation evaluations), once per conversation.",
  usage: 'A run holds real engine sessions: they count towards usage like any other conversation.',
  aggregation:
    "The engine aggregates a session into memory about 30 s after its connection closes, so a snapshot taken sooner may not hold this run's conversations yet; set memory.wait_ms (e.g. 35000) to wait for them.",
  restoreClears: "The restore was the engine's own delete-then-write: it cleared the simulated user's memory before loading the snapshot.",
  warmUp:
    'The device had never connected, so the run first opened one engine session for it without sending a line (closed plainly) to create its engine user, which the restore needs.',
};

const CANCELLED = 'the run was cancelled: the caller hung up';
const ROOM_RETRY_MS = 250;

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

const errorOf = (err: unknown): { error: string; message: string } =>
  isGatewayError(err)
    ? { error: err.code, message: err.message }
    : { error: 'internal', message: 'The gateway failed while running this turn; it has been logged.' };

export async function runSuite(ctx: RunContext, suite: Suite<HttpMemory>): Promise<RunReport> {
  const { registry, caller, access, config, signal } = ctx;
  const runId = randomUUID();
  const runLabel = suite.runLabel ?? `run-${runId.slice(0, 8)}`;
  const startedAt = Date.now();
  const notes: string[] = [];
  ctx.log?.info(
    { event: 'run_started', run_id: runId, run_label: runLabel, agent: access.agentKey, conversations: suite.conversations.length },
    'suite run started',
  );

  const memory: MemoryReport | null =
    suite.memory === undefined ? null : { device_ref: suite.memory.deviceRef, restored: null, snapshot: null, error: null, notes: [] };
  if (suite.memory?.restore !== undefined && memory !== null) {
    memory.restored = await restoreMemory(ctx, suite, runLabel, memory);
  }

  // Conversations sharing a device run one after the other; everything else in parallel.
  const groups: number[][] = [];
  const byDevice = new Map<string, number[]>();
  suite.conversations.forEach((conv, i) => {
    const device = conv.connect.device_ref;
    if (device === undefined) return groups.push([i]);
    const group = byDevice.get(device);
    if (group !== undefined) return group.push(i);
    const fresh = [i];
    byDevice.set(device, fresh);
    return groups.push(fresh);
  });
  const busyElsewhere = registry.list(caller.id).filter((c) => c.state === 'busy' || c.state === 'connecting').length;
  const room = Math.max(1, config.maxConversationsPerCaller - busyElsewhere);
  const parallel = Math.min(groups.length, room);
  if (room < config.maxConversationsPerCaller && groups.length > room) {
    notes.push(
      `${busyElsewhere} of your other conversations had a turn running, so the run held at most ${room} conversations at once (the limit is ${config.maxConversationsPerCaller}).`,
    );
  }

  const reports: ConversationReport[] = new Array(suite.conversations.length);
  let nextGroup = 0;
  let running = 0;
  let peak = 0;
  const worker = async () => {
    while (nextGroup < groups.length) {
      const group = groups[nextGroup++]!;
      for (const i of group) {
        running += 1;
        peak = Math.max(peak, running);
        try {
          reports[i] = await runConversation(ctx, suite.conversations[i]!, i, runLabel);
        } finally {
          running -= 1;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));

  if (suite.memory?.save === true && memory !== null) {
    await sleep(suite.memory.waitMs, signal);
    try {
      memory.snapshot = await snapshotMemory(ctx.engine, suite.memory.deviceRef);
      if (suite.memory.waitMs < 30_000) memory.notes.push(RUN_NOTES.aggregation);
    } catch (err) {
      memory.error = errorOf(err);
      memory.notes.push(`The snapshot after the run could not be taken: ${memory.error.message}`);
      if (!isGatewayError(err)) ctx.log?.error({ err, run_id: runId }, 'memory snapshot after the run failed');
    }
  }

  notes.push(RUN_NOTES.plainClose, RUN_NOTES.usage);
  if (signal.aborted) notes.unshift('The run was cancelled: the caller hung up before it ended.');
  const totals = totalsOf(reports);
  const finishedAt = Date.now();
  const report: RunReport = {
    run_id: runId,
    run_label: runLabel,
    agent: `agent:${access.agentKey}`,
    name: suite.name ?? null,
    passed: !signal.aborted && totals.conversations.failed === 0 && totals.expectations.failed === 0,
    started_at: new Date(startedAt).toISOString(),
    finished_at: new Date(finishedAt).toISOString(),
    duration_ms: finishedAt - startedAt,
    parallelism: peak,
    totals,
    session_ids: reports.flatMap((r) => (r.session_id === null ? [] : [r.session_id])),
    memory,
    conversations: reports,
    notes,
  };
  ctx.log?.info(
    {
      event: 'run_finished',
      run_id: runId,
      run_label: runLabel,
      passed: report.passed,
      expectations_failed: totals.expectations.failed,
      duration_ms: report.duration_ms,
    },
    'suite run finished',
  );
  return report;
}

async function restoreMemory(ctx: RunContext, suite: Suite<HttpMemory>, runLabel: string, memory: MemoryReport): Promise<number> {
  const { engine, access } = ctx;
  const deviceRef = memory.device_ref;
  let userId: string;
  try {
    userId = await engine.deviceUser(deviceRef);
  } catch (err) {
    if (!isGatewayError(err) || err.code !== 'device_not_found') throw err;
    // The engine creates a device's user when it first connects; restoring needs that user.
    const first = suite.conversations.find((c) => c.connect.device_ref === deviceRef);
    const settings = settingsFrom({ ...first?.connect, device_ref: deviceRef, run_label: runLabel }, () => deviceRef);
    const socket = await engine.connect({ agentKey: access.agentKey, settings, signIn: access.signIn });
    socket.close(1000);
    memory.notes.push(RUN_NOTES.warmUp);
    userId = await engine.deviceUser(deviceRef);
  }
  const restored = await engine.restoreMemory(userId, suite.memory!.restore!.units);
  memory.notes.push(RUN_NOTES.restoreClears);
  return restored;
}

const CLOSED_BY_RUN = 'The run closed the connection after the last turn (a plain close).';

async function runConversation(ctx: RunContext, spec: SuiteConversation, index: number, runLabel: string): Promise<ConversationReport> {
  const { registry, caller, access, signal } = ctx;
  const report: ConversationReport = {
    name: spec.name,
    session_id: null,
    device_ref: spec.connect.device_ref ?? null,
    locale: spec.connect.locale ?? null,
    time_zone: spec.connect.time_zone ?? null,
    time_offset: spec.connect.time_offset ?? null,
    passed: true,
    ended_by_agent: false,
    started_at: null,
    duration_ms: 0,
    turns: [],
    notes: [],
  };
  await sleep(spec.waitMs, signal);
  const started = Date.now();
  report.started_at = new Date(started).toISOString();

  let conv: Conversation | undefined;
  let skip: string | undefined;
  const last = spec.turns.length - 1;
  for (const [j, turn] of spec.turns.entries()) {
    const base = { index: j + 1, line: turn.line };
    const nothing = { tools: [] as string[], shown: [] as string[], ended_by_agent: false, reconnected: false };
    if (skip === undefined && signal.aborted) skip = CANCELLED;
    if (skip !== undefined) {
      const skipped: TurnReport = {
        ...base,
        status: 'skipped',
        outcome: null,
        text: null,
        ...nothing,
        duration_ms: null,
        expectations: skipTurn(turn.expect),
        notes: [],
        error: null,
        skipped_reason: skip,
      };
      report.turns.push(skipped);
      ctx.onTurn?.({ conversation: spec.name, conversation_index: index, session_id: report.session_id, turn: skipped });
      continue;
    }

    let result: TurnResult;
    try {
      result =
        conv?.sessionId === undefined
          ? await startWithRoom(ctx, { ...spec.connect, run_label: runLabel }, turn.line, report)
          : await registry.turn(caller, access, conv.sessionId, {}, { line: turn.line, signal });
    } catch (err) {
      const error = errorOf(err);
      if (!isGatewayError(err)) ctx.log?.error({ err, session_id: report.session_id }, 'a suite turn failed');
      const failed: TurnReport = {
        ...base,
        status: 'failed',
        outcome: 'error',
        text: null,
        ...nothing,
        duration_ms: null,
        expectations: failTurn(turn.expect, 'error', `the turn did not run: ${error.message}`, error),
        notes: [],
        error,
        skipped_reason: null,
      };
      report.turns.push(failed);
      ctx.onTurn?.({ conversation: spec.name, conversation_index: index, session_id: report.session_id, turn: failed });
      skip = `turn ${j + 1} did not run (${error.error})`;
      continue;
    }

    conv = result.conversation;
    report.session_id = conv.sessionId ?? null;
    report.device_ref = conv.settings.deviceRef;
    report.locale = conv.settings.locale;
    report.time_zone = conv.settings.timeZone;
    report.time_offset = conv.settings.timeOffset;
    const { record } = result;
    const summary = summarize(record.elements);
    const seen = {
      outcome: record.outcome,
      text: summary.text,
      tools: summary.tools,
      shown: summary.shown,
      endedByAgent: record.endedByAgent,
      durationMs: record.durationMs,
    };
    let expectations;
    if (record.outcome === 'exit') {
      expectations = evaluate(turn.expect, seen);
      if (record.endedByAgent && j < last) {
        expectations.push(conversationEndedEarly(last - j));
        skip = `the agent ended the conversation at turn ${j + 1}`;
      }
    } else {
      const why = `the turn ended with outcome ${record.outcome} after ${record.durationMs} ms, not with its own exit${
        record.notes.length > 0 ? `: ${record.notes.at(-1)}` : ''
      }`;
      expectations = failTurn(turn.expect, record.outcome, why, { outcome: record.outcome, duration_ms: record.durationMs });
      skip =
        record.outcome === 'cancelled' && signal.aborted
          ? CANCELLED
          : `turn ${j + 1} did not end with its own exit (outcome ${record.outcome})`;
    }
    const done: TurnReport = {
      ...base,
      status: expectations.every((e) => e.passed === true) ? 'passed' : 'failed',
      outcome: record.outcome,
      text: summary.text,
      tools: summary.tools,
      shown: summary.shown,
      ended_by_agent: record.endedByAgent,
      duration_ms: record.durationMs,
      reconnected: result.reconnected,
      expectations,
      notes: result.notes,
      error: null,
      skipped_reason: null,
    };
    if (record.endedByAgent) report.ended_by_agent = true;
    report.turns.push(done);
    ctx.onTurn?.({ conversation: spec.name, conversation_index: index, session_id: report.session_id, turn: done });
  }

  if (conv?.sessionId !== undefined) {
    try {
      registry.closeByCaller(caller, access.agentKey, conv.sessionId);
    } catch (err) {
      // Forgotten already (the remembered set is bounded): nothing left to close.
      if (!isGatewayError(err)) throw err;
    }
    report.notes.push(...(conv.closeCause === 'caller' ? [CLOSED_BY_RUN] : closeNotes(conv).filter((n) => n !== END_OF_CONVERSATION_NOTE)));
  }
  report.passed = report.turns.every((t) => t.status !== 'failed');
  report.duration_ms = Date.now() - started;
  return report;
}

/**
 * Starts a conversation; when the caller's (or the pod's) limit has no idle conversation to
 * evict, waits for room — another run or turn of this caller ends — for up to one turn budget.
 */
async function startWithRoom(
  ctx: RunContext,
  connect: Parameters<ConversationRegistry['start']>[2],
  line: string,
  report: ConversationReport,
): Promise<TurnResult> {
  const deadline = Date.now() + ctx.config.turnBudgetMs;
  let waited = false;
  for (;;) {
    try {
      const result = await ctx.registry.start(ctx.caller, ctx.access, connect, { line, signal: ctx.signal });
      if (waited) report.notes.push('The conversation waited for room under the conversation limit before it started.');
      return result;
    } catch (err) {
      const full = isGatewayError(err) && (err.code === 'caller_conversation_limit' || err.code === 'pod_conversation_limit');
      if (!full || Date.now() + ROOM_RETRY_MS > deadline || ctx.signal.aborted) throw err;
      waited = true;
      await sleep(ROOM_RETRY_MS, ctx.signal);
    }
  }
}
