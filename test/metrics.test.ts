import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import t from 'tap';
import { readFileSync } from 'node:fs';
import { bucketsUpTo, REFUSAL_REASONS } from '../src/ops/metrics.js';
import { eventually, REFUSAL_WORKLOAD_ENV, startStack, STACK_TURN_BUDGET_MS } from './support/stack.js';
import { comparePath, memoryPath, runPath, turnPath, type Answer } from './support/http.js';
import { scaled } from './support/time.js';
import { needs, toolPath } from './support/tools.js';

/** `name{a="b",…} value` lines of the Prometheus text format. */
function samples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

const value = (text: string, name: string, labels: Record<string, string> = {}) =>
  samples(text).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

t.test('a scripted run shows up in every metric', async (t) => {
  // Scaled by TEST_TIME_SCALE: the other turns run under the same budget and must end with their exit.
  const budgetMs = scaled(300);
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(budgetMs), MAX_CONVERSATIONS_PER_CALLER: '2' } });
  const p = 'agent_test_gateway_';
  const a = await s.open();
  await s.call('POST', turnPath(a.sessionId), { body: { line: 'hello' } });
  const b = await s.open();
  const timedOut = await s.call('POST', turnPath(b.sessionId), { body: { line: 'sim:hang' } });
  t.equal(timedOut.body.turn.outcome, 'timeout');
  await s.open(); // a and the new one: no eviction yet (b closed)
  await s.open(); // evicts a, the least recently used idle one
  await s.call('POST', turnPath(a.sessionId), { body: { line: 'back' } }); // reconnect, evicts again
  await s.call('POST', '/v1/agents/nobody/conversations');
  await eventually(() => s.app.conversationRegistry.stats.busy === 0);

  const text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}turn_duration_seconds_count`, { outcome: 'timeout' }), 1, 'one timeout turn');
  // Bounds …, the one under the budget, the budget, 1.1 × the budget (0.2, 0.3, 0.33 for 0.3 s); a timeout lands just past it.
  const bounds = bucketsUpTo(budgetMs);
  const under = String(bounds[bounds.indexOf(budgetMs / 1000) - 1]);
  const past = String(bounds.at(-1));
  t.equal(value(text, `${p}turn_duration_seconds_bucket`, { outcome: 'timeout', le: under }), 0, 'not under the budget');
  t.equal(value(text, `${p}turn_duration_seconds_bucket`, { outcome: 'timeout', le: past }), 1, 'in the bucket just past the budget');
  t.equal(value(text, `${p}turn_budget_seconds`), budgetMs / 1000, 'the budget is exported');
  t.equal(value(text, `${p}turn_duration_seconds_count`, { outcome: 'exit' }), 6);
  t.equal(value(text, `${p}evictions_total`, { limit: 'caller' }), 2);
  t.equal(value(text, `${p}evictions_total`, { limit: 'pod' }), 0);
  t.equal(value(text, `${p}conversation_closes_total`, { cause: 'evicted' }), 2);
  t.equal(value(text, `${p}conversation_closes_total`, { cause: 'turn_failed' }), 1);
  t.equal(value(text, `${p}open_conversations`), 2);
  t.equal(value(text, `${p}busy_conversations`), 0);
  t.equal(value(text, `${p}remembered_conversations`), 3);
  t.equal(value(text, `${p}engine_connects_total`, { result: 'ok', kind: 'new' }), 4);
  t.equal(value(text, `${p}engine_connects_total`, { result: 'ok', kind: 'reconnect' }), 1);
  t.ok(value(text, `${p}platform_request_duration_seconds_count`, { operation: '/api/v1/users/me', status: '2xx' })! >= 1);
  t.equal(value(text, `${p}platform_request_duration_seconds_count`, { operation: '/api/v1/agents/{ref}/revisions', status: '4xx' }), 1);
  t.ok(value(text, `${p}auth_cache_requests_total`, { result: 'hit' })! >= 1);
  t.ok(value(text, `${p}auth_cache_requests_total`, { result: 'miss' })! >= 1);
  t.ok(value(text, 'process_resident_memory_bytes')! > 0, 'process defaults under their standard names');
  t.ok(
    samples(text).some((x) => x.name === 'nodejs_eventloop_lag_seconds'),
    'event-loop defaults',
  );
  t.notOk(
    samples(text).some((x) => x.name.startsWith(`${p}process_`) || x.name.startsWith(`${p}nodejs_`)),
    'no prefixed defaults',
  );

  const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
  const labelValues = samples(text).flatMap((x) => Object.values(x.labels));
  t.ok(labelValues.length > 50);
  for (const bad of [uuid, /token/, /coach|nobody/, /mcp:/, /s3cret/]) {
    t.notOk(
      labelValues.some((v) => bad.test(v)),
      `no label value matches ${bad}`,
    );
  }
  t.notOk(text.includes(a.sessionId), 'no session id anywhere');

  t.test('promtool check metrics', needs('promtool', t), async (t) => {
    const check = spawnSync(toolPath('promtool')!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    t.equal(`${check.stdout}${check.stderr}`.trim(), '', 'promtool check metrics: no warning at all');
    t.equal(check.status, 0);
  });
});

const p = 'agent_test_gateway_';
const sum = (text: string, name: string, match: (labels: Record<string, string>) => boolean) =>
  samples(text)
    .filter((x) => x.name === name && match(x.labels))
    .reduce((total, x) => total + x.value, 0);

t.test('every answer is counted by route template and status, every refusal once by reason', async (t) => {
  const s = await startStack(t, { env: REFUSAL_WORKLOAD_ENV });
  const before = (await s.call('GET', '/metrics')).text;
  for (const reason of REFUSAL_REASONS) t.equal(value(before, `${p}refusals_total`, { reason }), 0, `${reason} starts at 0`);
  t.equal(value(before, `${p}engine_connects_total`, { result: 'not_enabled', kind: 'new' }), 0);

  const tally = new Map<number, number>();
  const call = async (...args: Parameters<typeof s.call>): Promise<Answer> => {
    const answer = await s.call(...args);
    tally.set(answer.status, (tally.get(answer.status) ?? 0) + 1);
    return answer;
  };
  const start = '/v1/agents/coach/conversations';
  t.equal((await call('GET', '/v1/conversations', { token: null })).status, 401);
  t.equal((await call('GET', '/no/such/route')).status, 404);
  t.equal((await call('POST', start, { body: 'hi', headers: { 'content-type': 'text/plain' } })).status, 415);
  t.equal((await call('POST', start, { body: { line: 'x'.repeat(2000) } })).status, 413);
  t.equal((await call('POST', '/v1/agents/%E0%A4%A/conversations')).status, 400);
  t.equal((await call('POST', '/v1/agents/idp/conversations')).status, 502, 'identity not enabled');
  s.engine.world.engineIdentities[0]!.password = 'changed';
  t.equal((await call('POST', '/v1/agents/secure/conversations')).status, 502, 'identity unrecognised');
  // Two turns hang (one per caller): the pod is full and both callers are at their limit.
  const hanging = [
    call('POST', start, { body: { line: 'sim:hang' } }),
    call('POST', start, { body: { line: 'sim:hang' }, token: 'bob-token' }),
  ];
  await eventually(() => s.app.conversationRegistry.stats.busy === 2);
  t.equal((await call('POST', start)).status, 429, 'caller limit');
  t.equal((await call('POST', start, { token: 'tenant-token' })).status, 503, 'pod limit');
  t.same(
    (await Promise.all(hanging)).map((a) => a.status),
    [201, 201],
    'timed-out starts still answer 201',
  );
  void s.app.conversationRegistry.drain(0);
  t.equal((await call('POST', start)).status, 503, 'shutting down');

  const text = (await s.call('GET', '/metrics')).text;
  const expected: Record<string, number> = {
    unauthenticated: 1,
    not_found: 1,
    unsupported_media_type: 1,
    body_too_large: 1,
    invalid_request: 1,
    identity_not_enabled: 1,
    identity_unrecognised: 1,
    caller_limit: 1,
    pod_limit: 1,
    shutting_down: 1,
  };
  for (const reason of REFUSAL_REASONS) {
    t.equal(value(text, `${p}refusals_total`, { reason }), expected[reason] ?? 0, `refusals{reason=${reason}}`);
  }
  const duration = `${p}http_request_duration_seconds_count`;
  for (const [status, count] of tally) {
    t.equal(
      sum(text, duration, (l) => l.status_code === String(status) && l.route !== '/metrics'),
      count,
      `${count} answered ${status}`,
    );
  }
  t.equal(value(text, duration, { route: 'unmatched', status_code: '404', method: 'GET' }), 1, 'no route: unmatched');
  t.equal(value(text, duration, { route: '/v1/conversations', status_code: '401' }), 1, 'refused by a hook');
  t.equal(value(text, duration, { route: '/v1/agents/:agent/conversations', status_code: '415' }), 1, 'refused by the parser');
  t.equal(value(text, duration, { route: '/v1/agents/:agent/conversations', status_code: '413' }), 1);
  t.equal(value(text, duration, { route: '/v1/agents/:agent/conversations', status_code: '502' }), 2);
  t.equal(value(text, duration, { route: '/metrics', status_code: '200' }), 1, 'the scrape before');

  // Identity refusals are refused connects, never ok connects nor engine_error turns.
  t.equal(value(text, `${p}engine_connects_total`, { result: 'not_enabled', kind: 'new' }), 1);
  t.equal(value(text, `${p}engine_connects_total`, { result: 'unrecognised', kind: 'new' }), 1);
  t.equal(value(text, `${p}engine_connects_total`, { result: 'ok', kind: 'new' }), 2, 'the two hanging turns');
  t.equal(value(text, `${p}turn_duration_seconds_count`, { outcome: 'engine_error' }), 0);
  t.equal(value(text, `${p}turn_duration_seconds_count`, { outcome: 'timeout' }), 2);
  t.equal(value(text, `${p}engine_connect_duration_seconds_count`), 4, 'every socket opened or refused at the upgrade');
  t.equal(value(text, `${p}draining`), 1);
  const labels = samples(text).flatMap((x) => Object.values(x.labels));
  t.notOk(
    labels.some((v) => /%E0|no\/such|idp|secure/.test(v)),
    'no raw path or agent in a label',
  );
});

t.test('identity not configured or malformed: counted by reason, no connect attempted', async (t) => {
  for (const [identity, reason] of [
    ['', 'identity_not_configured'],
    ['no-colon-here', 'identity_malformed'],
  ] as const) {
    const s = await startStack(t, { env: { PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: identity } });
    t.equal((await s.call('POST', '/v1/agents/secure/conversations')).status, 503);
    const text = (await s.call('GET', '/metrics')).text;
    t.equal(value(text, `${p}refusals_total`, { reason }), 1, reason);
    t.equal(
      sum(text, `${p}engine_connects_total`, () => true),
      0,
      'no engine connect counted',
    );
  }
});

t.test('a refusal on the last line of a stream is counted once', async (t) => {
  const s = await startStack(t);
  const streamed = await s.call('POST', '/v1/agents/idp/conversations', { headers: { accept: 'application/x-ndjson' } });
  t.equal(streamed.status, 201, 'the stream had begun');
  t.match(streamed.text.trim().split('\n').at(-1), /"error":"identity_not_enabled"/);
  const text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}refusals_total`, { reason: 'identity_not_enabled' }), 1);
  t.equal(value(text, `${p}engine_connects_total`, { result: 'not_enabled', kind: 'new' }), 1);
  t.equal(value(text, `${p}turn_duration_seconds_count`, { outcome: 'engine_error' }), 0);
});

