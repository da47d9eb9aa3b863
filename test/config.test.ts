import { spawnSync } from 'node:child_process';
import { inspect } from 'node:util';
import t from 'tap';
import { parseEngineIdentity } from '../src/engine/identity.js';
import { ConfigError, loadConfig } from '../src/ops/config.js';
import { childEnv } from './support/stack.js';
import { scaled } from './support/time.js';

const base = { PROMETHIST_MCP_ENGINE_URL: 'https://engine.example', PROMETHIST_PLATFORM_URL: 'https://platform.example/' };

t.test('defaults are the ones docs/configuration.md states', async (t) => {
  const config = loadConfig(base);
  t.match(config, {
    engineUrl: 'https://engine.example',
    platformUrl: 'https://platform.example',
    port: 8080,
    host: '0.0.0.0',
    logLevel: 'info',
    turnBudgetMs: 90_000,
    idleCloseMs: 240_000,
    maxConversationsPerCaller: 5,
    maxConversationsPerPod: 200,
    maxRunConversationsPerPod: 100,
    maxRunConversationsPerCaller: 50,
    rememberedConversationsMax: 10_000,
    rememberedConversationsTtlMs: 86_400_000,
    memoryPollMs: 3_000,
    debugPage: false,
  });
  t.ok(config.shutdownGraceMs > config.turnBudgetMs, 'running turns may finish within the grace');
  t.equal(config.engineIdentity.state, 'none');
  t.equal(config.model, undefined, 'no model unless MODEL_BASE_URL is set');
  const model = loadConfig({ ...base, MODEL_BASE_URL: 'https://api.example/v1/', MODEL_API_KEY: 'sk-abc', SIMULATOR_MODEL: 'small' });
  t.same(model.model, {
    baseUrl: 'https://api.example/v1',
    apiKey: 'sk-abc',
    simulatorModel: 'small',
    judgeModel: 'small',
    timeoutMs: 60_000,
  });
});

t.test('a wrong value names the variable and the rule', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{}, /PROMETHIST_MCP_ENGINE_URL is required[\s\S]*PROMETHIST_PLATFORM_URL is required/],
    [{ ...base, PROMETHIST_MCP_ENGINE_URL: 'ws://engine' }, /PROMETHIST_MCP_ENGINE_URL must be an absolute http:\/\/ or https:\/\/ URL/],
    [{ ...base, PORT: 'eighty' }, /PORT must be a whole number from 0 to 65535/],
    [{ ...base, TURN_BUDGET_MS: '-5' }, /TURN_BUDGET_MS must be a whole number from 1/],
    [{ ...base, MAX_CONVERSATIONS_PER_POD: '1.5' }, /MAX_CONVERSATIONS_PER_POD must be a whole number/],
    [{ ...base, MAX_RUN_CONVERSATIONS_PER_CALLER: '0' }, /MAX_RUN_CONVERSATIONS_PER_CALLER must be a whole number from 1/],
    [{ ...base, MAX_RUN_CONVERSATIONS_PER_POD: 'many' }, /MAX_RUN_CONVERSATIONS_PER_POD must be a whole number from 1/],
    [
      { ...base, MAX_RUN_CONVERSATIONS_PER_POD: '200' },
      /MAX_RUN_CONVERSATIONS_PER_POD \(200\) must be below MAX_CONVERSATIONS_PER_POD \(200\), so that conversations other than/,
    ],
    [
      { ...base, MAX_CONVERSATIONS_PER_POD: '50', MAX_RUN_CONVERSATIONS_PER_POD: '60' },
      /MAX_RUN_CONVERSATIONS_PER_POD \(60\) must be below MAX_CONVERSATIONS_PER_POD \(50\)/,
    ],
    [{ ...base, LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/],
    [{ ...base, DEBUG_PAGE: 'maybe' }, /DEBUG_PAGE must be true or false/],
    [{ ...base, MEMORY_POLL_MS: '0' }, /MEMORY_POLL_MS must be a whole number from 1 to 60000/],
    [{ ...base, MODEL_BASE_URL: 'ftp://model' }, /MODEL_BASE_URL must be an absolute http:\/\/ or https:\/\/ URL/],
    [{ ...base, MODEL_BASE_URL: 'http://model/v1' }, /SIMULATOR_MODEL is required when MODEL_BASE_URL is set/],
    [{ ...base, MODEL_API_KEY: 'sk-abc' }, /MODEL_API_KEY is set but MODEL_BASE_URL is not/],
    [
      { ...base, MODEL_BASE_URL: 'http://model/v1', SIMULATOR_MODEL: 'm', MODEL_TIMEOUT_MS: '0' },
      /MODEL_TIMEOUT_MS must be a whole number from 1/,
    ],
  ];
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), ConfigError);
    t.throws(() => loadConfig(env), { message }, JSON.stringify(env));
  }
});

