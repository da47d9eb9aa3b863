import t from 'tap';
import type { RunReport } from '../src/suites/report/run-report.js';
import { eventually, startStack, type Stack } from './support/stack.js';
import { runPath } from './support/http.js';

/**
 * Simulated users and judges over live sessions, against the engine, platform and model
 * simulators: the model wire, the stop reasons, line rules on simulated lines, criteria, model
 * faults as errors, and the key kept secret.
 */

const KEY = 'sk-test-secret-key';

const shopper = {
  persona: 'Dana, a busy parent who ordered a pair of shoes last week.',
  goal: 'Find out when my order will be delivered.',
  facts: { order_number: '12345' },
};

const run = async (s: Stack, body: unknown) => {
  const answer = await s.call('POST', runPath(), { body });
  return { answer, report: answer.body as RunReport };
};

t.test('a simulated user: one socket, persona, goal and facts verbatim, the agent as the user role', async (t) => {
  const s = await startStack(t, { model: true });
  const { answer, report } = await run(s, {
    seed: 42,
    conversations: [{ name: 'delivery', simulated_user: shopper, expect: { criteria: ['The agent gave a delivery date'] } }],
  });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.match(attempt, { status: 'passed', stop_reason: 'user_done' });
  t.same(
    attempt.turns.map((turn) => [turn.source, turn.line]),
    [
      ['script', '#intro'],
      ['simulated_user', shopper.goal],
      ['simulated_user', 'My order number is 12345.'],
    ],
    'the agent opens, then the simulated user answers what the agent asked',
  );
  t.match(attempt.turns[2]!.text, /delivered on Friday, 4 December 2026/);
  t.match(attempt.criteria, [{ id: 'criterion_1', verdict: 'passed', passed: true, reasoning: /named a date/ }]);
  t.equal(report.seed, 42);

  const connections = s.engine.record.connections;
  t.equal(connections.length, 1, 'one engine socket for the whole conversation');
  t.same(connections[0]!.frames, ['#intro', shopper.goal, 'My order number is 12345.']);
  await eventually(() => connections[0]!.closeCode !== undefined);
  t.equal(connections[0]!.closeCode, 1000, 'closed plainly');

  const requests = s.model!.requests;
  const simulator = requests.filter((r) => r.body.response_format?.json_schema?.name === 'simulated_user_turn');
  const judge = requests.filter((r) => r.body.response_format?.json_schema?.name === 'judge_verdict');
  t.equal(simulator.length, 3, 'one model call per line, and one that said done');
  t.equal(judge.length, 1, "one judge call for the conversation's criteria");
  for (const r of requests) {
    t.equal(r.body.seed, 42, "the run's seed");
    t.equal(r.body.temperature, 0);
    t.equal(r.body.response_format?.json_schema?.strict, true);
    t.equal(r.authorization, `Bearer ${KEY}`);
  }
  t.equal(simulator[0]!.body.model, 'sim-user');
  t.equal(judge[0]!.body.model, 'sim-judge');
  const [system, ...history] = simulator[1]!.body.messages!;
  t.equal(system!.role, 'system');
  t.ok(system!.content.includes(shopper.persona) && system!.content.includes(shopper.goal), 'persona and goal verbatim');
  t.ok(system!.content.includes('- order_number: 12345'), 'the facts verbatim');
  t.same(
    history.map((m) => m.role),
    ['user', 'assistant', 'user'],
    "the agent's words as user messages, the simulated user's own as assistant messages, the agent's latest last",
  );
  t.match(history[0]!.content, /^Hi, I'm coach/);
  t.equal(history[1]!.content, shopper.goal);
  t.match(history[2]!.content, /order number/);
  const transcript = judge[0]!.body.messages!.find((m) => m.role === 'user')!.content;
  t.match(transcript, /Turn 2 \(simulated user\) user: Find out when my order will be delivered\./);
  t.match(transcript, /tools called: lookup_order/);
  t.match(transcript, /The agent ended the conversation: no/);
  t.match(transcript, /- criterion_1: The agent gave a delivery date/);

  t.same(report.model_usage.calls, 4);
  t.ok(report.model_usage.prompt_tokens > 0 && report.model_usage.completion_tokens > 0, 'tokens as the model reported them');
  t.same(report.conversations[0]!.model_usage, report.model_usage);
});

t.test('max_turns, min_turns, and the agent ending it', async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.faults = { fault: 'never_done', role: 'simulator' };
  const { report } = await run(s, {
    conversations: [
      { name: 'talks on', turns: [{ line: '#intro' }], simulated_user: { persona: 'p', goal: 'Chat a little.', max_turns: 3 } },
      { name: 'leaves', simulated_user: { persona: 'p', goal: 'Say bye.' } },
    ],
  });
  const [talks, leaves] = report.conversations.map((c) => c.attempts[0]!);
  t.match(talks, { stop_reason: 'max_turns', status: 'passed' });
  t.equal(talks!.turns.filter((turn) => turn.source === 'simulated_user').length, 3, '3 simulated lines on one socket');
  t.match(leaves, { stop_reason: 'agent_ended', ended_by_agent: true, status: 'passed' });

  s.model!.faults = {};
  const min = await run(s, {
    conversations: [
      {
        simulated_user: { ...shopper, min_turns: 3, max_turns: 4 },
      },
    ],
  });
  const attempt = min.report.conversations[0]!.attempts[0]!;
  t.equal(attempt.turns.filter((turn) => turn.source === 'simulated_user').length, 3, 'a done before min_turns is ignored');
  t.equal(attempt.turns.at(-1)!.line, 'Thank you, that is all I needed.');
  t.equal(attempt.stop_reason, 'user_done');
  t.equal(attempt.turns.length, 4, '#intro and three simulated lines');
});