t.test('configuration, version and draining are exported', async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_CALLER: '3', MAX_CONVERSATIONS_PER_POD: '7', GIT_REVISION: 'abc123' } });
  const text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}conversation_limit`, { limit: 'caller' }), 3);
  t.equal(value(text, `${p}conversation_limit`, { limit: 'pod' }), 7);
  t.equal(value(text, `${p}turn_budget_seconds`), STACK_TURN_BUDGET_MS / 1000);
  t.equal(value(text, `${p}draining`), 0);
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  t.equal(value(text, `${p}build_info`, { version, revision: 'abc123', node: process.version }), 1);
  void s.app.conversationRegistry.drain(0);
  t.equal(value((await s.call('GET', '/metrics')).text, `${p}draining`), 1);
});

t.test('memory calls and suite runs are counted by result', async (t) => {
  const s = await startStack(t);
  await s.open('coach', { device_ref: 'alice' });
  const snapshot = await s.call('GET', memoryPath('alice'));
  t.equal(snapshot.status, 200);
  t.equal((await s.call('PUT', memoryPath('alice'), { body: { confirm: true, snapshot: snapshot.body } })).status, 200);
  s.engine.faults.handshake = 503; // sockets only: the memory endpoints still answer
  t.equal((await s.call('POST', runPath(), { body: { conversations: [{ turns: [{ line: 'hi' }] }] } })).body.passed, false);
  s.engine.faults.handshake = undefined;
  t.equal((await s.call('POST', runPath(), { body: { conversations: [{ turns: [{ line: 'hi' }] }] } })).body.passed, true);
  const comparison = { baseline: 'coach', conversations: [{ turns: [{ line: 'hi' }] }] };
  t.equal((await s.call('POST', comparePath('coach'), { body: comparison })).body.regressed, false);
  const text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}memory_calls_total`, { operation: 'snapshot', result: 'ok' }), 1);
  t.equal(value(text, `${p}memory_calls_total`, { operation: 'restore', result: 'ok' }), 1);
  t.equal(value(text, `${p}memory_calls_total`, { operation: 'restore', result: 'error' }), 0);
  t.equal(value(text, `${p}suite_runs_total`, { kind: 'run', result: 'passed' }), 1);
  t.equal(value(text, `${p}suite_runs_total`, { kind: 'run', result: 'failed' }), 1);
  t.equal(value(text, `${p}suite_runs_total`, { kind: 'run', result: 'cancelled' }), 0);
  t.equal(value(text, `${p}suite_runs_total`, { kind: 'comparison', result: 'passed' }), 1, 'a comparison is counted like a run');
});

