import type { TurnResultView } from '../../conversations/views.js';
import { isGatewayError } from '../../errors.js';
import type { RunContext } from './context.js';
import { conversationEndedEarly, evaluate, evaluateConversation, failTurn, skipTurn } from './expectations.js';
import { errorOf, restoreFixture, usesFixture } from './fixture.js';
import { CANCELLED, sleep } from './cancellation.js';
import { judge } from './judge.js';
import { checkMemory, readUnits, uncheckedMemory, type MemoryRead } from './memory-checks.js';
import type { MemoryEvidence } from './prompts.js';
import type { MemoryExpect } from '../spec/format.js';
import type { AttemptError, AttemptModel } from './model-calls.js';
import { nextStep } from './simulated-user.js';
import { runAttack, settleAttack } from './attack.js';
import { reviewable, reviewFailure } from './review.js';
import { INTRO } from '../../schemas/connect.js';
import type { Criterion, Expectations, SimulatedUser, SuiteConversation } from '../spec/format.js';
import {
  attemptStatus,
  type AttemptMemoryReport,
  type CriterionResult,
  type ExpectationResult,
  noUsage,
  turnReport,
  unjudged,
  type AttemptReport,
  type StopReason,
  type TurnReport,
  type TurnSource,
} from '../report/run-report.js';
import type { RunState } from './run-state.js';
import { closeConversation, nextTurn, startConversation } from './conversation-calls.js';

// One attempt of one conversation: the memory fixture restored first when the conversation opens
// a journey on its device, then its lines on one fresh engine session, each turn evaluated as it
// ends, the conversation closed plainly when done, and what it left in memory checked.

/** An attempt under way: its report, its conversation once started, and why the rest is skipped. */
class AttemptRun {
  /** The last turn's result: the conversation's session and connection as they stand. */
  last: TurnResultView | undefined;
  skip: string | undefined;
  /** Why the attempt ended, set once where it ends; `script_end` when nothing else ended it. */
  stop: StopReason | undefined;
  readonly report: AttemptReport;
  /** Conversation-level checks beyond `expect` (an attack's), listed after them. */
  readonly checks: ExpectationResult[] = [];

  constructor(
    readonly ctx: RunContext,
    readonly state: RunState,
    readonly spec: SuiteConversation,
    readonly index: number,
    attempt: number,
  ) {
    this.report = {
      attempt,
      status: 'passed',
      session_id: null,
      device_ref: spec.connect.device_ref ?? null,
      locale: spec.connect.locale ?? null,
      time_zone: spec.connect.time_zone ?? null,
      time_offset: spec.connect.time_offset ?? null,
      started_at: null,
      duration_ms: 0,
      ended_by_agent: false,
      stop_reason: 'script_end',
      turns: [],
      expectations: [],
      criteria: [],
      memory: null,
      model_usage: noUsage(),
      error: null,
      review: null,
      notes: [],
    };
  }

