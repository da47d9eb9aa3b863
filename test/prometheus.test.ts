// Debian's real Prometheus scrapes a gateway on loopback every second with the chart's rules
// loaded, while a bounded mixed workload runs; then its HTTP API must show every dashboard panel
// with data, every rule healthy, and counts equal to what the workload did. A second one scrapes
// a gateway through monitored runs that pass and then fail: the attempts by outcome, the pass
// rate falling, AgentMonitorFailing pending with its labels, and the dashboard's monitors row.
// A third, through a monitored attack suite that breaks one revision and not the other: the
// attack success rate, AgentAttackBroke firing, and the dashboard's attack panel.
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { REFUSAL_REASONS } from '../src/ops/metrics.js';
import { eventually, REFUSAL_WORKLOAD_ENV, startStack, type Stack } from './support/stack.js';
import { runPath, type Answer } from './support/http.js';
import { scaled } from './support/time.js';
import { needs } from './support/tools.js';
import { dashboard, isAttackPanel, isMonitorsPanel, startPrometheus, substitute, until, type Alert } from './support/prometheus.js';
import { attackStack, canarySuite } from './support/attacks.js';

/** The workload: successes, an eviction, a timeout, every kind of refusal; what the client saw. */
async function workload(s: Stack): Promise<{ statuses: Map<number, number>; refusals: Record<string, number> }> {
  const statuses = new Map<number, number>();
  const call = async (...args: Parameters<Stack['call']>): Promise<Answer> => {
    const answer = await s.call(...args);
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    return answer;
  };
  const start = '/v1/agents/coach/conversations';
  const first = await call('POST', start);
  await call('POST', `${start}/${first.body.session_id}/turns`, { body: { line: 'hello' } });
  const second = await call('POST', start); // the caller limit is 1: evicts the first
  await call('DELETE', `${start}/${second.body.session_id}`);
  await call('GET', '/v1/conversations', { token: null }); // 401
  await call('GET', '/no/such/route'); // 404
  await call('POST', start, { body: 'hi', headers: { 'content-type': 'text/plain' } }); // 415
  await call('POST', start, { body: { line: 'x'.repeat(2000) } }); // 413
  await call('POST', '/v1/agents/%E0%A4%A/conversations'); // 400
  await call('POST', '/v1/agents/idp/conversations'); // 502 identity_not_enabled
  s.engine.faults.handshake = 503;
  await call('POST', start); // 502 engine_unavailable
  s.engine.faults.handshake = undefined;
  s.platform.faults = { status: 500 };
  await call('POST', start, { token: 'outsider-token' }); // 503 platform_unavailable (not cached)
  s.platform.faults = {};
  const hanging = [
    call('POST', start, { body: { line: 'sim:hang' } }),
    call('POST', start, { body: { line: 'sim:hang' }, token: 'bob-token' }),
  ];
  await eventually(() => s.app.conversationRegistry.stats.busy === 2);
  await call('POST', start); // 429 caller_limit
  await call('POST', start, { token: 'tenant-token' }); // 503 pod_limit
  await Promise.all(hanging); // both cut off at the budget: 201 with a timeout turn
  s.engine.world.engineIdentities[0]!.password = 'rotated';
  await call('POST', '/v1/agents/secure/conversations'); // 502 identity_unrecognised
  void s.app.conversationRegistry.drain(0);
  await call('POST', start); // 503 shutting_down
  const refusals = {
    unauthenticated: 1,
    not_found: 1,
    unsupported_media_type: 1,
    body_too_large: 1,
    invalid_request: 1,
    identity_not_enabled: 1,
    engine_unavailable: 1,
    platform_unavailable: 1,
    caller_limit: 1,
    pod_limit: 1,
    identity_unrecognised: 1,
    shutting_down: 1,
  };
  return { statuses, refusals };
}

