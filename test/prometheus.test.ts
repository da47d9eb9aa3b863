// Debian's real Prometheus scrapes a gateway on loopback every second with the chart's rules
// loaded, while a bounded mixed workload runs; then its HTTP API must show every dashboard panel
// with data, every rule healthy, and counts equal to what the workload did.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { REFUSAL_REASONS } from '../src/ops/metrics.js';
import { eventually, startStack, type Stack } from './support/stack.js';
import { freePort, type Answer } from './support/http.js';
import { scaled } from './support/time.js';

const PROMETHEUS = '/usr/bin/prometheus';
const root = fileURLToPath(new URL('..', import.meta.url));
const chartFiles = join(root, 'helm', 'agent-test-gateway', 'files');
const RULES = join(chartFiles, 'prometheus-rules.yaml');
const dashboard = JSON.parse(readFileSync(join(chartFiles, 'grafana-dashboard.json'), 'utf8')) as {
  panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
};

/** Grafana's variables as the dashboard opens: every namespace and pod, a 1 m rate window. */
const substitute = (expr: string) =>
  expr
    .replaceAll('$__rate_interval', '1m')
    .replaceAll('$job', 'agent-test-gateway')
    .replaceAll('$namespace', '.*')
    .replaceAll('$instance', '.*');

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

interface RuleState {
  name: string;
  type: 'recording' | 'alerting';
  health: string;
  lastError?: string;
  lastEvaluation: string;
  state?: string;
}

interface Prometheus {
  query: (promql: string) => Promise<Sample[]>;
  rules: () => Promise<RuleState[]>;
}

async function startPrometheus(t: { teardown(fn: () => unknown): void }, target: string): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'agw-prometheus-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }',
      `rule_files: [${JSON.stringify(RULES)}]`,
      'scrape_configs:',
      '  - job_name: agent-test-gateway',
      `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
      '',
    ].join('\n'),
  );
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  const ready = async () =>
    (await request(`${base}/-/ready`).then(
      (r) => (r.body.dump(), r.statusCode),
      () => 0,
    )) === 200;
  const until = Date.now() + scaled(15_000);
  while (!(await ready())) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`prometheus did not become ready: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const api = async <T>(path: string): Promise<T> => {
    const answer = (await (await request(`${base}${path}`)).body.json()) as { status: string; data: T };
    if (answer.status !== 'success') throw new Error(`${path} failed`);
    return answer.data;
  };
  return {
    query: async (promql) => (await api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`)).result,
    rules: async () => (await api<{ groups: Array<{ rules: RuleState[] }> }>('/api/v1/rules')).groups.flatMap((g) => g.rules),
  };
}

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

t.test(
  'a real Prometheus scraping the gateway: panels, rules and counts',
  { skip: !existsSync(PROMETHEUS) && !process.env.CI && 'prometheus is not installed here' },
  async (t) => {
    const s = await startStack(t, {
      // Scaled by TEST_TIME_SCALE: the refusals of the workload are asked while its two hanging turns run.
      env: {
        TURN_BUDGET_MS: String(scaled(1000)),
        MAX_CONVERSATIONS_PER_CALLER: '1',
        MAX_CONVERSATIONS_PER_POD: '2',
        MAX_BODY_BYTES: '1024',
      },
    });
    const { query, rules } = await startPrometheus(t, new URL(s.url).host);
    // Prometheus applies discovered targets a few seconds after it starts: the workload waits for
    // the first scrape, so rates over it have samples from before, during and after.
    const scraped = Date.now() + scaled(15_000);
    while ((await query('up{job="agent-test-gateway"} == 1')).length === 0) {
      if (Date.now() > scraped) throw new Error(`prometheus did not scrape the gateway in ${scaled(15)} s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const { statuses, refusals } = await workload(s);
    const finishedAt = Date.now() / 1000;

    // Scraped after the workload, and the rules evaluated after that scrape.
    const until = Date.now() + scaled(15_000);
    const settled = async () => {
      const draining = await query('agent_test_gateway_draining');
      return draining[0]?.value[1] === '1' && (await rules()).every((r) => Date.parse(r.lastEvaluation) / 1000 > finishedAt + 1);
    };
    while (!(await settled())) {
      if (Date.now() > until) throw new Error(`prometheus did not scrape and evaluate after the workload in ${scaled(15)} s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

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

    for (const panel of dashboard.panels) {
      // The monitors' panels need monitored runs (--monitor), which this workload does not make.
      if (panel.title.startsWith('Monitors')) continue;
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
  },
);