t.test('probes and scrapes are not logged at info', async (t) => {
  const s = await startStack(t);
  for (const path of ['/healthz', '/readyz', '/metrics']) t.equal((await s.call('GET', path, { token: null })).status, 200);
  await s.call('GET', '/v1/conversations');
  const lines = s.logs.map((line) => JSON.parse(line) as { msg?: string; req?: { url?: string } });
  t.equal(lines.filter((l) => l.msg === 'incoming request').length, 1, 'only the API call');
  t.equal(lines.filter((l) => l.msg === 'request completed').length, 1);
  t.notOk(s.logs.some((line) => /healthz|readyz|\/metrics/.test(line)));
});

t.test('histogram bounds: from 5 ms to just past the limit, never more than 2x apart', async (t) => {
  for (const limitMs of [90_000, 1_500, 300, 100_000, 5_000, 10_000, 7, 1]) {
    const bounds = bucketsUpTo(limitMs);
    t.ok(bounds[0]! <= 0.005, `${limitMs} ms: the first bound is at most 5 ms`);
    t.ok(bounds.includes(limitMs / 1000), 'the limit is a bound');
    t.equal(bounds.at(-1), Number((limitMs * 0.0011).toPrecision(6)), 'the last one is 1.1 x the limit');
    for (let i = 1; i < bounds.length; i++) {
      t.ok(bounds[i]! > bounds[i - 1]! && bounds[i]! / bounds[i - 1]! <= 2, `${bounds[i - 1]} -> ${bounds[i]}`);
    }
  }
  t.same(bucketsUpTo(90_000).slice(-5), [20, 30, 50, 90, 99]);
});

