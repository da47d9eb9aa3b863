/**
 * The terminal wording of a run and of a comparison (src/suites/report/text.ts), from reports
 * built here: what a person reads in a CI log must say what passed, what failed and why.
 */

import t from 'tap';
import { createGate, passRateCheck, wilson } from '../src/stats/index.js';
import { comparisonReportOf } from '../src/suites/report/comparison.js';
import type { AttemptReport, ConversationReport, RunReport, TurnReport } from '../src/suites/report/run-report.js';
import { criterionLine, failureLines, renderComparison, renderReport, turnTitle } from '../src/suites/report/text.js';

const noUsage = { calls: 0, prompt_tokens: 0, completion_tokens: 0, duration_ms: 0 };

const turn = (over: Partial<TurnReport> = {}): TurnReport => ({
  index: 1,
  line: 'Where is my order 1234?',
  source: 'script',
  status: 'passed',
  outcome: 'exit',
  text: 'It ships on Monday.',
  tools: ['lookup_order'],
  shown: [],
  ended_by_agent: false,
  duration_ms: 420,
  reconnected: false,
  expectations: [
    { kind: 'tool', expected: 'lookup_order', passed: true, evidence: 'tools called: lookup_order', actual: ['lookup_order'] },
  ],
  criteria: [],
  notes: [],
  error: null,
  skipped_reason: null,
  ...over,
});

const attempt = (turns: TurnReport[], over: Partial<AttemptReport> = {}): AttemptReport => ({
  attempt: 1,
  status: turns.every((x) => x.status !== 'failed') ? 'passed' : 'failed',
  session_id: '11111111-2222-3333-4444-555555555555',
  device_ref: 'mcp:alice',
  locale: 'en-US',
  time_zone: null,
  time_offset: null,
  started_at: '2025-01-01T00:00:00.000Z',
  duration_ms: 500,
  ended_by_agent: false,
  stop_reason: 'script_end',
  turns,
  expectations: [],
  criteria: [],
  memory: null,
  model_usage: noUsage,
  error: null,
  review: null,
  notes: [],
  ...over,
});

const conversation = (name: string, attempts: AttemptReport[]): ConversationReport => {
  const passed = attempts.filter((a) => a.status === 'passed').length;
  return {
    name,
    index: 0,
    status: passed === attempts.length ? 'passed' : passed === 0 ? 'failed' : 'flaky',
    passed: passed === attempts.length,
    pass_rate: passed / attempts.length,
    required_pass_rate: 1,
    pass_rate_interval: wilson(passed, attempts.length),
    pass_rate_check: passRateCheck(passed, attempts.length, 1),
    attempts_passed: passed,
    attempts_total: attempts.length,
    attempts_invalid: 0,
    attempts_cancelled: 0,
    responsibility: { agent: 0, simulated_user: 0, judge: 0, unclear: 0 },
    criteria_splits: [],
    model_usage: noUsage,
    attempts,
  };
};

const run = (conversations: ConversationReport[], over: Partial<RunReport> = {}): RunReport => {
  const turns = conversations.flatMap((c) => c.attempts.flatMap((a) => a.turns));
  const expectations = turns.flatMap((x) => x.expectations);
  const passed = conversations.every((c) => c.passed);
  return {
    run_id: 'r1',
    run_label: 'run-0000abcd',
    agent: 'agent:coach',
    revision: { ref: 'coach', revision: 3, state: 'Published' },
    name: 'orders',
    passed,
    cancelled: null,
    started_at: '2025-01-01T00:00:00.000Z',
    finished_at: '2025-01-01T00:00:01.500Z',
    duration_ms: 1500,
    parallelism: 1,
    seed: 42,
    prompt_version: '1',
    repeat: 1,
    pass_rate: 1,
    totals: {
      conversations: {
        total: conversations.length,
        passed: conversations.filter((c) => c.status === 'passed').length,
        flaky: 0,
        failed: conversations.filter((c) => c.status === 'failed').length,
        error: 0,
        cancelled: 0,
      },
      attempts: {
        total: conversations.length,
        passed: conversations.filter((c) => c.passed).length,
        failed: 0,
        error: 0,
        invalid: 0,
        cancelled: 0,
      },
      turns: {
        total: turns.length,
        passed: turns.filter((x) => x.status === 'passed').length,
        failed: turns.filter((x) => x.status === 'failed').length,
        skipped: turns.filter((x) => x.status === 'skipped').length,
      },
      expectations: {
        total: expectations.length,
        passed: expectations.filter((e) => e.passed === true).length,
        failed: expectations.filter((e) => e.passed === false).length,
        skipped: expectations.filter((e) => e.passed === null).length,
      },
      criteria: { total: 0, passed: 0, failed: 0, skipped: 0 },
    },
    model_usage: noUsage,
    session_ids: [],
    memory: null,
    monitor: null,
    conversations,
    notes: [],
    ...over,
  };
};

const missedTool = turn({
  status: 'failed',
  tools: [],
  text: 'Your order 1234 is on its way.',
  expectations: [{ kind: 'tool', expected: 'lookup_order', passed: false, evidence: 'tools called: none', actual: [] }],
});

