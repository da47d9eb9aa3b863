// The chart's monitoring: the rules and the dashboard are plain files the templates include.
// promtool checks and unit-tests the rules; the templates are read as text (no helm binary
// here) and their include is done by hand, the way `.Files.Get … | indent` does it.
import { execFile, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { needs, toolPath } from './support/tools.js';
import { chartDir } from './support/chart.js';
import { ROOT } from './support/root.js';
import { scaled } from './support/time.js';

const read = (...path: string[]) => readFileSync(join(...path), 'utf8');
const RULES = join(chartDir, 'files', 'prometheus-rules.yaml');
/** Every promtool unit test file: the gateway's alerts, the monitors', the monitors' on a nightly schedule. */
const RULE_TESTS = readdirSync(join(ROOT, 'test', 'prometheus'))
  .filter((file) => file.endsWith('-test.yaml'))
  .map((file) => join(ROOT, 'test', 'prometheus', file));
const values = parse(read(chartDir, 'values.yaml'));

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}
const groups = parse(read(RULES)).groups as Array<{ name: string; rules: Rule[] }>;
const rules = groups.flatMap((g) => g.rules);
const alerts = rules.filter((r) => r.alert !== undefined);

// promtool's unit tests replay days of series: CPU-bound, so a loaded machine takes a few times longer.
t.setTimeout(scaled(300_000));

const promtool = (...args: string[]) => spawnSync(toolPath('promtool')!, args, { cwd: ROOT, encoding: 'utf8' });