t.test('docs/operations.md describes every metric the service exports', async (t) => {
  const s = await startStack(t);
  await s.open(); // platform requests and HTTP answers have series once observed
  const text = (await s.call('GET', '/metrics')).text;
  const docs = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  const names = new Set(
    samples(text)
      .map((x) => x.name.replace(/_(bucket|sum|count)$/, ''))
      .filter((n) => n.startsWith(p)),
  );
  t.equal(names.size, 35);
  for (const name of names) t.match(docs, `\`${name}\``, name);
});

t.test('health and readiness', async (t) => {
  const s = await startStack(t);
  t.same((await s.call('GET', '/healthz', { token: null })).body, { status: 'ok' });
  const ready = await s.call('GET', '/readyz', { token: null });
  t.equal(ready.status, 200);
  t.equal(ready.body.ready, true);
  void s.app.conversationRegistry.drain(200);
  const draining = await s.call('GET', '/readyz', { token: null });
  t.equal(draining.status, 503);
  t.equal(draining.body.ready, false);
  const refused = await s.call('POST', '/v1/agents/coach/conversations');
  t.equal(refused.status, 503);
  t.equal(refused.body.error, 'shutting_down');
});

t.test('closing does not wait for a connection that never sent a request', async (t) => {
  const s = await startStack(t);
  const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
  await new Promise((resolve) => socket.on('connect', resolve));
  t.teardown(() => socket.destroy());
  const closed = s.app.close().then(() => 'closed');
  // Held, the close would wait for Node's 60 s headers timeout; a busy machine takes a while to close (scaled).
  const waited = new Promise((resolve) => setTimeout(() => resolve(`still waiting after ${scaled(3000)} ms`), scaled(3000)));
  t.equal(await Promise.race([closed, waited]), 'closed');
});