t.test('a real Prometheus scraping the gateway: panels, rules and counts', needs('prometheus'), async (t) => {
  const s = await startStack(t, { env: REFUSAL_WORKLOAD_ENV });
  const { query, rules, scraped } = await startPrometheus(t, new URL(s.url).host);
  // The workload waits for the first scrape, so rates over it have samples from before, during and after.
  await scraped();
  const { statuses, refusals } = await workload(s);
  const finishedAt = Date.now() / 1000;

  // Scraped after the workload, and the rules evaluated after that scrape.
  await until('a scrape and an evaluation after the workload', async () => {
    const draining = await query('agent_test_gateway_draining');
    const evaluated = (await rules()).every((r) => Date.parse(r.lastEvaluation) / 1000 > finishedAt + 1);
    return draining[0]?.value[1] === '1' && evaluated ? true : undefined;
  });

  const byStatus = await query('sum by (status_code) (agent_test_gateway_http_request_duration_seconds_count{route!="/metrics"})');
  const seen = Object.fromEntries(byStatus.map((x) => [x.metric.status_code, Number(x.value[1])]));
  t.same(
    seen,
    Object.fromEntries([...statuses].map(([status, count]) => [String(status), count])),
    'requests by status = the client tally',
  );
  const byReason = await query('agent_test_gateway_refusals_total');
  const reasons = Object.fromEntries(byReason.map((x) => [x.metric.reason, Number(x.value[1])]));
  t.same(
    reasons,
    Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, refusals[reason] ?? 0])),
    'refusals by reason = what was provoked, every other reason at 0',
  );
  const connects = Object.fromEntries(
    (await query('sum by (result) (agent_test_gateway_engine_connects_total)')).map((x) => [x.metric.result, Number(x.value[1])]),
  );
  t.same(connects, { ok: 4, not_enabled: 1, unrecognised: 1, unavailable: 1, refused: 0 }, 'engine connects by result');
  const timeouts = await query('agent_test_gateway_turn_duration_seconds_count{outcome="timeout"}');
  t.equal(timeouts[0]?.value[1], '2', 'two turns cut off at the budget');
  t.equal((await query('agent_test_gateway_evictions_total{limit="caller"}'))[0]?.value[1], '1', 'one eviction');

  // The monitors' row needs monitored runs: the next test checks it.
  for (const panel of dashboard.panels.filter((panel) => !isMonitorsPanel(panel))) {
    for (const target of panel.targets ?? []) {
      const result = await query(substitute(target.expr));
      t.ok(result.length > 0, `${panel.title}: ${target.expr.slice(0, 90)}… has data`);
    }
  }
  const firing = ['AgentTestGatewayIdentityRejected', 'AgentTestGatewayPodLimitRefusals'];
  const pending = [
    'AgentTestGatewayEngineConnectFailures',
    'AgentTestGatewayHighServerErrors',
    'AgentTestGatewayTurnFailures',
    'AgentTestGatewayTurnLatencyNearBudget',
  ];
  // Alerts read recorded series, which a later evaluation brings up to the last scrape: give the
  // evaluations a few rounds (1 s each) to settle before reading the states.
  let evaluated = await rules();
  const alerts = (state: string) =>
    evaluated
      .filter((r) => r.type === 'alerting' && r.state === state)
      .map((r) => r.name)
      .sort();
  const statesBy = Date.now() + scaled(15_000);
  while (JSON.stringify([alerts('firing'), alerts('pending')]) !== JSON.stringify([firing, pending]) && Date.now() < statesBy) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    evaluated = await rules();
  }
  t.ok(evaluated.filter((r) => r.type === 'recording').length >= 10);
  for (const rule of evaluated) {
    t.equal(rule.health, 'ok', `${rule.name} evaluates${rule.lastError ? `: ${rule.lastError}` : ''}`);
  }
  t.same(alerts('firing'), firing, 'without a hold time: firing');
  t.same(alerts('pending'), pending, 'what the workload provoked, waiting out its hold time');
});

