import t from 'tap';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import type { AttemptReport, RunReport, TurnReport } from '../src/suites/report/run-report.js';
import { turnReport } from '../src/suites/report/run-report.js';
import { checkSimulatedUser } from '../src/suites/run/review.js';
import { SPOILED_LINE } from '../src/simulators/model.js';
import { renderReport } from '../src/suites/report/text.js';
import { junitXml } from '../src/suites/report/junit.js';
import { runReportHtml } from '../src/suites/report/html/render.js';
import { startStack, type Stack } from './support/stack.js';
import { comparePath, runPath } from './support/http.js';

/**
 * Whose failure is it: a failed attempt with a simulated user or criteria is reviewed (checks of
 * the simulated user, then the model's failure_review); one the simulated user spoiled is
 * `invalid`, left out of the pass rate, its interval and the gate's test; a review answer outside
 * the schema is `unclear`, said so.
 */

const shopper = {
  persona: 'Dana, a busy parent who ordered a pair of shoes last week.',
  goal: 'Find out when my order will be delivered.',
  facts: { order_number: '12345' },
};
const delivery = { name: 'delivery', simulated_user: shopper, expect: { criteria: ['The agent gave a delivery date'] } };

const run = async (s: Stack, body: unknown) => {
  const answer = await s.call('POST', runPath(), { body });
  t.equal(answer.status, 200, answer.text);
  return answer.body as RunReport;
};
const reviews = (s: Stack) => s.model!.requests.filter((r) => r.body.response_format?.json_schema?.name === 'failure_review');

t.test('a simulated user that spoils attempts: invalid, left out of the pass rate and its interval, counted apart', async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.spoil = { share: 0.3 };
  const report = await run(s, { seed: 7, repeat: 10, conversations: [delivery] });
  const conv = report.conversations[0]!;
  const invalid = conv.attempts.filter((a) => a.status === 'invalid');
  t.ok(invalid.length > 0 && invalid.length < 10, `${invalid.length} of 10 attempts spoiled`);
  for (const a of invalid) {
    t.equal(a.turns.at(-1)!.line, SPOILED_LINE, 'the spoiled line was sent, and the agent closed on it');
    t.same(a.review, {
      responsible: 'simulated_user',
      turn: 2,
      reason: 'The simulated user ended the conversation at turn 2 without saying anything of its goal.',
      by: 'checks',
      note: null,
    });
  }
  t.ok(
    conv.attempts.filter((a) => a.status !== 'invalid').every((a) => a.status === 'passed' && a.review === null),
    'the others passed, unreviewed',
  );
  t.match(conv, {
    status: 'passed',
    passed: true,
    pass_rate: 1,
    attempts_passed: 10 - invalid.length,
    attempts_total: 10,
    attempts_invalid: invalid.length,
    responsibility: { agent: 0, simulated_user: invalid.length, judge: 0, unclear: 0 },
    pass_rate_interval: { estimate: 1 },
  });
  t.equal(report.totals.attempts.invalid, invalid.length);
  t.equal(report.passed, true, 'what the simulated user spoiled does not fail the run');
  t.equal(reviews(s).length, 0, 'a deterministic check decided: no model call');
});