t.test('a passing run: the head, each turn, a ✓ per expectation and the summary', async (t) => {
  const text = renderReport(run([conversation('order status', [attempt([turn()])])]), 'orders.yaml');
  t.equal(
    text,
    [
      '✓ coach passes: its conversation passed',
      'orders.yaml — agent:coach · revision 3 (Published) · run label run-0000abcd · seed 42',
      '  ✓ order status · passed',
      '    session 11111111-2222-3333-4444-555555555555 · mcp:alice',
      '    1 > Where is my order 1234?',
      '      < It ships on Monday.',
      '        exit in 420 ms · tools: lookup_order',
      '      ✓ tool lookup_order',
      '  ✓ passed · 1 conversation · 1 turn · expectations: 1 passed, 0 failed · 1.5 s',
      '',
    ].join('\n'),
  );
});

t.test('a failing run says what was expected and what was seen, and FAILED', async (t) => {
  const skipped = turn({
    index: 2,
    line: 'Thanks',
    status: 'skipped',
    outcome: null,
    skipped_reason: 'an earlier turn failed',
    expectations: [],
  });
  const report = run([conversation('order status', [attempt([missedTool, skipped], { stop_reason: 'turn_failed' })])]);
  const text = renderReport(report, 'orders.yaml');
  t.match(text, /^ {2}✗ order status · failed$/m);
  t.match(text, /^ {6}✗ tool lookup_order — tools called: none$/m);
  t.match(text, /^ {4}2 - Thanks {3}\(skipped: an earlier turn failed\)$/m);
  t.match(text, /stopped: turn_failed/);
  t.match(
    text,
    /^ {2}✗ FAILED · 1 conversation \(1 failed\) · 2 turns \(1 failed, 1 skipped\) · expectations: 0 passed, 1 failed · 1\.5 s$/m,
  );
  t.same(failureLines(missedTool), ['tool lookup_order: tools called: none']);
});

t.test('a simulated user’s line is marked, and a criterion shows its verdict and reasoning', async (t) => {
  t.equal(
    turnTitle('refund', { index: 2, line: 'I want my money back', source: 'simulated_user' }),
    'refund / turn 2: [simulated] I want my money back',
  );
  t.equal(turnTitle('refund', { index: 1, line: 'hi', source: 'script' }), 'refund / turn 1: hi');
  t.equal(
    criterionLine({
      id: 'polite',
      text: 'The agent stays polite',
      verdict: 'passed',
      passed: true,
      reasoning: 'It thanked the user.',
      votes: 1,
      agreement: 1,
      split: false,
    }),
    '✓ polite: The agent stays polite — It thanked the user.',
  );
  t.equal(
    criterionLine({
      id: 'refund',
      text: 'The agent starts a refund',
      verdict: 'inconclusive',
      passed: false,
      reasoning: null,
      votes: 0,
      agreement: 0,
      split: false,
    }),
    '✗ refund (inconclusive): The agent starts a refund',
  );
});

/** The gate's decision over `rounds` rounds of one conversation, each the pair of outcomes given. */
async function decided(rounds: number, baselinePassed: boolean, candidatePassed: boolean) {
  const gate = createGate({ conversations: 1, mode: { kind: 'repeat', attempts: rounds } });
  const conversation = gate.conversation();
  for (let i = 0; i < rounds; i++) conversation.record(baselinePassed, candidatePassed);
  const { conversations: verdicts, suite } = await gate.finalize();
  return { gate, confidence: 0.95, verdicts, suite, cancelled: null };
}

t.test('a comparison: the verdict per conversation, what differs, and REGRESSED', async (t) => {
  const eight = <T>(make: () => T): T[] => Array.from({ length: 8 }, make);
  const baseline = run([
    conversation(
      'order status',
      eight(() => attempt([turn()])),
    ),
  ]);
  const candidate = run(
    [
      conversation(
        'order status',
        eight(() => attempt([missedTool])),
      ),
    ],
    {
      agent: 'agent:coach.4',
      revision: { ref: 'coach', revision: 4, state: 'Preview' },
    },
  );
  const report = comparisonReportOf('c1', { baseline, candidate }, await decided(8, true, false), { startedAt: 0, finishedAt: 2000 }, []);
  const text = renderComparison(report, 'orders.yaml');
  t.match(
    text,
    /^orders\.yaml — agent:coach \(revision 3, Published\) → agent:coach\.4 \(revision 4, Preview\) · seed 42 · 95 % confidence · 8 attempts per side$/m,
  );
  t.match(text, /^ {2}✗ order status · REGRESSED · baseline passed 8\/8 · candidate failed 0\/8/m);
  t.match(text, /^ {6}tool lookup_order at turn 1 — baseline 8\/8 \(tools called: lookup_order\), candidate 0\/8 \(tools called: none\)$/m);
  t.match(text, /^ {2}✗ REGRESSED · 1 regressed, 0 fixed, 0 unchanged · 16 of 16 sessions spent · 2\.0 s$/m);

  const same = renderComparison(
    comparisonReportOf('c2', { baseline, candidate: baseline }, await decided(8, true, true), { startedAt: 0, finishedAt: 300 }, []),
    'x',
  );
  t.match(same, /^ {2}✓ no regression · 0 regressed, 0 fixed, 1 unchanged · 16 of 16 sessions spent · 300 ms$/m);
});
