// The chart's peers: a headless Service for PEER_DNS, PEER_SECRET generated once and kept (or an
// existing Secret), the optional NetworkPolicy, and an ingress that never routes /internal/.
// No helm binary here: templates are read as text and as their YAML skeleton (see helm.test.ts).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartDir, skeleton, templateText } from './support/chart.js';
import { type Json } from './support/http.js';

const text = templateText;
const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8'));

t.test('values: peers on by default, with the service defaults', async (t) => {
  t.match(values.peers, { enabled: true, existingSecret: '', secretKey: 'peer-secret', timeoutMs: 300 });
  t.same(values.peers.networkPolicy, { enabled: false, apiFrom: [] });
});

t.test('headless Service: every pod of the release, ready or draining', async (t) => {
  t.match(text('peers-service.yaml'), /^\{\{- if \.Values\.peers\.enabled \}\}/);
  const svc = skeleton('peers-service.yaml');
  t.equal(svc.spec.clusterIP, 'None');
  t.equal(svc.spec.publishNotReadyAddresses, true, 'a draining pod still holds sockets its siblings reach');
  t.same(svc.spec.ports[0], { name: 'http', port: 'TEMPLATED', targetPort: 'http', protocol: 'TCP' });
  t.match(text('peers-service.yaml'), /selector:\n\s+\{\{- include "agent-test-gateway\.selectorLabels"/);
});

t.test('PEER_SECRET: generated once, read back on upgrades, or an existing Secret', async (t) => {
  const secret = text('peers-secret.yaml');
  t.match(secret, /^\{\{- if and \.Values\.peers\.enabled \(not \.Values\.peers\.existingSecret\) \}\}/);
  t.match(secret, /lookup "v1" "Secret" \.Release\.Namespace \$name/, 'the value in the cluster wins');
  t.match(secret, /randAlphaNum 48 \| b64enc/, 'a random value on the first install');
  t.match(secret, /\$value = index \$existing\.data \$key/);
  t.match(skeleton('peers-secret.yaml').metadata.annotations, { 'helm.sh/resource-policy': 'keep' });
  t.match(text('_helpers.tpl'), /define "agent-test-gateway\.peerSecretName"[^]*\.Values\.peers\.existingSecret \| default/);
});

t.test('deployment: PEER_DNS is the headless Service, PEER_SECRET only from the Secret', async (t) => {
  const env = skeleton('deployment.yaml').spec.template.spec.containers[0].env;
  const byName = (name: string) => env.find((e: Json) => e.name === name);
  t.same(byName('PEER_SECRET').valueFrom, { secretKeyRef: { name: 'TEMPLATED', key: 'TEMPLATED' } });
  t.equal(byName('PEER_DNS').value, 'TEMPLATED');
  const deployment = text('deployment.yaml');
  t.match(
    deployment,
    /- name: PEER_DNS\n\s+value: \{\{ printf "%s\.%s\.svc" \(include "agent-test-gateway\.peerServiceName" \.\) \.Release\.Namespace/,
  );
  t.match(deployment, /- name: PEER_TIMEOUT_MS\n\s+value: \{\{ \.Values\.peers\.timeoutMs \| int64 \| quote \}\}/);
  t.match(deployment, /\{\{- if \.Values\.peers\.enabled \}\}\n(?:.*\n)*?\s+- name: PEER_DNS/, 'only with peers enabled');
});

t.test('NetworkPolicy: the release pods, and only the listed others', async (t) => {
  t.match(text('networkpolicy.yaml'), /^\{\{- if and \.Values\.peers\.enabled \.Values\.peers\.networkPolicy\.enabled \}\}/);
  const policy = skeleton('networkpolicy.yaml');
  t.same(policy.spec.policyTypes, ['Ingress']);
  t.same(policy.spec.ingress[0].ports, [{ port: 'http', protocol: 'TCP' }]);
  t.ok(policy.spec.ingress[0].from[0].podSelector.matchLabels !== undefined, 'pods of the release');
  t.match(text('networkpolicy.yaml'), /\{\{- with \.Values\.peers\.networkPolicy\.apiFrom \}\}/);
});

t.test('ingress never routes the peer routes', async (t) => {
  t.match(text('ingress.yaml'), /if or \(eq \.path "\/"\) \(hasPrefix "\/internal" \.path\)[^]*fail/);
  for (const host of values.ingress.hosts) {
    for (const p of host.paths) t.notOk(p.path === '/' || p.path.startsWith('/internal'), `${p.path} stays off /internal`);
  }
});