t.test('reports: text, JUnit and HTML say who is responsible, the HTML next to the failing turn', async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.spoil = { share: 0.5 };
  const report = await run(s, {
    seed: 7,
    repeat: 4,
    concurrency: 1,
    conversations: [delivery, { name: 'polite', simulated_user: shopper, expect: { criteria: ['The agent says "sorry <b>"'] } }],
  });
  const [spoiled, polite] = report.conversations;
  t.ok(spoiled!.attempts_invalid > 0 && polite!.responsibility.agent > 0, 'an invalid attempt and an agent failure to show');
  const text = renderReport(report, 'suite');
  t.match(
    text,
    new RegExp(`delivery · passed · .* · ${spoiled!.attempts_invalid} invalid · responsible: simulated_user ${spoiled!.attempts_invalid}`),
  );
  t.match(text, /review: the simulated user \(the attempt is invalid, left out\), turn 2 — The simulated user ended the conversation/);
  t.match(text, /review: the agent, turn 3 — The agent never said "sorry <b>"\./);
  t.match(text, new RegExp(`${report.totals.attempts.invalid} invalid \\(the simulated user spoiled them\\)`));

  const xml = junitXml([{ name: 'suite', file: 'suite.yaml', report }]);
  t.match(xml, /<testcase [^>]*name="delivery \/ attempt \d+ \/ invalid"[^>]*>\s*<skipped message="invalid: review: the simulated user/);
  t.notMatch(xml, /name="delivery \/ attempt \d+ \/ invalid"[^>]*>\s*<failure/, 'an invalid attempt fails nothing');

  const page = runReportHtml(report);
  t.match(page, /<div class="review agent">review: the agent, turn 3 — The agent never said &quot;sorry &lt;b&gt;&quot;\.<\/div>/);
  t.notMatch(page, /sorry <b>/, 'escaped');
  const turn3 = page.indexOf('<div class="no">3</div>');
  t.ok(turn3 > 0 && page.indexOf('class="review agent"', turn3) > turn3, 'the sentence sits in the turn it names');
});

t.test("a monitored run counts its reviewed attempts by who was responsible, for the alerts' annotations", async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.spoil = { share: 0.5 };
  const scripted = { name: 'scripted', turns: [{ line: 'hello', expect: { text_matches: 'Never said' } }] };
  const report = await run(s, {
    seed: 7,
    repeat: 4,
    concurrency: 1,
    monitor: 'nightly',
    conversations: [delivery, { name: 'polite', simulated_user: shopper, expect: { criteria: ['The agent says "sorry <b>"'] } }, scripted],
  });
  const [spoiled, polite] = report.conversations;
  t.ok(spoiled!.attempts_invalid > 0 && polite!.responsibility.agent > 0, 'an invalid attempt and an agent failure to count');
  await s.call('GET', '/metrics'); // the first scrape reads the run's new series at 0
  const metrics = (await s.call('GET', '/metrics')).text;
  const count = (conversation: string, outcome: string, responsible?: string) => {
    const lines = metrics.split('\n').filter((line) => line.startsWith('agent_test_gateway_monitor_attempts_total{'));
    const found = lines.filter(
      (line) =>
        line.includes(`conversation="${conversation}"`) &&
        line.includes(`outcome="${outcome}"`) &&
        (responsible === undefined ? !line.includes('responsible=') : line.includes(`responsible="${responsible}"`)),
    );
    return found.length === 1 ? Number(found[0]!.split(' ').at(-1)) : found.length === 0 ? undefined : NaN;
  };
  t.equal(count('delivery', 'invalid', 'simulated_user'), spoiled!.attempts_invalid, 'invalid: the simulated user spoiled them');
  t.equal(count('delivery', 'invalid'), 0, 'none invalid without a review');
  t.equal(count('polite', 'failed', 'agent'), polite!.responsibility.agent, 'failed on the agent');
  t.equal(count('polite', 'failed', 'judge'), polite!.responsibility.judge, 'on the judge: at 0 from the run on');
  t.equal(count('polite', 'failed', 'unclear'), polite!.responsibility.unclear);
  t.equal(count('scripted', 'failed'), 4, 'a scripted conversation without criteria: failed, never reviewed');
  t.equal(count('scripted', 'failed', 'agent'), undefined, 'and no series by responsibility');
  t.equal(report.monitor!.dropped, 0);
});