t.test('promtool checks the rules and runs their unit tests', needs('promtool'), async (t) => {
  const check = promtool('check', 'rules', RULES);
  t.equal(check.status, 0, check.stderr);
  t.match(check.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  t.notMatch(`${check.stdout}${check.stderr}`, /WARNING/i);
  t.ok(RULE_TESTS.length >= 3, RULE_TESTS.join(', '));
  // The files at once: each replays days of series, and the runner's timeout is per test file.
  const units = await Promise.all(
    RULE_TESTS.map(
      (file) =>
        new Promise<{ file: string; code: number; output: string }>((resolve) => {
          execFile(toolPath('promtool')!, ['test', 'rules', file], { cwd: ROOT, encoding: 'utf8' }, (err, stdout, stderr) =>
            resolve({ file, code: err === null ? 0 : ((err as { code?: number }).code ?? 1), output: `${stdout}${stderr}` }),
          );
        }),
    ),
  );
  for (const unit of units) {
    t.equal(unit.code, 0, `${unit.file}: ${unit.output}`);
    t.match(unit.output, /SUCCESS/, unit.file);
  }
});

t.test('every alert the issue asks for, each with a summary, a description, a runbook and a unit test', async (t) => {
  const names = alerts.map((a) => a.alert);
  for (const wanted of [
    'AgentTestGatewayTargetMissing',
    'AgentTestGatewayAllPodsDown',
    'AgentTestGatewayRestarting',
    'AgentTestGatewayTurnFailures',
    'AgentTestGatewayTurnLatencyNearBudget',
    'AgentTestGatewayEngineConnectFailures',
    'AgentTestGatewayIdentityRejected',
    'AgentTestGatewayPlatformErrors',
    'AgentTestGatewayPlatformSlow',
    'AgentTestGatewayPodNearConversationLimit',
    'AgentTestGatewayPodLimitEvictions',
    'AgentTestGatewayPodLimitRefusals',
    'AgentTestGatewayHighServerErrors',
    'AgentTestGatewayEventLoopLag',
    'AgentTestGatewayMemoryNearLimit',
    'AgentTestGatewayPeerCallsRefused',
    'AgentTestGatewayRunUnreplicated',
    'AgentTestGatewayRunsFenced',
    'AgentTestGatewayRunsKeptNearBound',
    'AgentPassRateDropped',
    'AgentMonitorFailing',
    'AgentMonitorStale',
    'AgentAttackBroke',
  ]) {
    t.ok(names.includes(wanted), wanted);
  }
  const cases = RULE_TESTS.flatMap((file) =>
    (parse(readFileSync(file, 'utf8')).tests as Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>).flatMap(
      (c) => c.alert_rule_test ?? [],
    ),
  );
  const operations = read(ROOT, 'docs', 'operations.md');
  for (const alert of alerts) {
    for (const key of ['summary', 'description', 'runbook']) {
      t.ok((alert.annotations?.[key]?.length ?? 0) > 20, `${alert.alert} has a ${key}`);
    }
    t.ok(
      cases.some((c) => c.alertname === alert.alert && c.exp_alerts.length > 0),
      `${alert.alert} has a unit test where it fires`,
    );
    t.match(operations, `### ${alert.alert}`, `${alert.alert} is in docs/operations.md`);
  }
  // The pod limit is compared with the exported limit, the latency with the exported budget.
  const record = (name: string) => rules.find((r) => r.record === name)?.expr ?? '';
  t.match(record('agent_test_gateway:open_conversations:ratio_pod_limit'), /agent_test_gateway_conversation_limit\{[^}]*limit="pod"/);
  t.match(alerts.find((a) => a.alert === 'AgentTestGatewayTurnLatencyNearBudget')?.expr, /turn_budget_seconds/);
  t.match(
    record('agent_test_gateway:runs_kept_bytes:ratio_limit'),
    /agent_test_gateway_runs_kept_bytes_limit\{/,
    'kept bytes against the exported bound',
  );
  t.notMatch(rules.map((r) => r.expr).join('\n'), /\bendpoint\b/, 'no rule uses the label the Operator puts on every target');
});

t.test('the PrometheusRule is the rules file, values-gated and on by default', async (t) => {
  const template = read(chartDir, 'templates', 'prometheusrule.yaml');
  t.equal(values.metrics.prometheusRule.enabled, true);
  t.match(
    template,
    /if and \.Values\.metrics\.prometheusRule\.enabled \(\.Capabilities\.APIVersions\.Has "monitoring\.coreos\.com\/v1\/PrometheusRule"\)/,
  );
  const include = /^spec:\n\{\{ \.Files\.Get "files\/prometheus-rules\.yaml" \| indent 2 \}\}$/m;
  t.match(template, include);
  // What helm renders: the file indented under spec.
  const indented = read(RULES)
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
  const rendered = parse(`kind: PrometheusRule\nspec:\n${indented}`);
  t.same(rendered.spec.groups, groups, 'spec.groups is the file');
});

t.test('the dashboard ConfigMap carries the sidecar label and the plain dashboard file', async (t) => {
  const template = read(chartDir, 'templates', 'grafana-dashboard.yaml');
  t.equal(values.metrics.grafanaDashboard.enabled, true);
  t.same(values.metrics.grafanaDashboard.labels, { grafana_dashboard: '1' });
  t.match(template, /toYaml \.Values\.metrics\.grafanaDashboard\.labels/);
  t.match(template, /agent-test-gateway\.json: \|-\n\{\{ \.Files\.Get "files\/grafana-dashboard\.json" \| indent 4 \}\}/);

  const dashboard = JSON.parse(read(chartDir, 'files', 'grafana-dashboard.json'));
  const titles: string[] = dashboard.panels.map((p: { title: string }) => p.title);
  for (const wanted of [
    /^Turns per second by outcome/,
    /^Turn latency p50 \/ p99/,
    /^HTTP requests per second by route and status/,
    /^HTTP errors per second by route and status/,
    /^Open and busy conversations against the pod limit/,
    /^Evictions/,
    /^Refusals/,
    /^Engine connects/,
    /^Engine connect duration/,
    /^Platform API latency/,
    /^Authorization cache hit ratio/,
    /^Process CPU/,
    /^Process memory/,
    /^Event-loop lag/,
    /^Model calls by role and outcome/,
    /^Runs moved per second by cause/,
    /^Fenced halts per second by reason/,
    /^Refused calls between pods/,
    /^Running runs and runs without a replica/,
    /^Kept run bytes against RUNS_KEPT_BYTES/,
    /^Monitors: pass rate over 6 h by monitor, conversation and revision/,
    /^Monitors: attempts by outcome/,
    /^Monitors: time since the last finished run/,
    /^Monitors: attack success rate/,
  ]) {
    t.ok(
      titles.some((title) => wanted.test(title)),
      `a panel ${wanted}`,
    );
  }
  // Rows hold no query.
  const exprs: string[] = dashboard.panels.flatMap((p: { targets?: Array<{ expr: string }> }) => (p.targets ?? []).map((x) => x.expr));
  for (const expr of exprs) {
    if (/\brate\(/.test(expr)) t.match(expr, /\[\$__rate_interval\]/, 'rates over $__rate_interval');
    t.match(expr, /job=~"\$job", namespace=~"\$namespace", instance=~"\$instance"/, 'every query follows the variables');
  }
  t.same(
    dashboard.templating.list.map((v: { name: string }) => v.name),
    ['datasource', 'job', 'namespace', 'instance'],
  );
});

t.test('the ServiceMonitor scrapes every 15 s under job agent-test-gateway', async (t) => {
  const template = read(chartDir, 'templates', 'servicemonitor.yaml');
  t.equal(values.metrics.serviceMonitor.interval, '15s');
  t.match(template, /jobLabel: app\.kubernetes\.io\/name/);
  t.match(read(chartDir, 'templates', '_helpers.tpl'), /app\.kubernetes\.io\/name: \{\{ include "agent-test-gateway\.name"/);
  t.equal(parse(read(chartDir, 'Chart.yaml')).name, 'agent-test-gateway', 'the job the rules select');
});
