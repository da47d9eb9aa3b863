import t from 'tap';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { startStack } from './support/stack.js';
import { comparePath } from './support/http.js';

/**
 * Baseline versus candidate: the same suite against `coach` (Published revision 2) and `coach.3`
 * (Preview). The demo agent's revision 3 gives a delivery date without looking the order up (a
 * regression of `tool: lookup_order`) and starts refunds with a tool (a fix of `tool: start_refund`).
 */
const orderLookup = {
  name: 'order lookup',
  turns: [{ line: '#intro' }, { line: 'My order number is 12345', expect: { tool: 'lookup_order', text_contains: 'delivered' } }],
};
const refund = { name: 'refund', turns: [{ line: 'I want a refund', expect: { tool: 'start_refund' } }] };
const steady = { name: 'steady', turns: [{ line: 'hi', expect: { text_contains: 'hi' } }] };

t.test('a candidate that breaks one conversation and fixes another', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', comparePath(), { body: { baseline: 'coach', conversations: [orderLookup, refund, steady] } });
  t.equal(answer.status, 200, answer.text);
  const report = answer.body as ComparisonReport;
  t.same(report.baseline, { agent: 'agent:coach', revision: { ref: 'coach', revision: 2, state: 'Published' } });
  t.same(report.candidate, { agent: 'agent:coach.3', revision: { ref: 'coach', revision: 3, state: 'Preview' } });
  t.equal(report.regressed, true);
  t.same(report.totals, { conversations: 3, regressed: 1, fixed: 1, unchanged: 1, error: 0, undecided: 0, fails_on_both_sides: 0 });

  t.same(report.attempts, { mode: 'sequential', min_attempts: 5, max_attempts: 20 }, 'given neither, sequential from 5 to 20');
  t.equal(report.confidence, 0.95);

  const [order, refunds, same] = report.conversations;
  t.match(order, {
    name: 'order lookup',
    verdict: 'regressed',
    baseline: { status: 'passed', passed: true, pass_rate: 1, pass_rate_interval: { estimate: 1 } },
    candidate: { status: 'failed', passed: false, pass_rate: 0, pass_rate_interval: { estimate: 0 } },
    diverged_at_turn: 2,
  });
  // Every round the baseline passes and the candidate fails: 7 of 7 against 0 of 7 cross the
  // boundary for 0.6 × 0.05/3 = 0.01 (the suite's test holds 0.4 of α) at the third look
  // (sequential p-value 0.0043), long before 20.
  t.match(order!.statistics, { stop: 'decided', rounds: 7, sessions: 14, sessions_budget: 40 });
  t.equal(order!.statistics.p_regressed!.toFixed(4), '0.0043');
  t.ok(order!.statistics.p_regressed! <= order!.statistics.p_needed!, 'the p-value is at or below what Holm needed');
  t.same(order!.statistics.difference!.estimate, -1);
  t.match(
    order!.statistics.summary,
    /^the candidate passes 100 points less often \(95 % interval −100 to −50\); p = 0\.0043: a drop this large would happen by chance 0\.43 % of the time if nothing had changed; 0\.01 or less was needed with 3 conversations$/,
  );
  t.same(order!.baseline.pass_hat_k, [1, 1, 1, 1, 1, 1, 1], 'pass^k for k = 1…7');
  t.same(
    order!.differences.map((d) => [d.kind, d.turn, d.name, d.description, d.baseline.passed, d.candidate.passed]),
    [['expectation', 2, 'tool', 'tool lookup_order', 7, 0]],
    'only the lookup differs: both gave the date',
  );
  t.equal(order!.differences[0]!.candidate.evidence, 'tools called: none');
  t.equal(order!.differences[0]!.baseline.evidence, 'tools called: lookup_order');
  t.match(refunds, { verdict: 'fixed', baseline: { status: 'failed' }, candidate: { status: 'passed' }, diverged_at_turn: 1 });
  t.match(refunds!.statistics, { stop: 'decided', rounds: 7 });
  t.match(same, { verdict: 'unchanged', differences: [], diverged_at_turn: null });
  t.match(same!.statistics, { stop: 'futile', p_regressed: 1 }, 'all passing on both sides: no verdict within reach');
  // Its own rule finds it futile after 7 rounds; it plays on while the suite's test, at its round,
  // still needs it — how far the other two got by then depends on the timing: a round or a few.
  const steadyRounds = same!.statistics.rounds;
  t.ok(steadyRounds >= 7 && steadyRounds < 20, `${steadyRounds} rounds`);
  t.match(same!.statistics.summary, new RegExp(`^no difference found: the candidate passed ${steadyRounds} of ${steadyRounds} against`));
  t.same(report.sessions, { spent: 28 + 2 * steadyRounds, budget: 120 });
  t.match(report.suite, { verdict: 'unchanged', discordant: { baseline_only: 7, candidate_only: 7 } }, 'a regression and a fix cancel out');

  for (const side of ['baseline', 'candidate'] as const) {
    const latency = report.conversations[0]![side].latency;
    t.ok(latency.p50_ms !== null && latency.p95_ms !== null && latency.p50_ms <= latency.p95_ms, `${side} latency p50 ≤ p95`);
    t.equal(report.runs[side].conversations.length, 3, `${side}'s whole run report is there`);
    t.equal(report.runs[side].repeat, 20, `${side}'s run says its budget`);
  }
  t.equal(report.runs.baseline.seed, report.runs.candidate.seed, 'one seed for both sides');
  t.equal(report.seed, report.runs.candidate.seed);
  t.match(report.runs.baseline.run_label, /^cmp-[0-9a-f]{8}:baseline$/);
  t.equal(report.runs.candidate.run_label, report.runs.baseline.run_label.replace(/baseline$/, 'candidate'));
  t.ok(report.notes.some((n) => n.includes('interleaved')));
  const keys = s.engine.record.connections.map((c) => c.path.replace('/socket/pipeline/', ''));
  t.equal(keys.filter((k) => k === 'agent:coach').length, 14 + steadyRounds, '7 + 7 + the steady one’s rounds');
  t.equal(keys.filter((k) => k === 'agent:coach.3').length, 14 + steadyRounds);
  t.ok(
    s.engine.record.connections.every((c) => c.closeCode === 1000 || c.closeCode === undefined),
    'every conversation closed plainly (or is closing)',
  );
});