t.test('identical agents stay unchanged while the simulated user spoils 30 % of one side’s attempts', async (t) => {
  const s = await startStack(t, { model: true });
  // Revision 3 (the candidate) answers a refund with "I have started your refund"; revision 2 does not:
  // the simulated user spoils only the candidate's conversations. Both give the delivery date alike.
  s.model!.spoil = { share: 0.3, when: /started your refund/ };
  const conversation = { ...delivery, turns: [{ line: 'I want a refund' }] };
  const answer = await s.call('POST', comparePath(), { body: { baseline: 'coach', seed: 3, conversations: [conversation] } });
  t.equal(answer.status, 200, answer.text);
  const report = answer.body as ComparisonReport;
  const [c] = report.conversations;
  t.equal(c!.verdict, 'unchanged', c!.statistics.summary);
  t.equal(report.regressed, false);
  t.equal(c!.baseline.attempts_invalid, 0);
  t.ok(c!.candidate.attempts_invalid > 0, `${c!.candidate.attempts_invalid} candidate attempts invalid`);
  t.equal(c!.candidate.responsibility.simulated_user, c!.candidate.attempts_invalid);
  t.equal(c!.candidate.attempts_error, 0, 'invalid attempts are not errors');
  t.same(c!.candidate.pass_rate_interval.estimate, 1, 'the gate saw only the valid attempts');
  t.equal(c!.differences.length, 0);
  const rounds = c!.statistics.rounds;
  t.equal(c!.baseline.attempts_total, rounds);
  t.equal(c!.candidate.attempts_total, rounds + c!.candidate.attempts_invalid, 'each invalid attempt was run again in its round');
  t.equal(c!.statistics.sessions, 2 * rounds + c!.candidate.attempts_invalid);
  const candidate = report.runs.candidate.conversations[0]!.attempts;
  t.same(
    candidate.map((a) => a.attempt),
    candidate.map((_, k) => k + 1),
    'attempts numbered in the order they ran',
  );
});

t.test('an agent failure: the model reviews it, with persona, goal, facts, transcript, rulings and failed expectations', async (t) => {
  const s = await startStack(t, { model: true });
  const report = await run(s, {
    seed: 5,
    conversations: [
      {
        name: 'polite',
        simulated_user: shopper,
        expect: { tools: ['start_refund'], criteria: ['The agent says "sorry"'] },
      },
    ],
  });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.equal(attempt.status, 'failed');
  t.same(attempt.review, {
    responsible: 'agent',
    turn: 3,
    reason: 'The agent never said "sorry".',
    by: 'model',
    note: null,
  });
  t.same(report.conversations[0]!.responsibility, { agent: 1, simulated_user: 0, judge: 0, unclear: 0 });
  const [request] = reviews(s);
  t.ok(request, 'one failure_review call');
  t.equal(request!.body.seed, 5, "the run's seed");
  t.equal(request!.body.temperature, 0);
  t.equal(request!.body.model, 'sim-judge', "the judge's model");
  t.same(request!.body.response_format?.json_schema?.schema, {
    type: 'object',
    additionalProperties: false,
    required: ['responsible', 'turn', 'reason'],
    properties: {
      responsible: { type: 'string', enum: ['agent', 'simulated_user', 'judge', 'unclear'] },
      turn: { type: ['integer', 'null'] },
      reason: { type: 'string' },
    },
  });
  const content = request!.body.messages!.find((m) => m.role === 'user')!.content;
  for (const part of [shopper.persona, shopper.goal, '- order_number: 12345', 'Turn 2 (simulated user) user: Find out when']) {
    t.ok(content.includes(part), `the review sees ${part}`);
  }
  t.match(content, /- criterion_1: The agent says "sorry" → failed: The agent never said "sorry"\./);
  t.match(content, /- conversation: tools start_refund \(never called start_refund; tools called: lookup_order\)/);
  t.equal(report.model_usage.calls, 5, 'three simulated lines, one ruling, one review: its usage counted');
});

t.test('an inconclusive ruling is the judge’s: shown, and the attempt stays failed', async (t) => {
  const s = await startStack(t, { model: true });
  const report = await run(s, { conversations: [{ ...delivery, expect: { criteria: ['The agent is kind'] } }] });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.equal(attempt.status, 'failed');
  t.match(attempt.review, { responsible: 'judge', turn: null, by: 'model', reason: /criterion_1/ });
  t.match(report.conversations[0], { status: 'failed', attempts_invalid: 0, responsibility: { judge: 1 } });
});