// The chart's rules as they are, with no test copy: their windows are hours (6 h, 7 days), but a
// window longer than the data simply covers all of it, and an alert is pending from the first
// evaluation at which its condition holds (`for:` only delays firing), so AgentMonitorFailing's
// pending state is reached in seconds; its 5 m hold keeps it pending for the rest of the test.
t.test(
  'a real Prometheus: monitored runs that passed, then failed; the pass rate falls, AgentMonitorFailing pending',
  needs('prometheus'),
  async (t) => {
    const s = await startStack(t);
    const { query, rules, alerts, scraped } = await startPrometheus(t, new URL(s.url).host);
    await scraped();
    const where = '{monitor="nightly", agent="coach", conversation="greeting"}';
    const run = async (pattern: string, repeat: number) => {
      const conversations = [{ name: 'greeting', turns: [{ line: 'hello', expect: { text_matches: pattern } }] }];
      const answer = await s.call('POST', runPath(), { body: { monitor: 'nightly', repeat, conversations } });
      t.equal(answer.status, 200, `a monitored run expecting /${pattern}/ × ${repeat}`);
      t.same(answer.body.monitor, { name: 'nightly', recorded: repeat, dropped: 0 }, 'it recorded every attempt');
      return answer.body as { passed: boolean };
    };
    // The counters by outcome as Prometheus scraped them, once they read `expected`.
    const attempts = (expected: Record<string, number>) =>
      until(`attempts ${JSON.stringify(expected)}`, async () => {
        const samples = await query(`agent_test_gateway_monitor_attempts_total${where}`);
        const seen = Object.fromEntries(samples.map((x) => [x.metric.outcome, Number(x.value[1])]));
        return isDeepStrictEqual(seen, expected) && samples.every((x) => x.metric.revision === '2') ? seen : undefined;
      });
    const passRate = (rule: string, holds: (rate: number) => boolean) =>
      until(`${rule}${where} as expected`, async () => {
        const [sample] = await query(`${rule}${where}`);
        return sample !== undefined && holds(Number(sample.value[1])) ? sample : undefined;
      });

    // Passing: two runs, the second after Prometheus scraped the first. A run against the simulator
    // may start and finish between two scrapes: its new series wait for a scrape to read them at 0
    // before they count its attempts, so increase() sees them (the next test relies on that).
    t.equal((await run('You said', 2)).passed, true, 'the first run passed');
    await attempts({ error: 0, failed: 0, invalid: 0, passed: 2 });
    t.equal((await run('You said', 2)).passed, true, 'the second run passed');
    t.same(
      await attempts({ error: 0, failed: 0, invalid: 0, passed: 4 }),
      { error: 0, failed: 0, invalid: 0, passed: 4 },
      'attempts by outcome, passed',
    );
    const before = await passRate('agent_test_gateway:monitor_conversation_pass_rate:recent', (rate) => rate === 1);
    t.equal(before.value[1], '1', 'the recorded pass rate of the conversation: 1 after the passing runs');
    const byRevision = await passRate('agent_test_gateway:monitor_pass_rate:6h', (rate) => rate === 1);
    t.equal(byRevision.metric.revision, '2', "the dashboard's pass rate carries the revision that ran");
    const failing = (all: Alert[]) => all.filter((a) => a.labels.alertname === 'AgentMonitorFailing');
    t.same(failing(await alerts()), [], 'AgentMonitorFailing inactive while the runs pass');

    // Failing: more attempts than passed, the same conversation now expecting what is never said.
    t.equal((await run('Never said', 6)).passed, false, 'the third run failed');
    t.same(
      await attempts({ error: 0, failed: 6, invalid: 0, passed: 4 }),
      { error: 0, failed: 6, invalid: 0, passed: 4 },
      'attempts by outcome, failed',
    );
    const after = await passRate('agent_test_gateway:monitor_conversation_pass_rate:recent', (rate) => rate < 0.5);
    const fell = Number(after.value[1]);
    t.ok(fell > 0 && fell < 0.5, `the pass rate fell from 1 to ${fell}: under the failing threshold (0.5), the passes still counted`);
    await passRate('agent_test_gateway:monitor_pass_rate:6h', (rate) => rate < 0.5);

    const [alert] = await until('AgentMonitorFailing on /api/v1/alerts', async () => {
      const found = failing(await alerts());
      return found.length > 0 ? found : undefined;
    });
    t.equal(alert!.state, 'pending', 'pending: its 5 m hold has not run out');
    t.match(
      alert!.labels,
      {
        alertname: 'AgentMonitorFailing',
        monitor: 'nightly',
        agent: 'coach',
        conversation: 'greeting',
        revision: '2',
        severity: 'warning',
      },
      'its labels name the monitor, agent, conversation and revision',
    );
    t.ok(Number(alert!.value) > 0.5, `its value, the failing share (${alert!.value}), is above the threshold`);
    t.match(alert!.annotations.summary, /Agent coach \(revision 2\) fails .* of greeting in monitor nightly/, 'its summary names them');
    t.match(alert!.annotations.runbook, /agent-test-gateway run .* --agent coach --html report\.html/, 'its runbook, what to run to look');

    const evaluated = await rules();
    for (const rule of evaluated) {
      t.equal(rule.health, 'ok', `${rule.name} evaluates${rule.lastError ? `: ${rule.lastError}` : ''}`);
    }
    t.equal(evaluated.find((r) => r.name === 'AgentMonitorStale')?.state, 'inactive', 'not stale: its last run just finished');

    // The dashboard's monitors row, which the test above cannot check, has data now (its attack
    // panel: the next test).
    const row = dashboard.panels.filter((panel) => isMonitorsPanel(panel) && !isAttackPanel(panel));
    t.ok(
      row.some((panel) => (panel.targets ?? []).length > 0),
      'the monitors row has queries',
    );
    for (const panel of row) {
      for (const target of panel.targets ?? []) {
        const result = await query(substitute(target.expr));
        t.ok(result.length > 0, `${panel.title}: ${target.expr.slice(0, 90)}… has data`);
      }
    }
  },
);