t.test('attempts interleave baseline and candidate; a fixture is restored before every attempt on both sides', async (t) => {
  const s = await startStack(t);
  const fixture = { units: [{ kind: 'fact', text: 'order 777' }] };
  const answer = await s.call('POST', comparePath(), {
    body: {
      baseline: 'coach',
      device_ref: 'erin',
      repeat: 2,
      memory: { restore: fixture, confirm: true },
      conversations: [{ name: 'returning', turns: [{ line: '#intro', expect: { text_contains: 'order 777' } }] }],
    },
  });
  t.equal(answer.status, 200, answer.text);
  const report = answer.body as ComparisonReport;
  t.match(report.conversations[0], { verdict: 'unchanged', baseline: { status: 'passed' }, candidate: { status: 'passed' } });
  const restores = s.engine.record.memoryRequests.filter((r) => r.path === '/api/memory/restore');
  t.equal(restores.length, 4, 'a restore before each of the 2 attempts on each side');
  for (const r of restores) t.same(r.body, fixture);
  const visits = s.engine.record.connections.filter((c) => c.frames.length > 0);
  t.same(
    visits.map((c) => c.path.replace('/socket/pipeline/agent:', '')),
    ['coach', 'coach.3', 'coach', 'coach.3'],
    'baseline 1, candidate 1, baseline 2, candidate 2',
  );
  for (const [i, visit] of visits.entries()) {
    t.ok(visit.openedAt >= restores[i]!.at, `attempt ${i + 1} started after its own restore`);
    if (i > 0) t.ok(restores[i]!.at >= visits[i - 1]!.openedAt, `restore ${i + 1} came after the attempt before it`);
  }
  t.match(report.runs.candidate.memory, { device_ref: 'mcp:erin', restores: 2 });
  t.match(report.runs.baseline.memory, { device_ref: 'mcp:erin', restores: 2 });
});