t.test("the pod's run budget: set, below the pod's limit; unset, 100 or half the pod's limit", async (t) => {
  t.equal(loadConfig({ ...base, MAX_RUN_CONVERSATIONS_PER_POD: '199' }).maxRunConversationsPerPod, 199);
  t.equal(loadConfig({ ...base, MAX_CONVERSATIONS_PER_POD: '1000' }).maxRunConversationsPerPod, 100);
  t.equal(loadConfig({ ...base, MAX_CONVERSATIONS_PER_POD: '50' }).maxRunConversationsPerPod, 25);
  t.equal(loadConfig({ ...base, MAX_CONVERSATIONS_PER_POD: '2' }).maxRunConversationsPerPod, 1);
  t.equal(loadConfig({ ...base, MAX_CONVERSATIONS_PER_POD: '1' }).maxRunConversationsPerPod, 1, 'a pod of one still runs suites');
  t.equal(loadConfig({ ...base, MAX_RUN_CONVERSATIONS_PER_CALLER: '80' }).maxRunConversationsPerCaller, 80);
});

t.test('the engine identity: accepted forms, malformed values, never printed', async (t) => {
  const encoded = Buffer.from('tester:s3cret').toString('base64');
  t.equal(parseEngineIdentity(undefined).state, 'none');
  t.equal(parseEngineIdentity('  ').state, 'none');
  t.equal(parseEngineIdentity('tester:s3cret').authorizationHeader(), `Basic ${encoded}`);
  t.equal(parseEngineIdentity(`Basic ${encoded}`).authorizationHeader(), `Basic ${encoded}`);
  t.equal(parseEngineIdentity(`basic ${encoded}`).state, 'ok');
  t.equal(parseEngineIdentity('tester:pass:with:colons').state, 'ok');
  for (const bad of [
    'Bearer abc',
    'Bearer a:b',
    'Basic !!!',
    `Basic ${Buffer.from('nocolon').toString('base64')}`,
    'nocolon',
    ':password',
    'Basic',
  ]) {
    const identity = parseEngineIdentity(bad);
    t.equal(identity.state, 'malformed', JSON.stringify(bad));
    t.equal(identity.authorizationHeader(), undefined, 'a malformed value is never sent');
  }
  const identity = parseEngineIdentity('tester:s3cret');
  const printed = [
    JSON.stringify({ identity }),
    inspect(identity),
    `${JSON.stringify(loadConfig({ ...base, PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: 'tester:s3cret' }))}`,
  ];
  for (const text of printed) {
    t.notOk(text.includes('s3cret') || text.includes(encoded), `redacted: ${text.slice(0, 60)}`);
  }
});

t.test('the server refuses to start on a wrong value, without echoing secrets', async (t) => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: childEnv({ ...base, PORT: 'eighty', PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: 'tester:s3cret' }),
    encoding: 'utf8',
    timeout: scaled(20_000),
  });
  t.equal(run.status, 1);
  t.match(run.stderr, /PORT must be a whole number/);
  t.notOk(run.stderr.includes('s3cret'));
});
