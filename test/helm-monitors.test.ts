// The chart's monitors (docs/monitors.md): one CronJob per entry of monitors (none by default)
// running the image's own `run … --monitor NAME` through the release's Service, its inline suites
// in a ConfigMap, and the rule group that records the monitors' thresholds and staleAfter for
// files/prometheus-rules.yaml. No helm binary here: templates are read as text and as their YAML
// skeleton (see helm.test.ts).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartDir, skeleton, templateText } from './support/chart.js';

const text = templateText;
const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8'));
const rulesFile = readFileSync(join(chartDir, 'files', 'prometheus-rules.yaml'), 'utf8');
const helpers = text('_helpers.tpl');

/** A named template of _helpers.tpl: from its define to the next comment or define. */
function define(name: string): string {
  const at = helpers.indexOf(`{{- define "${name}" -}}`);
  if (at < 0) return '';
  const next = [helpers.indexOf('\n{{/*', at), helpers.indexOf('\n{{- define', at + 1)].filter((i) => i > 0);
  return helpers.slice(at, next.length > 0 ? Math.min(...next) : undefined);
}

t.test('values: no monitor by default; job defaults and alert thresholds', async (t) => {
  t.same(values.monitors, [], 'off unless listed');
  t.same(values.monitorDefaults, { activeDeadlineSeconds: 3600, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3, timeZone: '' });
  t.same(values.metrics.prometheusRule.monitorAlerts, {
    passRateDropPoints: 20,
    minAttempts: 10,
    failingRatio: 0.5,
    failingMinAttempts: 3,
  });
});

t.test('each template renders nothing without monitors', async (t) => {
  t.match(text('monitor-cronjobs.yaml'), /^\{\{-[^\n]*\}\}\n\{\{- \$seen := dict \}\}\n\{\{- range \$m := \.Values\.monitors \}\}\n/);
  t.match(text('monitor-suites.yaml'), /^\{\{-[^\n]*\}\}\n\{\{- range \$m := \.Values\.monitors \}\}\n\{\{- if \$m\.suites \}\}\n/);
  t.match(text('monitor-cronjobs.yaml'), /\{\{- include "agent-test-gateway\.validateMonitor" \(dict "root" \$ "monitor" \$m\) \}\}/);
});