t.test('the stream says which side each turn ran on', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', comparePath(), {
    body: { baseline: 'coach', repeat: 1, conversations: [refund] },
    headers: { accept: 'application/x-ndjson' },
  });
  t.equal(answer.status, 200);
  const lines = answer.text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { turn?: { side: string; conversation: string }; report?: ComparisonReport });
  t.same(
    lines.filter((l) => l.turn).map((l) => [l.turn!.side, l.turn!.conversation]),
    [
      ['baseline', 'refund'],
      ['candidate', 'refund'],
    ],
  );
  t.equal(lines.at(-1)!.report!.totals.unchanged, 1, 'one attempt decides nothing');
});

t.test('bad comparisons are refused before anything is sent', async (t) => {
  const s = await startStack(t);
  const cases: Array<[unknown, number, string, RegExp]> = [
    [{ conversations: [steady] }, 400, 'invalid_request', /^baseline is required/],
    [{ baseline: 'a b', conversations: [steady] }, 400, 'invalid_request', /^baseline must be an agent ref such as coach/],
    [{ baseline: 'coach', conversations: [] }, 400, 'invalid_request', /^conversations must list at least one/],
    [
      { baseline: 'coach', repeat: 3, max_attempts: 9, conversations: [steady] },
      400,
      'invalid_request',
      /^max_attempts cannot be given with repeat/,
    ],
    [
      { baseline: 'coach', max_attempts: 4, min_attempts: 5, conversations: [steady] },
      400,
      'invalid_request',
      /must be at most max_attempts \(4\)/,
    ],
    [{ baseline: 'coach', max_attempts: 201, conversations: [steady] }, 400, 'invalid_request', /^max_attempts must be at most 200/],
    [{ baseline: 'coach', confidence: 1, conversations: [steady] }, 400, 'invalid_request', /^confidence must be at most 0\.999/],
    [{ baseline: 'hidden', conversations: [steady] }, 403, 'forbidden', /./],
    [{ baseline: 'draft-only', conversations: [steady] }, 409, 'no_published_revision', /./],
  ];
  for (const [body, status, error, message] of cases) {
    const answer = await s.call('POST', comparePath(), { body });
    t.equal(answer.status, status, JSON.stringify(body));
    t.equal(answer.body.error, error);
    t.match(answer.body.message, message);
  }
  t.equal(s.engine.record.connections.length, 0, 'nothing reached the engine');
  const noModel = await s.call('POST', comparePath(), {
    body: { baseline: 'coach', conversations: [{ simulated_user: { persona: 'p', goal: 'g' } }] },
  });
  t.equal(noModel.status, 409);
  t.equal(noModel.body.error, 'model_not_configured');
});

t.test('simulated users on both sides get the same persona and seed', async (t) => {
  const s = await startStack(t, { model: true });
  const answer = await s.call('POST', comparePath(), {
    body: {
      baseline: 'coach',
      seed: 42,
      max_attempts: 12,
      conversations: [
        {
          name: 'delivery',
          simulated_user: { persona: 'Dana', goal: 'Find out when my order will be delivered.', facts: { order_number: '12345' } },
          expect: { tools: ['lookup_order'], criteria: ['The agent gave a delivery date'] },
        },
      ],
    },
  });
  t.equal(answer.status, 200, answer.text);
  const report = answer.body as ComparisonReport;
  t.equal(report.seed, 42);
  t.match(report.conversations[0], { verdict: 'regressed' });
  t.same(
    report.conversations[0]!.differences.map((d) => [d.kind, d.turn, d.name]),
    [['expectation', null, 'tools']],
    'the judge found a date on both sides; only the lookup differs',
  );
  const systems = s
    .model!.requests.filter((r) => r.body.response_format?.json_schema?.name === 'simulated_user_turn')
    .map((r) => [r.body.seed, r.body.messages?.[0]?.content]);
  t.ok(systems.length >= 2);
  t.ok(
    systems.every(([seed, system]) => seed === 42 && system === systems[0]![1]),
    'the same seed and persona in every call',
  );
  t.ok(report.model_usage.baseline.calls > 0 && report.model_usage.candidate.calls > 0);
  t.equal(report.model_usage.total.calls, report.model_usage.baseline.calls + report.model_usage.candidate.calls);
});
