/**
 * "Turn this failure into a test": one attempt of a run, written as a suite that replays it. Every
 * line the attempt sent (the script's and the simulated user's alike) becomes a scripted turn, with
 * the expectations and criteria that failed on it; the conversation's own failed checks stay on the
 * conversation. The suite runs as it is with `agent-test-gateway run` against the same agent, where a
 * deterministic failure fails again. The runs page's button and `agent-test-gateway capture` both
 * ask `GET /v1/runs/{id}/capture`, which answers this YAML.
 */

import { Document } from 'yaml';
import { invalidRequest } from '../../errors.js';
import type { Side } from '../report/comparison.js';
import type { AttemptReport, CriterionResult, ExpectationResult, TurnReport } from '../report/run-report.js';

/** What capture needs of a run: its agents, conversations, and the attempts each completed so far. */
export interface CapturedRun {
  id: string;
  kind: 'run' | 'comparison';
  /** Still running: an attempt it has not completed yet may come. */
  running: boolean;
  /** The agent ref each side ran (`coach.3`); a run's only side is `candidate`. */
  agents: Record<Side, string | null>;
  conversations: string[];
  /** Attempts (a run) or rounds (a comparison) a conversation may take. */
  budget: number;
  /** The seed of the run's model calls, when known (the judge rules alike with it). */
  seed: number | undefined;
  /** The attempts of a conversation (by index) and side completed so far, in any order. */
  attemptsOf(conversation: number, side: Side): AttemptReport[];
}

/** The attempt asked for: its conversation's name, its number, and for a comparison its side. */
export interface CaptureAsk {
  conversation: string;
  attempt: number;
  side?: Side | undefined;
}

/** The expectations a scripted turn may carry, as the suite writes them. */
const TURN_EXPECTATIONS = new Set([
  'text_matches',
  'text_contains',
  'tool',
  'not_tool',
  'shown',
  'not_shown',
  'ended_by_agent',
  'exit_within_ms',
]);
/** The conversation-level expectations, checked over all turns. */
const CONVERSATION_EXPECTATIONS = new Set(['tools', 'not_tools', 'shown', 'not_shown', 'ended_by_agent']);
/** A criterion id the suite format accepts as it is. */
const CRITERION_ID = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

const failed = (e: ExpectationResult): boolean => e.passed === false;
const failedCriterion = (c: CriterionResult): boolean => c.verdict !== 'passed';

/** The attempt asked for, or a refusal naming the field and the rule. */
function attemptAsked(run: CapturedRun, ask: CaptureAsk): { attempt: AttemptReport; side: Side; index: number } {
  const refuse = (field: string, rule: string) => invalidRequest([{ field, rule }], 'nothing was captured');
  if (ask.side !== undefined && run.kind === 'run') throw refuse('side', 'side applies to a comparison only: this run has one side');
  const side: Side = ask.side ?? 'candidate';
  const index = run.conversations.indexOf(ask.conversation);
  if (index < 0) {
    const names = run.conversations.map((name) => JSON.stringify(name)).join(', ');
    throw refuse('conversation', `conversation must name a conversation of the run: ${names}`);
  }
  if (ask.attempt > run.budget) {
    throw refuse('attempt', `attempt must be at most ${run.budget}: the run takes at most ${run.budget} attempts of a conversation`);
  }
  const attempts = run.attemptsOf(index, side);
  const attempt = attempts.find((a) => a.attempt === ask.attempt);
  const where = `${run.kind === 'comparison' ? `the ${side}'s ` : ''}"${ask.conversation}"`;
  if (attempt === undefined) {
    throw refuse(
      'attempt',
      run.running
        ? `attempt ${ask.attempt} of ${where} has not completed yet: the run is still running (${attempts.length} completed so far)`
        : `attempt ${ask.attempt} of ${where} never ran: the run ended after ${attempts.length} of its attempts`,
    );
  }
  if (attempt.status === 'passed') {
    throw refuse('attempt', `attempt ${ask.attempt} of ${where} passed: capture turns a failed, invalid or broken attempt into a test`);
  }
  return { attempt, side, index };
}

/** A turn's failed checks as its `expect` (a judge's criterion as `judge`); undefined when none failed. */
function turnExpect(turn: TurnReport): Record<string, unknown> | undefined {
  const expect: Record<string, unknown> = {};
  for (const e of turn.expectations.filter(failed)) if (TURN_EXPECTATIONS.has(e.kind)) expect[e.kind] = e.expected;
  const judged = turn.criteria.find(failedCriterion);
  if (judged !== undefined) expect.judge = judged.text;
  return Object.keys(expect).length === 0 ? undefined : expect;
}

/** The conversation's failed checks over all turns and its failed criteria, as its `expect`. */
function conversationExpect(attempt: AttemptReport): Record<string, unknown> | undefined {
  const expect: Record<string, unknown> = {};
  for (const e of attempt.expectations.filter(failed)) if (CONVERSATION_EXPECTATIONS.has(e.kind)) expect[e.kind] = e.expected;
  const criteria = attempt.criteria.filter(failedCriterion).map((c) => (CRITERION_ID.test(c.id) ? { id: c.id, text: c.text } : c.text));
  if (criteria.length > 0) expect.criteria = criteria;
  return Object.keys(expect).length === 0 ? undefined : expect;
}

/** Why a failed check could not be carried: the memory checks need the original suite's fixture. */
function leftOut(attempt: AttemptReport): string[] {
  const memory = attempt.memory;
  if (memory === null) return [];
  const failedMemory = memory.expectations.filter(failed).length + memory.criteria.filter(failedCriterion).length;
  return failedMemory === 0
    ? []
    : [`Its ${failedMemory} failed memory check(s) are not carried: they need the memory fixture of the original suite.`];
}

/** The suite replaying the attempt asked for, as YAML; a refusal (400) when there is no such failed attempt. */
export function captureSuite(run: CapturedRun, ask: CaptureAsk): string {
  const { attempt, side } = attemptAsked(run, ask);
  const agent = run.agents[side];
  const turns = attempt.turns.map((turn) => {
    const expect = turnExpect(turn);
    return expect === undefined ? { line: turn.line } : { line: turn.line, expect };
  });
  const expect = conversationExpect(attempt);
  const connect = Object.fromEntries(
    (['locale', 'time_zone', 'time_offset'] as const).flatMap((field) => (attempt[field] === null ? [] : [[field, attempt[field]]])),
  );
  const suite = {
    ...(agent === null ? {} : { agent }),
    name: `${ask.conversation}: attempt ${ask.attempt} replayed`,
    description:
      `Captured from ${run.kind} ${run.id}${run.kind === 'comparison' ? ` (${side})` : ''}, ` +
      `conversation "${ask.conversation}", attempt ${ask.attempt} (${attempt.status}).`,
    ...(run.seed === undefined ? {} : { seed: run.seed }),
    ...connect,
    conversations: [{ name: ask.conversation, turns, ...(expect === undefined ? {} : { expect }) }],
  };
  const doc = new Document(suite);
  const sources = new Set(attempt.turns.map((turn) => turn.source));
  doc.commentBefore = [
    ` Attempt ${ask.attempt} of "${ask.conversation}", captured from ${run.kind} ${run.id}.`,
    ` Its ${turns.length} line(s)${sources.has('simulated_user') ? ", the simulated user's too," : ''} replayed as scripted turns,`,
    ' with the expectations and criteria that failed. Run it: agent-test-gateway run regression.yaml',
    ...leftOut(attempt).map((note) => ` ${note}`),
  ].join('\n');
  return doc.toString({ lineWidth: 0 });
}