t.test('a line the model says that breaks the line rules is never sent: an error naming it, closed plainly', async (t) => {
  const s = await startStack(t, { model: true });
  for (const [fault, shown] of [
    ['exit_line', '"#exit"'],
    ['control_line', '"two\\nlines"'],
  ] as const) {
    s.engine.reset();
    s.model!.faults = { fault, role: 'simulator' };
    const { report } = await run(s, { conversations: [{ simulated_user: shopper }, { turns: [{ line: 'hello' }] }] });
    const [bad, fine] = report.conversations;
    t.match(bad, { status: 'error', attempts: [{ status: 'error', stop_reason: 'error' }] });
    t.match(bad!.attempts[0]!.error, { error: 'model_failed', message: `The simulated user's line ${shown} was not sent` });
    t.equal(fine!.status, 'passed', 'the rest of the run goes on');
    const conn = s.engine.record.connections.find((c) => c.sessionId === bad!.attempts[0]!.session_id)!;
    t.same(conn.frames, ['#intro'], 'nothing the model said reached the engine');
    await eventually(() => conn.closeCode !== undefined);
    t.equal(conn.closeCode, 1000);
  }
});

t.test('criteria passing, failing and inconclusive; turn-level judges; conversation-level checks', async (t) => {
  const s = await startStack(t, { model: true });
  const { report } = await run(s, {
    conversations: [
      {
        name: 'scripted',
        turns: [
          { line: '#intro', expect: { judge: 'The agent said "How can I help"' } },
          { line: 'When will order number 12345 be delivered?', expect: { not_tool: 'refund', judge: 'The agent said "refund"' } },
        ],
        expect: {
          tools: 'lookup_order',
          not_tools: ['refund'],
          shown: 'size_chart',
          ended_by_agent: false,
          criteria: [{ id: 'date', text: 'The agent gave a delivery date' }, 'The agent was polite', 'The agent said "tomorrow"'],
        },
      },
    ],
  });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.equal(attempt.status, 'failed');
  t.match(attempt.turns[0]!.criteria, [{ id: 'turn_1', verdict: 'passed' }]);
  t.match(attempt.turns[1], {
    status: 'failed',
    criteria: [{ id: 'turn_2', verdict: 'failed', passed: false, reasoning: /never said "refund"/ }],
  });
  t.match(attempt.turns[1]!.expectations, [{ kind: 'not_tool', passed: true }]);
  t.match(attempt.criteria, [
    { id: 'date', verdict: 'passed', passed: true },
    { id: 'criterion_2', verdict: 'inconclusive', passed: false, reasoning: /stand-in judge/ },
    { id: 'criterion_3', verdict: 'failed', passed: false },
  ]);
  t.match(attempt.expectations, [
    { kind: 'tools', passed: true },
    { kind: 'not_tools', passed: true },
    { kind: 'shown', passed: false, evidence: /never shown size_chart/ },
    { kind: 'ended_by_agent', passed: true },
  ]);
  t.same(report.totals.criteria, { total: 5, passed: 2, failed: 3, skipped: 0 });
  const turnJudge = s.model!.requests[0]!.body.messages![1]!.content;
  t.match(turnJudge, /Turn 1 \(script\) user: #intro/);
  t.notMatch(turnJudge, /Turn 2/, 'a turn-level judge sees the conversation so far');
});

t.test('every model fault ends the attempt as an error, retried once, closed plainly, the run goes on', async (t) => {
  const s = await startStack(t, { model: true });
  const hanging = await startStack(t, { model: true, env: { MODEL_TIMEOUT_MS: '200' } });
  const faults = [
    ['http_503', 'simulator', /HTTP 503/],
    ['hang', 'simulator', /did not answer within 200 ms/],
    ['non_json', 'simulator', /not JSON/],
    ['wrong_ids', 'judge', /unknown criterion "not_asked"/],
    ['missing_criterion', 'judge', /did not rule on criterion_1/],
  ] as const;
  for (const [fault, role, why] of faults) {
    const stack = fault === 'hang' ? hanging : s;
    stack.engine.reset();
    stack.model!.requests.length = 0;
    stack.model!.faults = { fault, role };
    const { answer, report } = await run(stack, {
      conversations: [{ simulated_user: shopper, expect: { criteria: ['The agent gave a delivery date'] } }, { turns: [{ line: 'hi' }] }],
    });
    t.equal(answer.status, 200, `${fault}: still a report`);
    const [hit, other] = report.conversations;
    t.match(hit, { status: 'error', passed: false }, fault);
    t.match(hit!.attempts[0]!.error, { error: 'model_failed', message: why }, fault);
    t.match(hit!.attempts[0]!.criteria, [{ id: 'criterion_1', verdict: 'inconclusive', reasoning: /^not judged/ }]);
    t.equal(other!.status, 'passed', `${fault}: the rest of the run goes on`);
    const failedCalls = stack.model!.requests.filter(
      (r) => (r.body.response_format?.json_schema?.name === 'judge_verdict') === (role === 'judge'),
    );
    t.equal(failedCalls.length >= 2, true, `${fault}: retried once`);
    t.equal(hit!.attempts[0]!.model_usage.calls, stack.model!.requests.length, `${fault}: every call counted`);
    t.equal(report.totals.conversations.error, 1);
    const conn = stack.engine.record.connections.find((c) => c.sessionId === hit!.attempts[0]!.session_id)!;
    await eventually(() => conn.closeCode !== undefined);
    t.equal(conn.closeCode, 1000, `${fault}: closed plainly`);
  }
  const metrics = (await s.call('GET', '/metrics', { token: null })).text;
  t.match(metrics, /agent_test_gateway_model_requests_total\{role="simulator",outcome="http_error"\} 2/);
  const hangMetrics = (await hanging.call('GET', '/metrics', { token: null })).text;
  t.match(hangMetrics, /agent_test_gateway_model_requests_total\{role="simulator",outcome="timeout"\} 2/);
  t.match(metrics, /agent_test_gateway_model_requests_total\{role="judge",outcome="invalid_answer"\} 4/);
  t.match(metrics, /agent_test_gateway_model_tokens_total\{role="simulator",kind="prompt"\} [1-9]/);
  t.match(metrics, /agent_test_gateway_model_request_duration_seconds_count\{role="judge"\} [1-9]/);
  t.notOk(metrics.includes(KEY), 'the key is in no metric');
  t.notOk(s.logs.join('').includes(KEY), 'the key is in no log line');
});

t.test('bad suites: 400 naming the field, nothing sent to the engine or the model', async (t) => {
  const s = await startStack(t, { model: true });
  const cases: Array<[unknown, string, RegExp]> = [
    [{ conversations: [{ simulated_user: { goal: 'g' } }] }, 'conversations[0].simulated_user.persona', /is required/],
    [{ conversations: [{ simulated_user: { ...shopper, max_turns: 51 } }] }, 'conversations[0].simulated_user.max_turns', /at most 50/],
    [
      { conversations: [{ simulated_user: { ...shopper, min_turns: 5, max_turns: 3 } }] },
      'conversations[0].simulated_user.min_turns',
      /at most max_turns/,
    ],
    [
      { conversations: [{ simulated_user: { ...shopper, base_url: 'http://evil' } }] },
      'conversations[0].simulated_user.base_url',
      /never carries a model URL or key/,
    ],
    [{ api_key: 'x', conversations: [{ turns: [{ line: 'hi' }] }] }, 'api_key', /never carries a model URL or key/],
    [{ conversations: [{ simulated_user: { ...shopper, temperature: 3 } }] }, 'conversations[0].simulated_user.temperature', /at most 2/],
    [{ conversations: [{ name: 'x' }] }, 'conversations[0].turns', /turns, or add a simulated_user/],
    [
      { conversations: [{ turns: [{ line: 'hi' }], expect: { criteria: ['a', { id: 'criterion_1', text: 'b' }] } }] },
      'conversations[0].expect.criteria[1].id',
      /unique/,
    ],
    [{ repeat: 21, conversations: [{ turns: [{ line: 'hi' }] }] }, 'repeat', /at most 20/],
    [{ pass_rate: 1.5, conversations: [{ turns: [{ line: 'hi' }] }] }, 'pass_rate', /at most 1/],
  ];
  for (const [body, field, rule] of cases) {
    const answer = await s.call('POST', runPath(), { body });
    t.equal(answer.status, 400, field);
    t.match(answer.body.details.problems, [{ field, rule }], field);
  }
  t.equal(s.engine.record.connections.length + s.engine.record.memoryRequests.length, 0, 'nothing reached the engine');
  t.equal(s.model!.requests.length, 0, 'nothing reached the model');
});

t.test('without a model configured: 409 model_not_configured naming the variable, nothing sent anywhere', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', runPath(), { body: { conversations: [{ simulated_user: shopper }] } });
  t.equal(answer.status, 409);
  t.equal(answer.body.error, 'model_not_configured');
  t.match(answer.body.message, /MODEL_BASE_URL/);
  t.equal(s.engine.record.connections.length, 0);
  t.equal(s.platform.requests.length, 0, 'not even the platform was asked');
  const scripted = await s.call('POST', runPath(), { body: { conversations: [{ turns: [{ line: 'hi' }] }] } });
  t.equal(scripted.status, 200, 'a scripted suite needs no model');
});