t.test("a run naming a monitor feeds the monitors' series, bounded by MAX_MONITOR_SERIES", async (t) => {
  const s = await startStack(t, { env: { MAX_MONITOR_SERIES: '8' } });
  const runs = '/v1/agents/coach/runs';
  const conversation = (name: string, pattern: string) => ({ name, turns: [{ line: 'hello', expect: { text_matches: pattern } }] });
  const suite = { conversations: [conversation('yes', 'You said'), conversation('no', 'Never said')], repeat: 2 };
  const first = await s.call('POST', runs, { body: { ...suite, monitor: 'nightly' } });
  t.equal(first.status, 200);
  t.same(first.body.monitor, { name: 'nightly', recorded: 4, dropped: 0 }, 'the report says what it recorded');
  const labels = (conversation: string, outcome: string) => ({ monitor: 'nightly', agent: 'coach', revision: '2', conversation, outcome });
  let text = (await s.call('GET', '/metrics')).text;
  t.equal(
    value(text, `${p}monitor_attempts_total`, labels('yes', 'passed')),
    0,
    'a new set is scraped at 0 first, so that increase() counts a run shorter than the scrape interval',
  );
  text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}monitor_attempts_total`, labels('yes', 'passed')), 2, 'the next scrape shows its attempts');
  t.equal(value(text, `${p}monitor_attempts_total`, labels('no', 'failed')), 2);
  t.equal(value(text, `${p}monitor_attempts_total`, labels('no', 'passed')), 0, 'every outcome exists from the run on, at 0');
  t.equal(value(text, `${p}monitor_attempts_total`, labels('no', 'invalid')), 0, 'invalid too');
  t.ok(value(text, `${p}monitor_last_run_timestamp_seconds`, { monitor: 'nightly', agent: 'coach' })! > Date.now() / 1000 - 600);
  t.equal((await s.call('POST', runs, { body: { ...suite, monitor: 'nightly' } })).body.monitor.recorded, 4);
  text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}monitor_attempts_total`, labels('yes', 'passed')), 4, 'a set already scraped counts at once');

  // Eight label sets (two conversations × four outcomes) are taken: a third conversation's would pass the bound.
  const third = { conversations: [conversation('third', 'You said')], monitor: 'nightly' };
  const bounded = await s.call('POST', runs, { body: third });
  t.same(bounded.body.monitor, { name: 'nightly', recorded: 0, dropped: 1 });
  t.match(bounded.body.notes.join(' '), /1 of this run's attempts were not recorded for monitor nightly: .*MAX_MONITOR_SERIES \(8\)/);
  text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}monitor_attempts_total`, labels('third', 'passed')), undefined, 'no series past the bound');
  t.equal(value(text, `${p}monitor_series_dropped_total`, {}), 1);

  const plain = await s.call('POST', runs, { body: { conversations: [conversation('plain', 'You said')] } });
  t.equal(plain.body.monitor, null, 'a run without a monitor records nothing');
  text = (await s.call('GET', '/metrics')).text;
  t.notMatch(text, /conversation="plain"/, 'a run without a monitor adds no per-conversation series');

  const connections = s.engine.record.connections.length;
  const bad = await s.call('POST', runs, { body: { ...suite, monitor: 'night ly' } });
  t.equal(bad.status, 400);
  t.match(bad.body.message, /monitor must be 1 to 64 letters, digits/);
  t.equal(s.engine.record.connections.length, connections, 'the refused run reached no engine');
});
