import t from 'tap';
import { startStack } from './support/stack.js';
import { scaled } from './support/time.js';
import { turnPath } from './support/http.js';

const start = '/v1/agents/%s/conversations';
const startOf = (agent: string) => start.replace('%s', agent);

t.test('who may call: tokens and roles', async (t) => {
  const s = await startStack(t);
  const none = await s.call('POST', startOf('coach'), { token: null });
  t.equal(none.status, 401);
  t.equal(none.body.error, 'unauthenticated');
  const notBearer = await s.call('POST', startOf('coach'), { token: null, headers: { authorization: 'Basic abc' } });
  t.equal(notBearer.status, 401);
  t.equal(s.platform.count(), 0, 'no platform call without a bearer token');

  const rejected = await s.call('POST', startOf('coach'), { token: 'not-a-real-token' });
  t.equal(rejected.status, 401);
  t.match(rejected.body.message, /does not accept this access token/);

  for (const [token, agent] of [
    ['outsider-token', 'coach'],
    ['demo-token', 'hidden'],
    ['outsider-token', 'coach.4'],
  ] as const) {
    const denied = await s.call('POST', startOf(agent), { token });
    t.equal(denied.status, 403, `${token} on ${agent}`);
    t.equal(denied.body.error, 'forbidden');
  }
  const tenant = await s.call('POST', startOf('coach'), { token: 'tenant-token' });
  t.equal(tenant.status, 201, 'a tenant role falls through to the project');
  t.equal(s.engine.record.connections.length, 1, 'only the allowed call reached the engine');
  t.ok(
    s.platform.requests.every((r) => r.authorization === undefined || r.authorization.startsWith('Bearer ')),
    "the caller's bearer token is what the platform gets",
  );
});

t.test('which revision runs', async (t) => {
  const s = await startStack(t);
  const cases: Array<[string, number, string | null, RegExp | null, string | null]> = [
    ['coach', 201, null, null, 'coach'],
    ['coach.2', 201, null, null, 'coach.2'],
    ['coach.3', 201, null, null, 'coach.3'],
    ['preview-only.1', 201, null, null, 'preview-only.1'],
    ['coach.4', 409, 'revision_not_runnable', /Draft.*promote it to Preview to test it/, null],
    ['coach.1', 409, 'revision_not_runnable', /Archived/, null],
    ['coach.9', 404, 'revision_not_found', /no revision 9/, null],
    // Only a Draft: the answer says at once to promote it, rather than sending the caller to draft-only.1 first.
    ['draft-only', 409, 'no_published_revision', /has only a Draft \(revision 1\).*promote it to Preview to test it/, null],
    ['preview-only', 409, 'no_published_revision', /preview-only\.1/, null],
    ['nobody', 404, 'agent_not_found', /nobody/, null],
  ];
  for (const [agent, status, code, message, key] of cases) {
    const answer = await s.call('POST', startOf(agent));
    t.equal(answer.status, status, `${agent}: ${status}`);
    if (code) t.equal(answer.body.error, code, `${agent}: ${code}`);
    if (message) t.match(answer.body.message, message);
    if (key) t.equal(answer.body.agent, `agent:${key}`);
  }
  t.same(
    s.engine.record.connections.map((c) => c.agentKey),
    ['coach', 'coach.2', 'coach.3', 'preview-only.1'],
    'refused revisions never reached the engine',
  );
});

t.test('platform faults answer 503 platform_unavailable within the timeout', async (t) => {
  // Scaled by TEST_TIME_SCALE: the look-ups of the last call, which the platform answers, must fit in it.
  const timeoutMs = scaled(300);
  const s = await startStack(t, { env: { PLATFORM_TIMEOUT_MS: String(timeoutMs), AUTH_CACHE_TTL_MS: '0' } });
  for (const fault of [{ status: 500 }, { hang: true }, { malformed: true }, { delayMs: timeoutMs * 3 }]) {
    s.platform.faults = fault;
    const started = Date.now();
    const answer = await s.call('POST', startOf('coach'));
    t.equal(answer.status, 503, JSON.stringify(fault));
    t.equal(answer.body.error, 'platform_unavailable');
    const took = Date.now() - started;
    t.ok(took < timeoutMs + scaled(1200), `answered within the timeout (${took} ms, the timeout ${timeoutMs} ms)`);
  }
  s.platform.faults = {};
  t.equal((await s.call('POST', startOf('coach'))).status, 201, 'recovers when the platform does');
  t.equal(s.engine.record.connections.length, 1);
});

t.test('authorization is cached per caller and agent, and concurrent look-ups coalesce', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  const afterFirst = s.platform.count();
  t.equal(afterFirst, 5, 'users/me, revisions, agent, project context, project');
  for (let i = 0; i < 10; i++) {
    const turn = await s.call('POST', turnPath(sessionId), { body: { line: `line ${i}` } });
    t.equal(turn.status, 200);
  }
  t.equal(s.platform.count(), afterFirst, '10 turns cost no platform round trip');
  const hits = async () => Number(/auth_cache_requests_total\{result="hit"\} (\d+)/.exec((await s.call('GET', '/metrics')).text)![1]);
  const hitsBefore = await hits();
  await s.call('POST', turnPath(sessionId), { body: { line: 'one more' } });
  t.equal((await hits()) - hitsBefore, 2, 'a cached turn counts its two hits: the token and the agent');

  // A refusal is cached as a whole, and answered from the cache with its own reason.
  for (let i = 0; i < 2; i++) {
    const refused = await s.call('POST', '/v1/agents/coach.99/conversations', { body: {} });
    t.equal(refused.body.error, 'revision_not_found', `refusal ${i + 1}`);
  }
  t.equal(s.platform.count('/api/v1/agents/coach/revisions'), 2, 'the second refusal came from the cache');

  s.platform.reset();
  s.platform.faults = { delayMs: 100 };
  const answers = await Promise.all(Array.from({ length: 4 }, () => s.call('GET', '/v1/agents/coach.3/conversations/' + sessionId)));
  t.ok(
    answers.every((a) => a.status === 403),
    'another agent: refused to each',
  );
  t.equal(s.platform.count('/api/v1/agents/coach/revisions'), 1, 'four concurrent look-ups, one platform call');
  const metrics = (await s.call('GET', '/metrics')).text;
  t.match(metrics, /agent_test_gateway_auth_cache_requests_total\{result="coalesced"\} [1-9]/);
  t.match(metrics, /agent_test_gateway_auth_cache_requests_total\{result="hit"\} [1-9]/);
});

