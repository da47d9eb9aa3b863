/**
 * The plan before a comparison over REST (`POST /v1/comparisons/plan`, a real Fastify on loopback)
 * and MCP (`plan_comparison`, the SDK's client): the same figures as the CLI's `plan`, the answer
 * as openapi.yaml's ComparisonPlan, bad input a 400 naming the field and the rule, any caller the
 * platform authenticates (no agent is involved), nothing sent to the engine.
 */

import t from 'tap';
import { planComparison, planLine } from '../src/stats/plan.js';
import { validatorAt } from './support/openapi.js';
import { mcpClient, textOf } from './support/mcp.js';
import { type Json } from './support/http.js';
import { startStack } from './support/stack.js';

const PLAN = '/v1/comparisons/plan';

t.test('REST and MCP answer the CLI’s plan, as ComparisonPlan', async (t) => {
  const s = await startStack(t);
  const body = { conversations: 3, baseline_rate: 0.9, drop: 0.5, concurrency: 6, session_seconds: 10 };
  const request = { baselineRates: [0.9, 0.9, 0.9], drop: 0.5, confidence: 0.95, minAttempts: 5, concurrency: 6, sessionSeconds: 10 };
  const plan = await planComparison(request);
  const expected = {
    conversations: 3,
    baseline_rates: [0.9, 0.9, 0.9],
    drop: 0.5,
    confidence: 0.95,
    min_attempts: 5,
    concurrency: 6,
    session_seconds: 10,
    ...plan,
    line: planLine(request, plan),
  };
  const rest = await s.call('POST', PLAN, { body });
  t.equal(rest.status, 200, rest.text);
  t.same(rest.body, expected);
  const validate = validatorAt('/components/schemas/ComparisonPlan');
  t.ok(validate(rest.body), 'the answer is a ComparisonPlan', { errors: validate.errors });

  const client = await mcpClient(t, s);
  const tool: Json = await client.callTool({ name: 'plan_comparison', arguments: body });
  t.notOk(tool.isError, textOf(tool));
  t.same(tool.structuredContent, expected, 'the tool answers what the route answers');
  t.equal(textOf(tool), expected.line, 'and says the plan in one line');

  // A report's rates: a comparison's baseline side, a conversation in error left out.
  const report = {
    conversations: [
      { baseline: { pass_rate: 0.8, status: 'flaky' } },
      { baseline: { pass_rate: 1, status: 'passed' } },
      { baseline: { pass_rate: 0, status: 'error' } },
    ],
  };
  const fromReport = await s.call('POST', PLAN, { body: { report, drop: 0.5 } });
  t.equal(fromReport.status, 200, fromReport.text);
  t.same(fromReport.body.baseline_rates, [0.8, 1]);
  t.equal(
    fromReport.body.max_attempts,
    (await planComparison({ ...request, baselineRates: [0.8, 1], concurrency: 10, sessionSeconds: 30 })).max_attempts,
  );
  const viaTool: Json = await client.callTool({ name: 'plan_comparison', arguments: { report, drop: 0.5 } });
  t.same(viaTool.structuredContent, fromReport.body);
  t.same(s.engine.record.connections, [], 'nothing reached the engine');
});

t.test('bad input: 400 naming the field and the rule; no token: 401; any authenticated caller may plan', async (t) => {
  const s = await startStack(t);
  const refused = async (body: unknown, field: string, rule: RegExp) => {
    const answer = await s.call('POST', PLAN, { body });
    t.equal(answer.status, 400, JSON.stringify(body));
    t.equal(answer.body.error, 'invalid_request');
    t.equal(answer.body.details.problems[0].field, field);
    t.match(answer.body.message, rule);
  };
  await refused({ conversations: 3, baseline_rate: 0.9, drop: 0 }, 'drop', /^drop must be more than 0; nothing was sent to the engine$/);
  await refused({ baseline_rate: 0.9, drop: 0.2 }, 'conversations', /^conversations is required with baseline_rate/);
  await refused({ drop: 0.2 }, 'baseline_rate', /^give exactly one of baseline_rate \(with conversations\), baseline_rates or report/);
  await refused({ baseline_rates: [0.9], report: { conversations: [] }, drop: 0.2 }, 'report', /^give exactly one of/);
  await refused({ baseline_rates: [0.9, 1.2], drop: 0.2 }, 'baseline_rates.1', /^each baseline rate must be at most 1/);
  await refused({ baseline_rates: [0.3, 0.2], drop: 0.5 }, 'drop', /^drop must be at most the highest baseline rate \(0\.3\)/);
  await refused({ report: { hello: 1 }, drop: 0.5 }, 'report', /^report must be a run or comparison report/);
  await refused(
    { report: { conversations: [{ status: 'error' }] }, drop: 0.5 },
    'report',
    /^report has no conversation with a judged attempt/,
  );
  await refused({ baseline_rates: [0.9], drop: 0.2, concurrency: 51 }, 'concurrency', /^concurrency must be at most 50/);
  await refused({ baseline_rates: [0.9], drop: 0.2, tries: 3 }, 'tries', /^tries is not a known field/);
  const asked = s.platform.requests.length;
  t.equal((await s.call('POST', PLAN, { body: { baseline_rates: [0.9], drop: 0.2 }, token: null })).status, 401);
  t.equal(s.platform.requests.length, asked, 'no token: the platform is not asked');
  // The outsider has no role on any project: a plan involves no agent, so it is theirs to ask.
  const outsider = await s.call('POST', PLAN, { body: { baseline_rates: [0.9], drop: 0.5 }, token: 'outsider-token' });
  t.equal(outsider.status, 200, outsider.text);
  t.equal((await s.call('POST', PLAN, { body: { baseline_rates: [0.9], drop: 0.5 }, token: 'no-such-token' })).status, 401);
});