t.test('CronJob: the image command, Forbid, no retry, the deadline and the history limits', async (t) => {
  const cronJob = skeleton('monitor-cronjobs.yaml');
  t.equal(cronJob.spec.concurrencyPolicy, 'Forbid');
  t.equal(cronJob.spec.schedule, 'TEMPLATED');
  const job = cronJob.spec.jobTemplate.spec;
  t.equal(job.backoffLimit, 0, 'a failed run is a result, not retried');
  const cron = text('monitor-cronjobs.yaml');
  for (const limit of ['successfulJobsHistoryLimit', 'failedJobsHistoryLimit']) {
    t.match(
      cron,
      `${limit}: {{ $m.${limit} | default $.Values.monitorDefaults.${limit} | int }}`,
      `${limit}: the entry's, else the default`,
    );
  }
  t.match(
    cron,
    /schedule: \{\{ \$m\.schedule \| quote \}\}\n\s+\{\{- with \$m\.timeZone \| default \$\.Values\.monitorDefaults\.timeZone \}\}\n(?:\s+#.*\n)?\s+timeZone: \{\{ \. \| toString \| quote \}\}\n\s+\{\{- end \}\}/,
    "timeZone: the entry's, else the default, else none (the cluster's)",
  );
  t.match(
    cron,
    /activeDeadlineSeconds: \{\{ \$m\.activeDeadlineSeconds \| default \$\.Values\.monitorDefaults\.activeDeadlineSeconds \| int64 \}\}/,
  );
  t.match(cron, /suspend: \{\{ \$m\.suspend \| default false \}\}/);

  const pod = job.template.spec;
  t.equal(pod.restartPolicy, 'Never');
  t.equal(pod.automountServiceAccountToken, false);
  const [container] = pod.containers;
  t.notOk('command' in container, "the image's entrypoint (tini, then node /app/dist/entrypoint.js) stays");
  // Both branches of each if stay in the skeleton: every optional flag shows with its value.
  t.same(container.args, [
    'run',
    '/suites/*.yaml',
    '--json',
    '-',
    '--agent',
    'TEMPLATED',
    '--gateway',
    'TEMPLATED',
    '--monitor',
    'TEMPLATED',
    '--repeat',
    'TEMPLATED',
    '--max-attempts',
    'TEMPLATED',
    '--concurrency',
    'TEMPLATED',
  ]);
  t.match(cron, /- --agent\n\s+- \{\{ \$m\.agent \| toString \| quote \}\}/);
  t.match(cron, /- --monitor\n\s+- \{\{ \$m\.name \| toString \| quote \}\}/);
  t.match(
    cron,
    /- --gateway\n\s+- \{\{ printf "http:\/\/%s\.%s\.svc:%d" \(include "agent-test-gateway\.fullname" \$\) \$\.Release\.Namespace \(int \$\.Values\.service\.port\) \| quote \}\}/,
    "the release's Service, by its full name and port",
  );
  t.match(text('service.yaml'), /name: \{\{ include "agent-test-gateway\.fullname" \. \}\}/);
  t.match(cron, /\{\{- if \$m\.repeat \}\}\n\s+- --repeat\n\s+- \{\{ \$m\.repeat \| int \| quote \}\}/);
  t.match(cron, /\{\{- if \$m\.maxAttempts \}\}\n\s+- --max-attempts\n\s+- \{\{ \$m\.maxAttempts \| int \| quote \}\}/);
  t.match(cron, /\{\{- if \$m\.concurrency \}\}\n\s+- --concurrency\n\s+- \{\{ \$m\.concurrency \| int \| quote \}\}/);

  t.same(container.env, [{ name: 'AGENT_TEST_GATEWAY_TOKEN', valueFrom: { secretKeyRef: { name: 'TEMPLATED', key: 'TEMPLATED' } } }]);
  t.match(cron, /secretKeyRef:\n\s+name: \{\{ \$m\.tokenSecret\.name \}\}\n\s+key: \{\{ \$m\.tokenSecret\.key \}\}/);
});

t.test("CronJob: the Deployment's security context and resources, the suites at /suites", async (t) => {
  const cron = text('monitor-cronjobs.yaml');
  t.match(cron, /securityContext:\n\s+\{\{- toYaml \$\.Values\.podSecurityContext \| nindent 12 \}\}/);
  t.match(cron, /securityContext:\n\s+\{\{- toYaml \$\.Values\.securityContext \| nindent 16 \}\}/);
  t.match(cron, /resources:\n\s+\{\{- toYaml \(\$m\.resources \| default \$\.Values\.resources\) \| nindent 16 \}\}/);
  const pod = skeleton('monitor-cronjobs.yaml').spec.jobTemplate.spec.template.spec;
  t.same(pod.containers[0].volumeMounts, [
    { name: 'suites', mountPath: '/suites', readOnly: true },
    { name: 'tmp', mountPath: '/tmp' },
  ]);
  t.same(pod.volumes[1], { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }, 'writable /tmp on the read-only root');
  t.match(cron, /configMap:\n\s+name: \{\{ \$m\.suitesConfigMap \| default \(printf "%s-suites" \$cronJob\) \}\}/);
  // The chart's ConfigMap has the name the CronJob mounts when suitesConfigMap is not given.
  const suites = text('monitor-suites.yaml');
  t.match(suites, /\{\{- \$cronJob := include "agent-test-gateway\.monitorFullname" \(dict "root" \$ "monitor" \$m\) \}\}/);
  t.match(cron, /\{\{- \$cronJob := include "agent-test-gateway\.monitorFullname" \(dict "root" \$ "monitor" \$m\) \}\}/);
  t.match(suites, /name: \{\{ printf "%s-suites" \$cronJob \}\}/);
  t.match(suites, /\{\{- range \$file, \$text := \$m\.suites \}\}\n\s+\{\{ \$file \}\}: \|-\n\s+\{\{- \$text \| nindent 4 \}\}/);
  t.equal(skeleton('monitor-suites.yaml').kind, 'ConfigMap');
});

t.test("monitor pods are not the Deployment's, and the NetworkPolicy admits them", async (t) => {
  const labels = define('agent-test-gateway.monitorLabels');
  t.match(labels, /app\.kubernetes\.io\/name: \{\{ printf "%s-monitor"/, 'another name: no Service, PDB or Deployment selects them');
  t.match(labels, /app\.kubernetes\.io\/component: monitor/);
  t.match(labels, /agent-test-gateway\/monitor: \{\{ \.monitor\.name \| toString \| quote \}\}/, 'the label the alerts tell to select by');
  t.notMatch(labels, /selectorLabels/);
  for (const path of [['metadata'], ['spec', 'jobTemplate', 'metadata'], ['spec', 'jobTemplate', 'spec', 'template', 'metadata']]) {
    t.match(
      text('monitor-cronjobs.yaml'),
      /labels:\n\s+\{\{- include "agent-test-gateway\.monitorLabels" \(dict "root" \$ "monitor" \$m\)/,
      path.join('.'),
    );
  }
  t.match(
    text('networkpolicy.yaml'),
    /\{\{- if \.Values\.monitors \}\}\n(?:\s+#.*\n)?\s+- podSelector:\n\s+matchLabels:\n\s+app\.kubernetes\.io\/instance: \{\{ \.Release\.Name \}\}\n\s+app\.kubernetes\.io\/component: monitor/,
  );
});

t.test('a monitor the chart cannot render is refused', async (t) => {
  const validate = define('agent-test-gateway.validateMonitor');
  const pattern = /regexMatch "([^"]+)" \$name/.exec(validate)?.[1];
  t.ok(pattern, 'the name is checked');
  const name = new RegExp(pattern!);
  for (const ok of ['coach-smoke', 'coach_smoke.v2', 'a', 'A1', 'x'.repeat(63)]) t.match(ok, name, ok);
  for (const bad of ['', '-a', 'a-', '.a', 'a b', 'a/b', 'x'.repeat(64), 'č']) t.notMatch(bad, name, JSON.stringify(bad));
  for (const rule of [
    /if not \$m\.schedule \}\}\{\{ fail/,
    /if not \$m\.agent \}\}\{\{ fail/,
    /if and \$m\.suites \$m\.suitesConfigMap \}\}\{\{ fail/,
    /if not \(or \$m\.suites \$m\.suitesConfigMap\) \}\}\{\{ fail/,
    /if and \$m\.repeat \$m\.maxAttempts \}\}\{\{ fail/,
    /if not \(and \$m\.tokenSecret \$m\.tokenSecret\.name \$m\.tokenSecret\.key\) \}\}\{\{ fail/,
    /regexMatch "\^\[A-Za-z0-9\._-\]\+\\\\\.yaml\$" \$file/,
    /if and \$m\.window \(not \(has \(toString \$m\.window\) \(list "6h" "26h" "74h"\)\)\) \}\}\{\{ fail/,
    /if not \(has \$key \(list "passRateDropPoints" "minAttempts" "failingRatio" "failingMinAttempts"\)\) \}\}\{\{ fail/,
  ]) {
    t.match(validate, rule, String(rule));
  }
  const zone = new RegExp(/regexMatch "([^"]+)" \$tz/.exec(validate)?.[1] ?? 'none');
  for (const ok of ['Europe/Prague', 'Etc/UTC', 'UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT+2']) t.match(ok, zone, ok);
  for (const bad of ['Europe/', '/UTC', 'Europe Prague', '+02:00', 'CET;rm']) t.notMatch(bad, zone, bad);
  t.match(text('monitor-cronjobs.yaml'), /if hasKey \$seen \$cronJob \}\}\n\{\{- fail/, 'two monitors making one CronJob name');
  t.match(define('agent-test-gateway.monitorFullname'), /\| trunc 52 \| trimSuffix "-"/, "a CronJob name's 52 characters");
});

t.test('the PrometheusRule records the thresholds and each staleAfter that the rules file reads', async (t) => {
  t.match(
    text('prometheusrule.yaml'),
    /^\{\{ \.Files\.Get "files\/prometheus-rules\.yaml" \| indent 2 \}\}\n\{\{- include "agent-test-gateway\.monitorRuleGroup" \. \| nindent 4 \}\}$/m,
  );
  const group = define('agent-test-gateway.monitorRuleGroup');
  const pairs = /dict ((?:"\w+" \$a\.\w+ ?)+)\}\}/.exec(group)?.[1] ?? '';
  const thresholds = Object.fromEntries([...pairs.matchAll(/"(\w+)" \$a\.(\w+)/g)].map((m) => [m[1], m[2]]));
  t.same(Object.values(thresholds).sort(), Object.keys(values.metrics.prometheusRule.monitorAlerts).sort(), 'every monitorAlerts value');
  for (const threshold of Object.keys(thresholds)) {
    for (const monitor of ['monitor!=""', 'monitor=""']) {
      const read = `agent_test_gateway:monitor_alert_threshold:values{threshold="${threshold}", ${monitor}}`;
      t.match(rulesFile, read, `the rules read ${threshold}: ${monitor === 'monitor=""' ? 'the default' : "a monitor's own"}`);
    }
  }
  // Each monitor's own: its alerts over the defaults, every threshold recorded with its name.
  t.match(group, /\$own := mergeOverwrite \(deepCopy \$a\) \(\$m\.alerts \| default dict\)/);
  const own = /dict ((?:"\w+" \$own\.\w+ ?)+)\}\}/.exec(group)?.[1] ?? '';
  t.same(Object.fromEntries([...own.matchAll(/"(\w+)" \$own\.(\w+)/g)].map((m) => [m[1], m[2]])), thresholds, 'the same four, per monitor');
  t.match(
    group,
    /- record: agent_test_gateway:monitor_window_seconds:values\n\s+expr: vector\(\{\{ get \(dict "6h" 21600 "26h" 93600 "74h" 266400\) \$window \}\}\)/,
  );
  for (const window of ['21600', '93600', '266400']) t.match(rulesFile, `agent_test_gateway:monitor_window_seconds == ${window}`, window);
  t.match(group, /- record: agent_test_gateway:monitor_alert_threshold:values\n\s+expr: vector\(\{\{ \$value \| float64 \}\}\)/);
  t.match(
    group,
    /- record: agent_test_gateway:monitor_stale_after_seconds:values\n\s+expr: vector\(\{\{ include "agent-test-gateway\.monitorStaleAfterSeconds"/,
  );
  t.match(rulesFile, 'agent_test_gateway:monitor_stale_after_seconds:values');
  for (const label of [
    'namespace: {{ $.Release.Namespace | quote }}',
    'job: agent-test-gateway',
    'monitor: {{ $m.name',
    'agent: {{ $m.agent',
  ]) {
    t.match(group, label, label);
  }
  // The defaults the rules file falls back to are the chart's.
  const fallback = (record: string) => Number(new RegExp(`record: ${record}\\n[^]*?\\+ ([\\d.]+)\\n`).exec(rulesFile)?.[1]);
  const a = values.metrics.prometheusRule.monitorAlerts;
  t.equal(fallback('agent_test_gateway:monitor_pass_rate_drop:threshold'), a.passRateDropPoints / 100);
  t.equal(fallback('agent_test_gateway:monitor_min_attempts:threshold'), a.minAttempts);
  t.equal(fallback('agent_test_gateway:monitor_failing_ratio:threshold'), a.failingRatio);
  t.equal(fallback('agent_test_gateway:monitor_failing_min_attempts:threshold'), a.failingMinAttempts);
  t.equal(fallback('agent_test_gateway:monitor_stale_after_seconds'), 7200, 'staleAfter: 2 h');
});

t.test("a schedule's interval, and from it staleAfter (twice it, else 2 h) and the window", async (t) => {
  const interval = define('agent-test-gateway.monitorIntervalSeconds');
  t.match(interval, /eq \(index \$f 0\) "@hourly" \}\}\{\{ \$interval = 3600 \}\}/);
  t.match(interval, /has \(index \$f 0\) \(list "@daily" "@midnight"\) \}\}\{\{ \$interval = 86400 \}\}/);
  t.match(
    interval,
    /\(eq \$day "\*"\) \(regexMatch "\^\\\\\*\/\[0-9\]\+\$" \$min\) \(eq \$hour "\*"\) \}\}\{\{ \$interval = mul \(trimPrefix "\*\/" \$min \| int64\) 60 \}\}/,
  );
  t.match(interval, /\(eq \$day "\*"\) \(regexMatch "\^\[0-9\]\+\$" \$min\) \(eq \$hour "\*"\) \}\}\{\{ \$interval = 3600 \}\}/);
  t.match(
    interval,
    /\(regexMatch "\^\\\\\*\/\[0-9\]\+\$" \$hour\) \}\}\{\{ \$interval = mul \(trimPrefix "\*\/" \$hour \| int64\) 3600 \}\}/,
  );
  t.match(
    interval,
    /\(eq \$day "\*"\) \(regexMatch "\^\[0-9\]\+\$" \$min\) \(regexMatch "\^\[0-9\]\+\$" \$hour\) \}\}\{\{ \$interval = 86400 \}\}/,
  );
  t.match(interval, /\(has \$day \(list "1-5" "MON-FRI" "mon-fri"\)\) \}\}\{\{ \$interval = 259200 \}\}/, 'weekdays: the weekend gap');

  const stale = define('agent-test-gateway.monitorStaleAfterSeconds');
  t.match(stale, /get \(dict "s" 1 "m" 60 "h" 3600 "d" 86400\) \$unit/);
  t.match(stale, /\$interval := include "agent-test-gateway\.monitorIntervalSeconds" \. \| int64/);
  t.match(stale, /if gt \$interval 0 \}\}\{\{ mul \$interval 2 \}\}\{\{ else \}\}7200\{\{ end \}\}/);

  const window = define('agent-test-gateway.monitorWindow');
  t.match(window, /if \.monitor\.window \}\}\{\{ \.monitor\.window \| toString \}\}/, 'its own first');
  t.match(window, /if and \(gt \$interval 0\) \(le \$interval 7200\) \}\}6h/, 'runs at most 2 h apart: the last 6 hours');
  t.match(window, /else if gt \$interval 86400 \}\}74h/, 'weekdays: over the weekend');
  t.match(window, /else \}\}26h/, 'daily, hours apart, or not said plainly: the newest run, for a day and 2 h');
});