t.test('a review answer outside the schema, or none, is unclear with a note: never a 500', async (t) => {
  const s = await startStack(t, { model: true });
  const cases: Array<[string, RegExp]> = [
    ['non_json', /not JSON \(failure_review was asked for\)/],
    ['unknown_responsible', /unknown responsible party "the weather"/],
    [
      'turn_out_of_range',
      /^The failure review could not answer: the review's turn 8 is not a turn of the transcript \(1–3\) or null \(asked twice\)\.$/,
    ],
    ['http_503', /HTTP 503/],
  ];
  for (const [fault, note] of cases) {
    s.model!.faults = { fault: fault as never, role: 'review' };
    const report = await run(s, { conversations: [{ ...delivery, expect: { criteria: ['The agent says "sorry"'] } }] });
    const attempt = report.conversations[0]!.attempts[0]!;
    t.equal(attempt.status, 'failed', `${fault}: the attempt stays failed`);
    t.match(attempt.review, { responsible: 'unclear', turn: null, by: 'model', note }, fault);
    t.equal(attempt.error, null, `${fault}: the attempt is no error`);
  }
});

t.test('review: false turns it off; a scripted conversation without criteria is never reviewed', async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.spoil = { share: 1 };
  const off = await run(s, { review: false, conversations: [delivery] });
  t.match(off.conversations[0]!.attempts[0], { status: 'failed', review: null });
  const scripted = await run(s, { conversations: [{ turns: [{ line: 'hi', expect: { tool: 'start_refund' } }] }] });
  t.match(scripted.conversations[0]!.attempts[0], { status: 'failed', review: null });
  t.equal(reviews(s).length, 0);
  const bad = await s.call('POST', runPath(), { body: { review: 'no', conversations: [delivery] } });
  t.equal(bad.status, 400);
  t.match(bad.text, /review/);
});

const said = (index: number, line: string, source: TurnReport['source'] = 'simulated_user'): TurnReport =>
  turnReport({ index, line, source }, { status: 'passed', outcome: 'exit', text: 'ok' });
const user = {
  persona: 'p',
  goal: 'Find out when my order will be delivered.',
  facts: {},
  maxTurns: 10,
  minTurns: 3,
  model: undefined,
  temperature: 0,
};
const attemptOf = (turns: TurnReport[], stop: AttemptReport['stop_reason']) => ({ turns, stop_reason: stop });

t.test('the deterministic checks of the simulated user', async (t) => {
  t.match(
    checkSimulatedUser(
      user,
      attemptOf(
        [said(1, '#intro', 'script'), said(2, 'When is my order delivered?'), said(3, 'When is my  ORDER delivered?')],
        'max_turns',
      ),
    ),
    {
      responsible: 'simulated_user',
      turn: 3,
      reason: /repeated its line of turn 2/,
    },
  );
  t.match(checkSimulatedUser(user, attemptOf([said(1, 'Where is my order?'), said(2, '#exit')], 'max_turns')), {
    turn: 2,
    reason: /line rules refuse/,
  });
  t.match(checkSimulatedUser(user, attemptOf([said(1, 'Where is my order?'), said(2, 'Thanks, bye.')], 'agent_ended')), {
    turn: 2,
    reason: 'The simulated user ended the conversation after 2 of its min_turns 3 lines.',
  });
  const three = [said(1, 'Hello there.'), said(2, 'Nice weather today.'), said(3, 'Okay, bye.')];
  t.match(checkSimulatedUser(user, attemptOf(three, 'agent_ended')), { turn: 3, reason: /without saying anything of its goal/ });
  t.equal(checkSimulatedUser(user, attemptOf(three, 'max_turns')), undefined, 'it did not end the conversation: no check fires');
  const onGoal = [said(1, 'Where is my order?'), said(2, 'It is 12345.'), said(3, 'Okay, bye.')];
  t.equal(checkSimulatedUser(user, attemptOf(onGoal, 'agent_ended')), undefined, 'it said its goal');
  t.equal(
    checkSimulatedUser(user, attemptOf([said(1, '#intro', 'script')], 'agent_ended')),
    undefined,
    'no simulated line: nothing to check',
  );
});