  #emit(turn: TurnReport): TurnReport {
    this.report.turns.push(turn);
    this.ctx.onTurn?.({
      conversation: this.spec.name,
      conversation_index: this.index,
      attempt: this.report.attempt,
      session_id: this.report.session_id,
      turn,
    });
    return turn;
  }

  /** A turn never sent: listed, its expectations unevaluated, its criterion not judged. */
  skipped(line: string, source: TurnSource, expect: Expectations, criterion?: Criterion): TurnReport {
    const head = { index: this.report.turns.length + 1, line, source };
    const why = this.skip ?? 'not run';
    const criteria = criterion === undefined ? [] : [unjudged(criterion, 'the turn was skipped')];
    return this.#emit(turnReport(head, { expectations: skipTurn(expect), criteria, skipped_reason: why }));
  }

  /**
   * Sends one line and evaluates its turn (with the judge on `criterion`, if given, over the
   * conversation so far). `remaining`: scripted turns after this one (the agent ending the
   * conversation before them fails it). Sets `skip` and `stop` when the attempt cannot go on.
   */
  async say(line: string, source: TurnSource, expect: Expectations, remaining: number, criterion?: Criterion): Promise<TurnReport> {
    const { ctx } = this;
    if (this.skip === undefined && ctx.signal.aborted) this.skip = CANCELLED;
    if (this.skip !== undefined) return this.skipped(line, source, expect, criterion);
    const head = { index: this.report.turns.length + 1, line, source };
    let result: TurnResultView;
    try {
      result =
        this.last === undefined
          ? await startConversation(ctx, { ...this.spec.connect, run_label: this.state.runLabel }, line, this.report.notes)
          : await nextTurn(ctx, this.last.session_id, line);
    } catch (err) {
      // The cancel ended the call: the turn was never answered, like one the cancel came before.
      if (ctx.signal.aborted) {
        this.skip = CANCELLED;
        return this.skipped(line, source, expect, criterion);
      }
      const error = errorOf(err, 'running this turn');
      if (!isGatewayError(err)) ctx.log?.error({ err, session_id: this.report.session_id }, 'a suite turn failed');
      this.skip = `turn ${head.index} did not run (${error.error})`;
      this.fail(error, 'error');
      const expectations = failTurn(expect, 'error', `the turn did not run: ${error.message}`, error);
      const criteria = criterion === undefined ? [] : [unjudged(criterion, 'the turn did not run')];
      return this.#emit(turnReport(head, { status: 'failed', outcome: 'error', expectations, criteria, error }));
    }
    this.last = result;
    const { turn: seen, conversation } = result;
    this.report.session_id = result.session_id;
    this.report.device_ref = conversation.device_ref;
    this.report.locale = conversation.locale;
    this.report.time_zone = conversation.time_zone;
    this.report.time_offset = conversation.time_offset;
    const endedByAgent = conversation.ended_by_agent;
    let expectations;
    if (seen.outcome === 'exit') {
      expectations = evaluate(expect, {
        outcome: seen.outcome,
        text: seen.text,
        tools: seen.tools,
        shown: seen.shown,
        endedByAgent,
        durationMs: seen.duration_ms,
      });
      if (endedByAgent) {
        this.stop = 'agent_ended';
        this.skip = `the agent ended the conversation at turn ${head.index}`;
        if (remaining > 0) expectations.push(conversationEndedEarly(remaining));
      }
    } else {
      const why = `the turn ended with outcome ${seen.outcome} after ${seen.duration_ms} ms, not with its own exit${
        result.notes.length > 0 ? `: ${result.notes[0]}` : ''
      }`;
      expectations = failTurn(expect, seen.outcome, why, { outcome: seen.outcome, duration_ms: seen.duration_ms });
      this.stop = 'turn_failed';
      this.skip =
        seen.outcome === 'cancelled' && ctx.signal.aborted
          ? CANCELLED
          : `turn ${head.index} did not end with its own exit (outcome ${seen.outcome})`;
    }
    if (endedByAgent) this.report.ended_by_agent = true;
    const turn = turnReport(head, {
      status: expectations.every((e) => e.passed === true) ? 'passed' : 'failed',
      outcome: seen.outcome,
      text: seen.text,
      tools: seen.tools,
      shown: seen.shown,
      ended_by_agent: endedByAgent,
      duration_ms: seen.duration_ms,
      reconnected: conversation.reconnected,
      expectations,
      notes: result.notes,
    });
    if (criterion !== undefined) {
      turn.criteria = await this.#judge([...this.report.turns, turn], [criterion]);
      if (!turn.criteria.every((c) => c.passed)) turn.status = 'failed';
    }
    return this.#emit(turn);
  }

  /** `expect.memory` after the plain close: waits for the engine's aggregation unless the conversation did not run. */
  async #checkMemory(expect: MemoryExpect, before: MemoryRead | undefined): Promise<AttemptMemoryReport> {
    const { ctx, report } = this;
    const deviceRef = this.spec.connect.device_ref;
    if (ctx.signal.aborted) return uncheckedMemory(expect, CANCELLED);
    if (before === undefined || deviceRef === undefined || report.session_id === null) {
      return uncheckedMemory(expect, 'the conversation did not start');
    }
    if (report.error !== null) return uncheckedMemory(expect, 'the attempt could not go on');
    return checkMemory(ctx, deviceRef, expect, before, (criteria, memory) => this.#judge(report.turns, criteria, memory));
  }

  /** The model as this attempt asks it: its usage counted into the attempt's, with the run's seed. */
  get asker(): AttemptModel {
    return { model: this.ctx.model, usage: this.report.model_usage, seed: this.state.seed };
  }

  /** The judge's rulings; a judge that fails makes the attempt an error. Nothing is judged once the attempt is one. */
  async #judge(turns: TurnReport[], criteria: Criterion[], memory?: MemoryEvidence): Promise<CriterionResult[]> {
    if (this.report.error !== null) return criteria.map((c) => unjudged(c, 'the attempt could not go on'));
    const judgement = await judge(this.asker, turns, criteria, memory);
    if (judgement.error !== undefined) this.fail(judgement.error);
    return judgement.criteria;
  }

  /**
   * The simulated user's lines, after the scripted turns (after the agent's #intro when there were
   * none), over the same socket, until the user is done, runs out of lines, or the attempt cannot go on.
   */
  async simulate(user: SimulatedUser): Promise<void> {
    if (this.report.turns.length === 0) await this.say(INTRO, 'script', {}, 0);
    for (let said = 0; this.skip === undefined; said += 1) {
      if (this.ctx.signal.aborted) {
        this.skip = CANCELLED;
        return;
      }
      const step = await nextStep(this.asker, user, this.report.turns, said);
      if ('stop' in step) {
        this.stop ??= step.stop;
        return;
      }
      if ('error' in step) return this.fail(step.error);
      await this.say(step.line, 'simulated_user', {}, 0);
    }
  }

  /** The run's cancel cut the attempt short (it had not ended otherwise first). */
  get cut(): boolean {
    return this.skip === CANCELLED;
  }

  /** The cancel came before anything was sent: no session, every turn skipped. Not an attempt at all. */
  get neverStarted(): boolean {
    return this.cut && this.report.session_id === null && this.report.turns.every((t) => t.status === 'skipped');
  }

  /** The attempt could not go on: an error, not a failure; nothing more is sent. */
  fail(error: AttemptError, stop: StopReason = 'error'): void {
    if (this.report.error === null) this.report.error = error;
    this.stop ??= stop;
    this.skip ??= `the attempt could not go on (${error.error})`;
  }

  /**
   * Closes the conversation plainly, has the judge rule on its criteria, checks what it left in
   * memory (from `before`, read before it started), and sums the attempt up; a failure is reviewed
   * (unless the suite says `review: false`), and one the simulated user spoiled is `invalid`.
   */
  async finish(started: number, before: MemoryRead | undefined): Promise<AttemptReport> {
    const { report } = this;
    if (this.last !== undefined) report.notes.push(...(await closeConversation(this.ctx, this.last)));
    report.expectations = [...evaluateConversation(this.spec.expect, report.turns), ...this.checks];
    if (this.spec.criteria.length > 0) {
      report.criteria = this.cut
        ? this.spec.criteria.map((c) => unjudged(c, CANCELLED))
        : await this.#judge(report.turns, this.spec.criteria);
    }
    if (this.spec.memory !== undefined) report.memory = await this.#checkMemory(this.spec.memory, before);
    // The cancel cut it short, or came before its memory could be checked: it says nothing of the agent.
    const cut = this.cut || (this.ctx.signal.aborted && report.memory?.status === 'not_checked' && report.error === null);
    report.stop_reason = cut ? 'cancelled' : (this.stop ?? 'script_end');
    report.status = cut ? 'cancelled' : attemptStatus(report);
    settleAttack(report);
    if (report.status === 'failed' && this.state.suite.review && reviewable(this.spec) && !this.ctx.signal.aborted) {
      report.review = await reviewFailure(this.asker, this.spec, report);
      if (report.review.responsible === 'simulated_user') report.status = 'invalid';
    }
    report.duration_ms = Date.now() - started;
    return report;
  }
}

