import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import t from 'tap';
import { eventually, startStack } from './support/stack.js';

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
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '300', MAX_CONVERSATIONS_PER_CALLER: '2' } });
  const p = 'agent_test_gateway_';
  const a = await s.open();
  await s.call('POST', `/v1/agents/coach/conversations/${a.sessionId}/turns`, { body: { line: 'hello' } });
  const b = await s.open();
  const timedOut = await s.call('POST', `/v1/agents/coach/conversations/${b.sessionId}/turns`, { body: { line: 'sim:hang' } });
  t.equal(timedOut.body.turn.outcome, 'timeout');
  await s.open(); // a and the new one: no eviction yet (b closed)
  await s.open(); // evicts a, the least recently used idle one
  await s.call('POST', `/v1/agents/coach/conversations/${a.sessionId}/turns`, { body: { line: 'back' } }); // reconnect, evicts again
  await s.call('POST', '/v1/agents/nobody/conversations');
  await eventually(() => s.app.conversations.stats.busy === 0);

  const text = (await s.call('GET', '/metrics')).text;
  t.equal(value(text, `${p}turn_duration_seconds_count`, { outcome: 'timeout' }), 1, 'one timeout turn');
  // The budget is 0.3 s: bounds …, 0.2, 0.3, 0.33; a timeout lands just past the budget.
  t.equal(value(text, `${p}turn_duration_seconds_bucket`, { outcome: 'timeout', le: '0.2' }), 0, 'not under the budget');
  t.equal(value(text, `${p}turn_duration_seconds_bucket`, { outcome: 'timeout', le: '0.33' }), 1, 'in the bucket just past the budget');
  t.equal(value(text, `${p}turn_budget_seconds`), 0.3, 'the budget is exported');
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
  t.ok(samples(text).some((x) => x.name === 'nodejs_eventloop_lag_seconds'), 'event-loop defaults');
  t.notOk(samples(text).some((x) => x.name.startsWith(`${p}process_`) || x.name.startsWith(`${p}nodejs_`)), 'no prefixed defaults');

  const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
  const labelValues = samples(text).flatMap((x) => Object.values(x.labels));
  t.ok(labelValues.length > 50);
  for (const bad of [uuid, /token/, /coach|nobody/, /mcp:/, /s3cret/]) {
    t.notOk(labelValues.some((v) => bad.test(v)), `no label value matches ${bad}`);
  }
  t.notOk(text.includes(a.sessionId), 'no session id anywhere');

  const promtool = '/usr/bin/promtool';
  if (existsSync(promtool)) {
    const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    t.equal(`${check.stdout}${check.stderr}`.trim(), '', 'promtool check metrics: no warning at all');
    t.equal(check.status, 0);
  } else if (process.env.CI) {
    t.fail('promtool is missing: .ci/run installs Debian\'s prometheus package');
  } else {
    t.comment('promtool not installed here: the metrics lint runs in CI');
  }
});

t.test('health and readiness', async (t) => {
  const s = await startStack(t);
  t.same((await s.call('GET', '/healthz', { token: null })).body, { status: 'ok' });
  const ready = await s.call('GET', '/readyz', { token: null });
  t.equal(ready.status, 200);
  t.equal(ready.body.ready, true);
  void s.app.conversations.drain(200);
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
  const waited = new Promise((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3000));
  t.equal(await Promise.race([closed, waited]), 'closed');
});