t.test('the key goes to the model only: never in a response, a log line or a metric', async (t) => {
  const s = await startStack(t, { model: true, env: { LOG_LEVEL: 'debug' } });
  s.model!.faults = { fault: 'http_503' };
  const { answer } = await run(s, { conversations: [{ simulated_user: shopper }] });
  t.notOk(answer.text.includes(KEY));
  t.ok(
    s.model!.requests.length > 0 && s.model!.requests.every((r) => r.authorization === `Bearer ${KEY}`),
    'the model got it as a bearer token',
  );
  const streamed = await s.call('POST', runPath(), {
    body: { conversations: [{ simulated_user: shopper }] },
    headers: { accept: 'application/x-ndjson' },
  });
  t.notOk(streamed.text.includes(KEY));
  t.match(streamed.text, /"source":"script"/);

  s.model!.faults = {};
  const live = await s.call('POST', runPath(), {
    body: { conversations: [{ simulated_user: shopper }] },
    headers: { accept: 'application/x-ndjson' },
  });
  const lines = live.text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.same(
    lines.map((l) => (l.turn ? `${l.turn.attempt} ${l.turn.turn.source} ${l.turn.turn.line}` : Object.keys(l)[0])),
    ['run', '1 script #intro', `1 simulated_user ${shopper.goal}`, '1 simulated_user My order number is 12345.', 'report'],
    'the run first, each simulated turn streamed as it happens, then the report',
  );
  const metrics = await s.call('GET', '/metrics');
  t.match(metrics.text, /agent_test_gateway_model_requests_total\{role="simulator",outcome="ok"\}/);
  t.notOk(metrics.text.includes(KEY), 'not in a metric');
  const logged = s.logs.join('');
  t.ok(s.logs.length > 0);
  t.notOk(logged.includes(KEY), 'not in a log line');
  t.notOk(logged.includes(KEY.slice(3)), 'not even in part');
});
