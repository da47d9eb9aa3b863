/**
 * A turn's and a conversation's deterministic checks (src/suites/run/expectations.ts), alone:
 * what passes, what fails, the evidence each gives, and the order they are reported in.
 */

import t from 'tap';
import { turnReport, type TurnReport } from '../src/suites/report/run-report.js';
import {
  conversationEndedEarly,
  evaluate,
  evaluateConversation,
  failTurn,
  quote,
  skipTurn,
  type Observed,
} from '../src/suites/run/expectations.js';

const seen = (over: Partial<Observed> = {}): Observed => ({
  outcome: 'exit',
  text: 'Your order 1234 ships on Monday.',
  tools: ['lookup_order'],
  shown: ['card:order'],
  endedByAgent: false,
  durationMs: 400,
  ...over,
});

const byKind = (results: ReturnType<typeof evaluate>) => Object.fromEntries(results.map((r) => [r.kind, r.passed]));

t.test('each check, passing and failing', async (t) => {
  const passing = evaluate(
    {
      text_matches: 'order \\d+',
      text_contains: ['ORDER', 'monday'],
      tool: 'lookup_order',
      not_tool: 'start_refund',
      shown: 'card:order',
      not_shown: 'card:refund',
      ended_by_agent: false,
      exit_within_ms: 500,
    },
    seen(),
  );
  t.same(
    passing.map((r) => r.kind),
    ['text_matches', 'text_contains', 'tool', 'not_tool', 'shown', 'not_shown', 'ended_by_agent', 'exit_within_ms'],
    'in the order of the checks, whatever order they were declared in',
  );
  t.ok(
    passing.every((r) => r.passed === true),
    'all pass',
  );

  const failing = evaluate(
    {
      exit_within_ms: 100,
      text_matches: '/^hello/i',
      text_contains: ['order', 'refund'],
      tool: 'start_refund',
      not_tool: 'lookup_order',
      shown: 'card:refund',
      not_shown: 'card:order',
      ended_by_agent: true,
    },
    seen(),
  );
  t.same(byKind(failing), {
    text_matches: false,
    text_contains: false,
    tool: false,
    not_tool: false,
    shown: false,
    not_shown: false,
    ended_by_agent: false,
    exit_within_ms: false,
  });
  const evidence = Object.fromEntries(failing.map((r) => [r.kind, r.evidence]));
  t.equal(evidence.text_matches, 'the text "Your order 1234 ships on Monday." does not match /^hello/i');
  t.equal(evidence.text_contains, 'the text "Your order 1234 ships on Monday." lacks "refund"', 'names only what is missing');
  t.equal(evidence.tool, 'tools called: lookup_order');
  t.equal(evidence.exit_within_ms, 'the turn ended with its exit after 400 ms, over 100 ms');
});

t.test('exit_within_ms needs the turn to end with its own exit', async (t) => {
  const [result] = evaluate({ exit_within_ms: 10_000 }, seen({ outcome: 'timeout', durationMs: 90_000 }));
  t.equal(result!.passed, false);
  t.equal(result!.evidence, 'the turn ended with outcome timeout after 90000 ms, not with its own exit');
  t.same(result!.actual, { outcome: 'timeout', duration_ms: 90000 });
});

t.test('a turn that failed or was skipped lists its expectations without evaluating them', async (t) => {
  const failed = failTurn({ tool: 'lookup_order', shown: 'card:order' }, 'timeout', 'no exit within 90000 ms', null);
  t.same(
    failed.map((r) => [r.kind, r.passed]),
    [
      ['turn_completed', false],
      ['tool', false],
      ['shown', false],
    ],
  );
  t.equal(failed[0]!.evidence, 'no exit within 90000 ms');
  t.match(failed[1]!.evidence, /outcome timeout/);
  const skipped = skipTurn({ not_tool: 'x' });
  t.same(skipped, [{ kind: 'not_tool', expected: 'x', passed: null, evidence: 'not evaluated: the turn was skipped', actual: null }]);
  t.same(skipTurn({}), [], 'nothing declared, nothing listed');
});

t.test('the agent ending the conversation with turns left', async (t) => {
  t.match(conversationEndedEarly(1), { kind: 'conversation_continues', passed: false, expected: /the 1 turn after this one$/ });
  t.match(conversationEndedEarly(3), { expected: /the 3 turns after this one$/ });
});

/** A turn that ran and passed (exit, 'hello'), as the runner reports it, with `over` on top. */
const turn = ({ index = 1, ...over }: Partial<TurnReport>): TurnReport =>
  turnReport({ index, line: 'hi', source: 'script' }, { status: 'passed', outcome: 'exit', text: 'hello', duration_ms: 10, ...over });

t.test('conversation checks read every turn that ran, and none that was skipped', async (t) => {
  const turns = [
    turn({ tools: ['lookup_order'], shown: ['card:order'] }),
    turn({ index: 2, tools: ['lookup_order', 'start_refund'], ended_by_agent: true }),
    turn({ index: 3, status: 'skipped', tools: ['never_run'], shown: ['card:never'] }),
  ];
  const results = evaluateConversation(
    {
      tools: ['lookup_order', 'never_run'],
      not_tools: ['start_refund'],
      shown: ['card:order'],
      not_shown: ['card:never'],
      ended_by_agent: true,
    },
    turns,
  );
  t.same(byKind(results), { tools: false, not_tools: false, shown: true, not_shown: true, ended_by_agent: true });
  const tools = results.find((r) => r.kind === 'tools')!;
  t.equal(tools.evidence, 'never called never_run; tools called: lookup_order, start_refund', 'a skipped turn calls nothing');
  t.same(tools.actual, ['lookup_order', 'start_refund'], 'each tool once');
  t.same(evaluateConversation({}, turns), [], 'nothing declared, nothing checked');
});

t.test('quotes are cut at 200 characters', async (t) => {
  t.equal(quote('short'), '"short"');
  t.equal(quote('x'.repeat(250)), JSON.stringify(`${'x'.repeat(200)}…`));
});