// One run per revision, each likely shorter than the 1 s scrape interval: the new series are read
// at 0 before they count the run, so the first break of a revision is seen (docs/monitors.md).
t.test(
  'a real Prometheus: a monitored attack suite breaks coach.3, coach holds; the success rate, AgentAttackBroke, the attack panel',
  needs('prometheus'),
  async (t) => {
    const s = await attackStack(t);
    const { query, rules, alerts, scraped } = await startPrometheus(t, new URL(s.url).host);
    await scraped();
    const conversation = "another user's code word";
    for (const [agent, outcome] of [
      ['coach.3', 'broke'],
      ['coach', 'held'],
    ] as const) {
      const answer = await s.call('POST', runPath(agent), { body: { ...canarySuite(), monitor: 'red-team' } });
      t.equal(answer.status, 200, `the monitored attack against ${agent}`);
      t.equal(answer.body.conversations[0].attempts[0].attack.outcome, outcome, `${agent}: the attack ${outcome}`);
      t.same(answer.body.monitor, { name: 'red-team', recorded: 1, dropped: 0 }, 'it recorded the attempt');
    }
    const rates = await until('the attack success rate of both revisions', async () => {
      const samples = await query('agent_test_gateway:monitor_attack_success_rate:recent{monitor="red-team"}');
      const byAgent = Object.fromEntries(samples.map((x) => [`${x.metric.agent} r${x.metric.revision}`, Number(x.value[1])]));
      return isDeepStrictEqual(byAgent, { 'coach.3 r3': 1, 'coach r2': 0 }) ? samples : undefined;
    });
    t.ok(
      rates.every((x) => x.metric.conversation === conversation),
      'recorded per attack, by revision: coach.3 broke in 1 of 1, coach in 0 of 1',
    );

    const [alert, ...more] = await until('AgentAttackBroke on /api/v1/alerts', async () => {
      const found = (await alerts()).filter((a) => a.labels.alertname === 'AgentAttackBroke');
      return found.length > 0 ? found : undefined;
    });
    t.same(more, [], 'only the revision that broke');
    t.equal(alert!.state, 'firing', 'firing at once: no hold time for a break');
    t.match(
      alert!.labels,
      { monitor: 'red-team', agent: 'coach.3', revision: '3', conversation, severity: 'critical' },
      'its labels name the monitor, agent, revision and attack',
    );
    t.match(alert!.annotations.summary, /^Attack another user's code word broke agent coach\.3 \(revision 3\) in 100% of its attempts\.$/);

    for (const rule of await rules()) {
      t.equal(rule.health, 'ok', `${rule.name} evaluates${rule.lastError ? `: ${rule.lastError}` : ''}`);
    }
    const panels = dashboard.panels.filter(isAttackPanel);
    t.equal(panels.length, 1, "the monitors row's attack panel");
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        const samples = await query(substitute(target.expr));
        const shown = Object.fromEntries(samples.map((x) => [`${x.metric.agent} r${x.metric.revision}`, Number(x.value[1])]));
        t.same(shown, { 'coach.3 r3': 1, 'coach r2': 0 }, `${panel.title}: the rate of each revision`);
      }
    }
  },
);
