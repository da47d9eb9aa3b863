// Deployment artefacts: the Helm chart, the Dockerfile and .dockerignore. No helm binary or
// cluster here, so the templates are read as text and as their YAML skeleton (Go-template
// actions taken out), and the values they use are checked against values.yaml.
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartDir, skeleton } from './support/chart.js';
import { type Json } from './support/http.js';
import { ROOT } from './support/root.js';

const templatesDir = join(chartDir, 'templates');
const read = (...path: string[]) => readFileSync(join(...path), 'utf8');

const chart = parse(read(chartDir, 'Chart.yaml'));
const values = parse(read(chartDir, 'values.yaml'));
const templateNames = readdirSync(templatesDir);
const text = (name: string) => read(templatesDir, name);

// Every manifest template, what it must declare, and when it renders.
const manifests: Record<string, { apiVersion: string; kind: string }> = {
  'deployment.yaml': { apiVersion: 'apps/v1', kind: 'Deployment' },
  'service.yaml': { apiVersion: 'v1', kind: 'Service' },
  'secret.yaml': { apiVersion: 'v1', kind: 'Secret' },
  'pdb.yaml': { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  'servicemonitor.yaml': { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor' },
  'ingress.yaml': { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' },
  'destinationrule.yaml': { apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule' },
  // test/helm-monitoring.test.ts checks these two further.
  'prometheusrule.yaml': { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' },
  'grafana-dashboard.yaml': { apiVersion: 'v1', kind: 'ConfigMap' },
  'peers-service.yaml': { apiVersion: 'v1', kind: 'Service' },
  'peers-secret.yaml': { apiVersion: 'v1', kind: 'Secret' },
  'networkpolicy.yaml': { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
  // test/helm-monitors.test.ts checks these two further.
  'monitor-cronjobs.yaml': { apiVersion: 'batch/v1', kind: 'CronJob' },
  'monitor-suites.yaml': { apiVersion: 'v1', kind: 'ConfigMap' },
};

// The service's environment: variable, values.config key, the service's documented default.
const envTable: Array<[string, string, unknown]> = [
  ['PROMETHIST_MCP_ENGINE_URL', 'engineUrl', ''],
  ['PROMETHIST_PLATFORM_URL', 'platformUrl', ''],
  ['PORT', 'port', 8080],
  ['HOST', 'host', '0.0.0.0'],
  ['LOG_LEVEL', 'logLevel', 'info'],
  ['TURN_BUDGET_MS', 'turnBudgetMs', 90000],
  ['IDLE_CLOSE_MS', 'idleCloseMs', 240000],
  ['MAX_CONVERSATIONS_PER_CALLER', 'maxConversationsPerCaller', 5],
  ['MAX_CONVERSATIONS_PER_POD', 'maxConversationsPerPod', 200],
  ['MAX_RUN_CONVERSATIONS_PER_POD', 'maxRunConversationsPerPod', 100],
  ['MAX_RUN_CONVERSATIONS_PER_CALLER', 'maxRunConversationsPerCaller', 50],
  ['SHUTDOWN_GRACE_MS', 'shutdownGraceMs', 95000],
  ['AUTH_CACHE_TTL_MS', 'authCacheTtlMs', 5000],
  ['PLATFORM_TIMEOUT_MS', 'platformTimeoutMs', 5000],
  ['ENGINE_CONNECT_TIMEOUT_MS', 'engineConnectTimeoutMs', 10000],
  ['REMEMBERED_CONVERSATIONS_MAX', 'rememberedConversationsMax', 10000],
  ['DEBUG_PAGE', 'debugPage', false],
];

t.test('Chart.yaml is a Helm 3 application chart at the package version', async (t) => {
  const pkg = JSON.parse(read(ROOT, 'package.json'));
  t.equal(chart.apiVersion, 'v2');
  t.equal(chart.name, 'agent-test-gateway');
  t.equal(chart.type, 'application');
  t.match(chart.version, /^\d+\.\d+\.\d+/);
  t.equal(chart.appVersion, pkg.version, 'the default image tag is the package version');
});

t.test('every .Values path a template uses exists in values.yaml', async (t) => {
  const used = new Set<string>();
  for (const name of templateNames) {
    for (const m of text(name).matchAll(/\.Values((?:\.[A-Za-z_]\w*)+)/g)) used.add(m[1]!.slice(1));
  }
  t.ok(used.size > 30, 'found the references');
  for (const path of used) {
    let node: Json = values;
    const ok = path.split('.').every((key) => {
      if (node === null || typeof node !== 'object' || !(key in node)) return false;
      node = node[key];
      return true;
    });
    t.ok(ok, `.Values.${path}`);
  }
});

t.test('every template is a known manifest with apiVersion and kind', async (t) => {
  const yamlTemplates = templateNames.filter((n) => n.endsWith('.yaml'));
  t.same(yamlTemplates.sort(), Object.keys(manifests).sort(), 'no template without a check');
  t.ok(templateNames.includes('_helpers.tpl'));
  t.ok(templateNames.includes('NOTES.txt'));
  for (const name of yamlTemplates) {
    const doc = skeleton(name);
    t.equal(doc.apiVersion, manifests[name]!.apiVersion, `${name} apiVersion`);
    t.equal(doc.kind, manifests[name]!.kind, `${name} kind`);
    t.ok(doc.metadata?.name, `${name} has a name`);
  }
  for (const name of ['secret.yaml', 'servicemonitor.yaml', 'ingress.yaml', 'destinationrule.yaml', 'pdb.yaml']) {
    t.match(text(name), /^\{\{- if [^}\n]*\.Values\./, `${name} is optional`);
  }
});

t.test('deployment: probes, ports, env, identity secret', async (t) => {
  const pod = skeleton('deployment.yaml').spec.template.spec;
  const [container] = pod.containers;
  t.same(container.ports, [{ name: 'http', containerPort: 'TEMPLATED', protocol: 'TCP' }]);
  t.same(container.livenessProbe.httpGet, { path: '/healthz', port: 'http' });
  t.same(container.startupProbe.httpGet, { path: '/healthz', port: 'http' });
  t.same(container.readinessProbe.httpGet, { path: '/readyz', port: 'http' });
  for (const probe of ['startup', 'liveness', 'readiness']) {
    t.ok(values.probes[probe].periodSeconds > 0, `${probe} timing in values`);
  }
  t.equal(pod.automountServiceAccountToken, false);
  t.same(container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }], 'writable /tmp on a read-only root');

  const deployment = text('deployment.yaml');
  for (const [name, key, fallback] of envTable) {
    const wired = new RegExp(`- name: ${name}\\n\\s+value: \\{\\{[^}]*\\.Values\\.config\\.${key}\\b`);
    t.match(deployment, wired, `${name} from config.${key}`);
    t.equal(values.config[key], fallback, `config.${key} defaults to the service's default`);
  }
  const identity = container.env.find((e: Json) => e.name === 'PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY');
  t.same(identity.valueFrom, { secretKeyRef: { name: 'TEMPLATED', key: 'TEMPLATED' } }, 'identity only from a Secret');
  t.same(Object.keys(values.identity).sort(), ['existingSecret', 'secretKey', 'value']);
  t.equal(values.identity.value, '', 'no identity in the default values');
});

t.test('restrictive security context', async (t) => {
  const deployment = text('deployment.yaml');
  t.match(deployment, /securityContext:\n\s+\{\{- toYaml \.Values\.podSecurityContext/);
  t.match(deployment, /securityContext:\n\s+\{\{- toYaml \.Values\.securityContext/);
  t.match(values.podSecurityContext, { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
  t.match(values.securityContext, {
    runAsNonRoot: true,
    runAsUser: 1000,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
});

t.test('termination outlasts the drain', async (t) => {
  const { turnBudgetMs, shutdownGraceMs } = values.config;
  const grace = values.terminationGracePeriodSeconds;
  t.ok(shutdownGraceMs > turnBudgetMs, 'a turn running at SIGTERM can finish in the grace');
  t.ok(grace > (turnBudgetMs + shutdownGraceMs) / 1000, 'longer than turn budget + shutdown grace');
  t.ok(grace > values.preStopSleepSeconds + (turnBudgetMs + shutdownGraceMs) / 1000, '…after the preStop sleep too');
  t.ok(values.preStopSleepSeconds > 0 && values.preStopSleepSeconds < 30);
  t.match(
    text('deployment.yaml'),
    /terminationGracePeriodSeconds: \{\{ include "agent-test-gateway\.terminationGracePeriodSeconds" \. \}\}/,
  );
  const helper = text('_helpers.tpl');
  t.match(helper, /define "agent-test-gateway\.terminationGracePeriodSeconds"[^]*fail/, 'a shorter value is refused');
  t.same(skeleton('deployment.yaml').spec.template.spec.containers[0].lifecycle.preStop.exec.command, ['sleep', 'TEMPLATED']);
  t.match(values.strategy.rollingUpdate, { maxUnavailable: 0 }, 'rollouts never drop capacity');
});

t.test('the heap follows the memory limit: --max-old-space-size is a share of it', async (t) => {
  t.equal(values.resources.limits.memory, '512Mi');
  t.equal(values.heap.percentOfMemoryLimit, 50, "half the limit for V8's old space: 256 MiB");
  const deployment = text('deployment.yaml');
  t.match(
    deployment,
    /\{\{- with include "agent-test-gateway\.maxOldSpaceMiB" \. \}\}\n(\s+#.*\n)?\s+- name: NODE_OPTIONS\n\s+value: \{\{ printf "--max-old-space-size=%s" \. \| quote \}\}/,
  );
  t.ok(deployment.indexOf('name: NODE_OPTIONS') < deployment.indexOf('.Values.extraEnv'), "before extraEnv's entries, which come last");
  const helper = /define "agent-test-gateway\.maxOldSpaceMiB"[^]*?\n\{\{- end \}\}\n\{\{- end \}\}/.exec(text('_helpers.tpl'))?.[0] ?? '';
  t.match(helper, /dig "limits" "memory" "" \(\.Values\.resources \| default dict\)/, 'read from resources.limits.memory');
  for (const [unit, bytes] of Object.entries({ Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, k: 1e3, M: 1e6, G: 1e9 })) {
    t.match(helper, `"${unit}" ${bytes}`, `a limit in ${unit}`);
  }
  t.match(helper, /if and \$percent \$number \(hasKey \$bytesPer \$unit\)/, 'none without a limit, a share, or a known unit');
  t.match(helper, 'divf (mulf $number (get $bytesPer $unit) $percent) 104857600 | floor | int', 'bytes × percent ÷ (100 × 1 MiB)');
});

t.test('PodDisruptionBudget', async (t) => {
  const pdb = skeleton('pdb.yaml');
  t.equal(pdb.kind, 'PodDisruptionBudget');
  t.ok(pdb.spec.selector.matchLabels !== undefined);
  t.equal(values.podDisruptionBudget.enabled, true, 'on by default');
  t.ok(values.podDisruptionBudget.maxUnavailable || values.podDisruptionBudget.minAvailable);
});

t.test('service, metrics and mesh routing', async (t) => {
  t.same(skeleton('service.yaml').spec.ports[0], {
    name: 'http',
    port: 'TEMPLATED',
    targetPort: 'http',
    protocol: 'TCP',
    appProtocol: 'http',
  });
  t.equal(values.service.sessionAffinity, 'ClientIP', 'direct in-cluster callers stay on one pod');
  const endpoint = skeleton('servicemonitor.yaml').spec.endpoints[0];
  t.match(endpoint, { port: 'http', path: '/metrics' });
  t.equal(values.metrics.serviceMonitor.enabled, false, 'needs the Prometheus Operator CRDs');
  const rule = skeleton('destinationrule.yaml');
  t.same(rule.spec.trafficPolicy.loadBalancer.consistentHash, { httpHeaderName: 'TEMPLATED' });
  t.equal(values.istio.destinationRule.hashHeader, 'X-Session-Id');
});

t.test('ingress keeps a conversation on the pod that holds it', async (t) => {
  const ingress = text('ingress.yaml');
  const annotations = skeleton('ingress.yaml').metadata.annotations;
  const snippet: string = annotations['nginx.ingress.kubernetes.io/configuration-snippet'];
  t.match(ingress, /nginx\.ingress\.kubernetes\.io\/upstream-hash-by: "\$agw_session_key"/);
  t.match(snippet, /^set \$agw_session_key \$request_id;\n/, 'calls without a session id are spread');
  t.match(snippet, /\{\n\s+set \$agw_session_key \$1;\n\}/);
  t.equal(values.ingress.routing.hashBy, 'caller', 'the start call and its turns reach one pod');

  const source = /if \(\$uri ~\* "([^"]+)"\)/.exec(snippet)?.[1];
  t.ok(source, 'the snippet matches $uri case-insensitively');
  const re = new RegExp(source!, 'i');
  const id = '5f0c2b8e-3a4d-4c1e-9b7a-1d2e3f4a5b6c';
  const turn = re.exec(`/v1/agents/coach.7/conversations/${id}/turns`);
  const one = re.exec(`/v1/agents/coach/conversations/${id}`);
  t.equal(turn?.[1], id, 'turn path: the session id');
  t.equal(one?.[1], id, 'GET / DELETE path: the same session id');
  for (const other of [
    '/v1/agents/coach/conversations',
    '/v1/conversations',
    `/v1/agents/coach/memory/mcp:${id}`,
    `/v1/agents/coach/conversations/${id}x/turns`,
  ]) {
    t.equal(re.exec(other), null, `no session key for ${other}`);
  }

  // nginx's 60 s default would cut a turn off.
  const { turnBudgetMs, engineConnectTimeoutMs, platformTimeoutMs } = values.config;
  t.ok(values.ingress.proxyTimeoutSeconds > (turnBudgetMs + engineConnectTimeoutMs + platformTimeoutMs) / 1000);
  t.equal(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'], 'TEMPLATED');
  t.match(ingress, /proxy-read-timeout: \{\{ include "agent-test-gateway\.proxyTimeoutSeconds"/);
  t.notOk(
    values.ingress.hosts.some((h: Json) => h.paths.some((p: Json) => p.path === '/')),
    '/metrics and the probes stay in-cluster',
  );
});

t.test('Dockerfile: multi-stage, non-root, health-checked, the entrypoint as the command', async (t) => {
  // Instructions with continuation lines joined and comments dropped.
  const instructions = read(ROOT, 'Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const froms = instructions.filter((l) => /^FROM /i.test(l));
  t.ok(froms.length >= 2, 'multi-stage');
  t.match(froms[0], /^FROM \S+ AS build$/i);
  const base = instructions.find((l) => l.startsWith('ARG NODE_IMAGE='));
  t.match(base, /^ARG NODE_IMAGE=node:24-(slim|alpine)$/);

  const runtimeAt = instructions.lastIndexOf(froms[froms.length - 1]!);
  const build = instructions.slice(0, runtimeAt);
  const runtime = instructions.slice(runtimeAt);
  t.ok(
    build.some((l) => /^RUN npm ci --ignore-scripts$/.test(l)),
    'build stage: all deps, no prepare',
  );
  const buildAt = build.findIndex((l) => /^RUN npm run build$/.test(l));
  t.ok(buildAt >= 0, 'build stage: npm run build');
  // What `npm run build` runs from the checkout is copied into the build stage before it.
  const buildCommand = (JSON.parse(read(ROOT, 'package.json')) as { scripts: Record<string, string> }).scripts.build!;
  for (const file of buildCommand.split(' ').filter((word) => word.includes('/'))) {
    t.ok(
      build.slice(0, buildAt).some((l) => l.startsWith('COPY ') && l.split(' ').includes(file)),
      `${file} (npm run build: ${buildCommand}) is copied before the build`,
    );
  }
  t.ok(
    runtime.some((l) => /^RUN npm ci --omit=dev --ignore-scripts\b/.test(l)),
    'runtime: production deps only',
  );
  t.ok(runtime.some((l) => /^COPY --from=build \/app\/dist /.test(l)));
  t.ok(runtime.some((l) => /^COPY openapi\.yaml /.test(l)));
  t.ok(
    runtime.some((l) => /^COPY public \.\/public$/.test(l)),
    "the debug page's files beside dist/, where src/routes/debug.ts finds them",
  );
  t.ok(runtime.includes('ENV NODE_ENV=production'));
  const user = runtime.filter((l) => l.startsWith('USER ')).pop();
  t.equal(user, 'USER node', "runs as the image's node user");
  t.ok(runtime.includes('EXPOSE 8080'));
  t.ok(runtime.includes('WORKDIR /app'), 'the package in /app, where the entrypoint names it');
  const health = runtime.find((l) => l.startsWith('HEALTHCHECK '));
  t.match(health, /CMD \["node", "-e", .*\/healthz/, 'HEALTHCHECK with node itself');
  const entrypoint = runtime.find((l) => l.startsWith('ENTRYPOINT '));
  t.same(
    JSON.parse(entrypoint!.slice('ENTRYPOINT '.length)),
    ['/usr/bin/tini', '--', 'node', '/app/dist/entrypoint.js'],
    'tini forwards SIGTERM to the entrypoint, which serves or runs the CLI (test/package.test.ts runs it); ' +
      'an absolute path, so that it runs from any working directory',
  );
  const cmd = runtime.find((l) => l.startsWith('CMD '));
  t.same(JSON.parse(cmd!.slice('CMD '.length)), ['serve'], 'serves unless given CLI arguments');

  const ignored = read(ROOT, '.dockerignore')
    .split('\n')
    .map((l) => l.trim());
  for (const p of ['node_modules', 'dist', '.git', 'test', 'bench', 'coverage', '.tap', 'helm']) {
    t.ok(ignored.includes(p), `.dockerignore: ${p}`);
  }
  const neededFiles = [
    'src',
    'public',
    'scripts',
    'package.json',
    'package-lock.json',
    'openapi.yaml',
    'tsconfig.json',
    'tsconfig.build.json',
  ];
  for (const needed of neededFiles) {
    t.notOk(ignored.includes(needed), `${needed} reaches the build`);
  }
});