t.test('a failure is answered to every coalesced waiter and not cached', async (t) => {
  const s = await startStack(t);
  s.platform.faults = { status: 502, delayMs: 100 };
  const answers = await Promise.all(Array.from({ length: 5 }, () => s.call('POST', startOf('coach'))));
  t.ok(answers.every((a) => a.status === 503 && a.body.error === 'platform_unavailable'));
  t.equal(s.platform.count('/api/v1/users/me'), 1, 'coalesced into one call');
  s.platform.faults = {};
  t.equal((await s.call('POST', startOf('coach'))).status, 201, 'the failure was not cached');
});

t.test('engine sign-in for closed projects', async (t) => {
  const s = await startStack(t);
  const closed = await s.call('POST', startOf('secure'));
  t.equal(closed.status, 201, 'a closed project runs with the test identity');
  const open = await s.call('POST', startOf('coach'));
  const extNoIdp = await s.call('POST', startOf('extnoidp'));
  t.equal(extNoIdp.status, 201);
  const [secure, coach, ext] = s.engine.record.connections;
  t.equal(secure!.authorization, `Basic ${Buffer.from('tester:s3cret').toString('base64')}`);
  t.equal(coach!.authorization, undefined, 'open projects never get the header');
  t.equal(ext!.authorization, undefined, 'external roles without an identity provider is open');
  t.equal(open.status, 201);

  const notEnabled = await s.call('POST', startOf('idp'));
  t.equal(notEnabled.status, 502);
  t.equal(notEnabled.body.error, 'identity_not_enabled');
  t.match(notEnabled.body.message, /not enabled for the project/);
  t.equal(s.app.conversationRegistry.stats.open, 3, 'the refused session holds no place');
});

t.test('identity problems say why', async (t) => {
  const cases: Array<[string, number, string, RegExp]> = [
    ['', 503, 'identity_not_configured', /no engine test identity is configured/],
    ['Bearer abc', 503, 'identity_malformed', /not HTTP Basic credentials.*never sent/],
    ['Basic !!!', 503, 'identity_malformed', /never sent/],
    ['nobody:wrong', 502, 'identity_unrecognised', /not one this engine has/],
  ];
  for (const [identity, status, code, message] of cases) {
    const s = await startStack(t, { env: { PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: identity } });
    const answer = await s.call('POST', startOf('secure'));
    t.equal(answer.status, status, `${JSON.stringify(identity)}: ${status}`);
    t.equal(answer.body.error, code);
    t.match(answer.body.message, message);
    const sent = s.engine.record.connections.length;
    t.equal(sent, code === 'identity_unrecognised' ? 1 : 0, 'a missing or malformed identity sends nothing');
    t.equal((await s.call('POST', startOf('coach'))).status, 201, 'open projects keep working');
    if (code === 'identity_malformed') {
      t.ok(
        s.logs.some((line) => /not HTTP Basic credentials/.test(line)),
        'a start-up warning says so',
      );
      t.notOk(
        s.logs.some((line) => line.includes(identity)),
        'without the value',
      );
    }
    const metrics = (await s.call('GET', '/metrics')).text;
    if (code === 'identity_unrecognised') {
      t.match(metrics, /agent_test_gateway_engine_connects_total\{result="unrecognised",kind="new"\} 1/);
    }
  }
});

t.test('the Basic form of the identity is accepted as configured', async (t) => {
  const basic = `Basic ${Buffer.from('tester:s3cret').toString('base64')}`;
  const s = await startStack(t, { env: { PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: basic } });
  t.equal((await s.call('POST', startOf('secure'))).status, 201);
  t.equal(s.engine.record.connections[0]!.authorization, basic);
});

t.test('no secret in logs, errors, metrics or responses', async (t) => {
  const s = await startStack(t);
  const secrets = ['demo-token', 'bob-token', 's3cret', Buffer.from('tester:s3cret').toString('base64')];
  const seen: string[] = [];
  const { sessionId } = await s.open('secure');
  seen.push(JSON.stringify((await s.call('POST', `/v1/agents/secure/conversations/${sessionId}/turns`, { body: { line: 'hi' } })).body));
  seen.push((await s.call('POST', startOf('idp'))).text);
  seen.push((await s.call('POST', startOf('coach'), { token: 'bob-token', body: { line: '#exit' } })).text);
  seen.push((await s.call('GET', '/v1/conversations', { token: 'bob-token' })).text);
  seen.push((await s.call('GET', '/metrics')).text);
  seen.push(JSON.stringify(s.app.config), JSON.stringify(s.app.config.engineIdentity));
  await s.app.close();
  const everything = [...seen, ...s.logs].join('\n');
  t.ok(s.logs.length > 5, 'there were log lines to check');
  for (const secret of secrets) t.notOk(everything.includes(secret), `no ${secret.slice(0, 4)}… anywhere`);
});
