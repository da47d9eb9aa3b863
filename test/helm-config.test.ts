// The chart's config.* against the service's own list of environment variables: every variable
// the service reads can be set from values.yaml, under a key whose comment names it, wired into
// the Deployment's env, and defaulting to what the service itself defaults to. No helm binary
// here: the templates are read as text (test/helm.test.ts does the same).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { ENV_VARIABLES, loadConfig, type Config } from '../src/ops/config.js';
import { chartDir } from './support/chart.js';

const valuesText = readFileSync(join(chartDir, 'values.yaml'), 'utf8');
const values = parse(valuesText);
const deployment = readFileSync(join(chartDir, 'templates', 'deployment.yaml'), 'utf8');
const helpers = readFileSync(join(chartDir, 'templates', '_helpers.tpl'), 'utf8');

/** Secrets come from a Secret (secretKeyRef), never from a plain config.* value. */
const FROM_SECRET = new Set(['PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY', 'PEER_SECRET', 'MODEL_API_KEY']);

/** Variables the chart sets from elsewhere than config.*, each with the place that sets it. */
const SET_ELSEWHERE: Record<string, RegExp | undefined> = {
  // Baked into the image at build time (the Dockerfile's GIT_REVISION build argument).
  GIT_REVISION: undefined,
  // A static peer list, for setups without DNS: the chart uses PEER_DNS instead.
  PEERS: undefined,
  // In the chart every pod finds itself among PEER_DNS's records (its pod IP): for NATs outside it.
  PEER_ADDRESS: undefined,
  PEER_DNS: /- name: PEER_DNS\n\s+value: \{\{ printf "%s\.%s\.svc" \(include "agent-test-gateway\.peerServiceName" \.\)/,
  PEER_TIMEOUT_MS: /- name: PEER_TIMEOUT_MS\n\s+value: \{\{ \.Values\.peers\.timeoutMs/,
};

/** The values.config key a variable's env entry reads, from the Deployment template. */
function configKeyOf(name: string): string | undefined {
  const entry = new RegExp(`- name: ${name}\\n\\s+value: \\{\\{[^}]*\\.Values\\.config\\.(\\w+)\\b`).exec(deployment);
  return entry?.[1];
}

/** The comment block right above `key:` in the config section of values.yaml. */
function commentAbove(key: string): string {
  const lines = valuesText.split('\n');
  const at = lines.findIndex((line) => new RegExp(`^  ${key}:`).test(line));
  const comment: string[] = [];
  for (let i = at - 1; i >= 0 && /^\s*#/.test(lines[i]!); i--) comment.unshift(lines[i]!);
  // A comment may describe two keys at once ("A / B: …") and sit above the first of them.
  for (let i = at - 1; comment.length === 0 && i >= 0 && /^ {2}\w+:/.test(lines[i]!); i--) {
    for (let j = i - 1; j >= 0 && /^\s*#/.test(lines[j]!); j--) comment.unshift(lines[j]!);
  }
  return comment.join('\n');
}

const camel = (name: string): string => name.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

t.test('the service reads the variables this test checks', async (t) => {
  t.ok(ENV_VARIABLES.length >= 19, `${ENV_VARIABLES.length} variables`);
  for (const name of ['ENGINE_MAX_FRAME_BYTES', 'REMEMBERED_CONVERSATIONS_TTL_MS', 'MAX_BODY_BYTES']) {
    t.ok(ENV_VARIABLES.includes(name), name);
  }
});

t.test('every variable of the service is set by the Deployment', async (t) => {
  for (const name of ENV_VARIABLES) {
    if (name in SET_ELSEWHERE) {
      const where = SET_ELSEWHERE[name];
      if (where === undefined) t.notMatch(deployment, new RegExp(`- name: ${name}\\n`), `${name} is not the chart's to set`);
      else t.match(deployment, where, `${name} is set by the chart outside config.*`);
      continue;
    }
    if (FROM_SECRET.has(name)) {
      t.match(deployment, new RegExp(`- name: ${name}\\n\\s+valueFrom:\\n\\s+secretKeyRef:`), `${name} from a Secret`);
      continue;
    }
    const key = configKeyOf(name);
    t.ok(key, `${name} is in the Deployment's env, from a config.* value`);
    if (key === undefined) continue;
    t.ok(key in values.config, `config.${key} exists in values.yaml`);
    t.match(commentAbove(key), new RegExp(`\\b${name}\\b`), `the comment above config.${key} names ${name}`);
  }
});

t.test("config.* defaults are the service's own defaults", async (t) => {
  const defaults = loadConfig({ PROMETHIST_MCP_ENGINE_URL: 'http://engine', PROMETHIST_PLATFORM_URL: 'http://platform' });
  let compared = 0;
  for (const name of ENV_VARIABLES) {
    const key = configKeyOf(name);
    const field = camel(name) as keyof Config;
    // Only the settings whose Config field is named after the variable (the numbers and switches).
    if (key === undefined || !(field in defaults)) continue;
    if (name === 'MCP_AUTHORIZATION_SERVERS') {
      // Empty in the chart, so the service's own default (the platform URL) applies.
      t.equal(values.config[key], '', `config.${key} is empty: the service defaults to the platform URL`);
      continue;
    }
    t.equal(values.config[key], defaults[field], `config.${key} = ${JSON.stringify(defaults[field])}`);
    compared += 1;
  }
  t.ok(compared >= 14, `${compared} defaults compared`);
});

t.test('numbers reach the container as whole numbers, never 1e+06', async (t) => {
  for (const key of ['engineMaxFrameBytes', 'rememberedConversationsTtlMs', 'maxBodyBytes']) {
    t.match(deployment, new RegExp(`\\.Values\\.config\\.${key} \\| int64 \\| quote`), `config.${key} through int64`);
  }
});

t.test('the terminationGracePeriodSeconds formula is explained where it is enforced', async (t) => {
  const at = helpers.indexOf('{{- define "agent-test-gateway.terminationGracePeriodSeconds" -}}');
  t.ok(at > 0, 'the helper exists');
  const comment = helpers.slice(helpers.lastIndexOf('{{/*', at), at);
  t.match(comment, /preStopSleepSeconds \+ \(config\.turnBudgetMs \+ config\.shutdownGraceMs\) \/ 1000/, 'the formula');
  for (const term of ['preStopSleepSeconds', 'config.shutdownGraceMs', 'config.turnBudgetMs']) {
    t.match(comment, new RegExp(`- ${term.replace('.', '\\.')}: \\S`), `why ${term} is in it`);
  }
  t.match(comment, /SIGKILL/, 'what goes wrong below it');
  const { preStopSleepSeconds, terminationGracePeriodSeconds, config } = values;
  t.ok(
    terminationGracePeriodSeconds > preStopSleepSeconds + (config.turnBudgetMs + config.shutdownGraceMs) / 1000,
    'the default satisfies it',
  );
});
