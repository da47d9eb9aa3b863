/**
 * Reports built by hand for the renderers' tests: each attempt a one-turn conversation whose
 * `tool lookup_order` expectation holds or not as planned, the comparison decided by the real
 * gate (src/stats) round by round, exactly as the runner would feed it, but without a runner.
 */

import { createGate, type GateMode } from '../../src/stats/index.js';
import { comparisonReportOf, type ComparisonReport } from '../../src/suites/report/comparison.js';
import {
  conversationReportOf,
  noUsage,
  totalsOf,
  turnReport,
  type AttemptReport,
  type ConversationReport,
  type RunReport,
  type TurnReport,
} from '../../src/suites/report/run-report.js';

/** An attempt's outcome: passed, failed, or in error (it could not be judged). */
type Outcome = boolean | null;

/** One conversation: each side's outcomes, taken in turn and repeated when the rounds outlast them. */
export interface Plan {
  name: string;
  baseline: Outcome[];
  candidate: Outcome[];
}

let sessions = 0;

/**
 * The turns before the planned one, when an attempt has more than one: the simulated user asking
 * and the agent answering at some length, each turn passing (how big a real attempt's report is).
 */
const leadIn = (count: number, n: number): TurnReport[] =>
  Array.from({ length: count }, (_, i) =>
    turnReport(
      {
        index: i + 1,
        line: `Hi, I ordered a pair of running shoes last week (question ${i + 1}) and nothing has arrived yet.`,
        source: 'simulated_user',
      },
      {
        status: 'passed',
        outcome: 'exit',
        text:
          'I am sorry to hear that your order has not arrived yet. Orders usually ship within two working days, ' +
          `and delivery takes three to five more. Could you tell me your order number so I can look it up? (${n}.${i + 1})`,
        duration_ms: 300 + i,
      },
    ),
  );

function attemptOf(n: number, outcome: Outcome, agent: string, turns = 1): AttemptReport {
  const sessionId = `${agent}-session-${++sessions}`;
  const turn = turnReport(
    { index: turns, line: 'My order number is 12345', source: 'script' },
    outcome === null
      ? { status: 'failed', outcome: 'error', error: { error: 'engine_unavailable', message: 'The engine did not answer.' } }
      : {
          status: outcome ? 'passed' : 'failed',
          outcome: 'exit',
          text: outcome ? 'Your order will be delivered on Friday.' : 'Let me check.',
          tools: outcome ? ['lookup_order'] : [],
          duration_ms: 120 + n,
          expectations: [
            {
              kind: 'tool',
              expected: 'lookup_order',
              passed: outcome,
              evidence: `tools called: ${outcome ? 'lookup_order' : 'none'}`,
              actual: outcome ? ['lookup_order'] : [],
            },
          ],
        },
  );
  return {
    attempt: n,
    status: outcome === null ? 'error' : outcome ? 'passed' : 'failed',
    session_id: sessionId,
    device_ref: null,
    locale: null,
    time_zone: null,
    time_offset: null,
    started_at: '2026-12-02T04:46:20.000Z',
    duration_ms: 130 + n,
    ended_by_agent: false,
    stop_reason: outcome === false ? 'turn_failed' : outcome === null ? 'error' : 'script_end',
    turns: [...leadIn(turns - 1, n), turn],
    expectations: [],
    criteria: [],
    memory: null,
    model_usage: noUsage(),
    error: outcome === null ? { error: 'engine_unavailable', message: 'The engine did not answer.' } : null,
    review: null,
    notes: [],
  };
}

/** A run's report of the conversations given, with their attempts. */
function runOf(agent: string, revision: number, conversations: ConversationReport[], repeat: number, passRate = 1): RunReport {
  const totals = totalsOf(conversations);
  return {
    run_id: `run-${agent}`,
    run_label: `run-${revision}0c0ffee`,
    agent,
    revision: { ref: agent.replace('agent:', ''), revision, state: revision === 2 ? 'Published' : 'Preview' },
    name: 'coach 3 release check',
    passed: conversations.every((c) => c.passed),
    cancelled: null,
    started_at: '2026-12-02T04:46:20.000Z',
    finished_at: '2026-12-02T04:46:31.000Z',
    duration_ms: 11_000,
    parallelism: 10,
    seed: 42,
    prompt_version: 'p1',
    repeat,
    pass_rate: passRate,
    totals,
    model_usage: noUsage(),
    session_ids: conversations.flatMap((c) => c.attempts.map((a) => a.session_id!)),
    memory: null,
    monitor: null,
    conversations,
    notes: [],
  };
}

/** A run of the outcomes given per conversation (each list its attempts). */
export function runFixture(plans: Array<{ name: string; outcomes: Outcome[] }>, passRate = 1): RunReport {
  const repeat = Math.max(...plans.map((p) => p.outcomes.length));
  const conversations = plans.map((plan, index) =>
    conversationReportOf(
      { name: plan.name, index },
      plan.outcomes.map((o, i) => attemptOf(i + 1, o, 'agent:coach')),
      passRate,
    ),
  );
  return runOf('agent:coach', 2, conversations, repeat, passRate);
}

/**
 * A comparison of the plans, decided by the gate: sequential from 5 to 20 rounds unless told
 * otherwise; without the suite's test unless given its share (the conversations' figures the
 * report tests read are those of their own rule at α/K); each attempt one turn unless `turns` says more.
 */
export async function comparisonFixture(
  plans: Plan[],
  options: { confidence?: number; mode?: GateMode; suiteShare?: number; turns?: number } = {},
): Promise<ComparisonReport> {
  const confidence = options.confidence ?? 0.95;
  const gate = createGate({
    confidence,
    conversations: plans.length,
    mode: options.mode ?? { kind: 'sequential', min: 5, max: 20 },
    suiteShare: options.suiteShare ?? 0,
  });
  const states = plans.map(() => gate.conversation());
  const attempts = plans.map(() => ({ baseline: [] as AttemptReport[], candidate: [] as AttemptReport[] }));
  plans.forEach((plan, i) => {
    const state = states[i]!;
    for (let round = 0; gate.goesOn(i) && round < gate.maxRounds; round++) {
      const b = plan.baseline[round % plan.baseline.length]!;
      const c = plan.candidate[round % plan.candidate.length]!;
      attempts[i]!.baseline.push(attemptOf(round + 1, b, 'agent:coach', options.turns));
      attempts[i]!.candidate.push(attemptOf(round + 1, c, 'agent:coach.3', options.turns));
      state.record(b, c);
    }
  });
  const { conversations: verdicts, suite } = await gate.finalize();
  const side = (which: 'baseline' | 'candidate', agent: string, revision: number) =>
    runOf(
      agent,
      revision,
      plans.map((plan, index) => conversationReportOf({ name: plan.name, index }, attempts[index]![which], 1)),
      gate.maxRounds,
    );
  return comparisonReportOf(
    'cmp-0c0ffee',
    { baseline: side('baseline', 'agent:coach', 2), candidate: side('candidate', 'agent:coach.3', 3) },
    { gate, confidence, verdicts, suite, cancelled: null },
    { startedAt: Date.parse('2026-12-02T04:46:20.000Z'), finishedAt: Date.parse('2026-12-02T04:46:31.000Z') },
    [],
  );
}