/**
 * Whether conversation `index` opens its journey (the first of the conversations on its device):
 * the fixture is restored before a journey, not between its visits, which build on each other.
 */
const startsJourney = (state: RunState, index: number): boolean => state.groups.some((group) => group[0] === index);

/**
 * Runs attempt `attempt` (1-based) of conversation `index` of the prepared run; null when the
 * run's cancel came before it sent anything (not an attempt: no session, nothing to count).
 */
export async function runAttempt(ctx: RunContext, state: RunState, index: number, attempt: number): Promise<AttemptReport | null> {
  const spec = state.suite.conversations[index]!;
  const run = new AttemptRun(ctx, state, spec, index, attempt);
  await sleep(spec.waitMs, ctx.signal);
  const started = Date.now();
  run.report.started_at = new Date(started).toISOString();
  const { memory } = state.suite;
  if (usesFixture(memory, spec) && startsJourney(state, index) && state.memory !== null && !ctx.signal.aborted) {
    try {
      await restoreFixture(ctx, memory!, state.memory, spec.connect, state.runLabel);
    } catch (err) {
      const error = errorOf(err, 'restoring the memory fixture');
      state.memory.error = error;
      run.fail({ error: error.error, message: `The memory fixture could not be restored before the attempt: ${error.message}` });
      if (!isGatewayError(err)) ctx.log?.error({ err, run_id: state.runId }, 'memory restore before an attempt failed');
    }
  }
  if (spec.attack !== undefined) {
    await runAttack(run, spec.attack, (visit) => new AttemptRun(ctx, state, visit, index, attempt));
    return run.finish(started, undefined);
  }
  const deviceRef = spec.connect.device_ref;
  const before = spec.memory !== undefined && deviceRef !== undefined && !ctx.signal.aborted ? await readUnits(ctx, deviceRef) : undefined;
  const last = spec.turns.length - 1;
  for (const [j, turn] of spec.turns.entries()) await run.say(turn.line, 'script', turn.expect, last - j, turn.judge);
  if (spec.simulatedUser !== undefined) await run.simulate(spec.simulatedUser);
  if (run.neverStarted) return null;
  return run.finish(started, before);
}
