/**
 * A run's own concurrency, through the service against the engine simulator: a run holds at most
 * `concurrency` engine sessions at once (a comparison, both sides together), runs share the pod's
 * run budget and wait for room saying so, and the caller's interactive conversations neither count
 * the run's sessions nor lose their places to them.
 */

import { join } from 'node:path';
import t from 'tap';
import type { EngineConnection } from '../src/simulators/engine-record.js';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import type { RunReport } from '../src/suites/report/run-report.js';
import { cli } from './support/cli.js';
import { type Json } from './support/http.js';
import { mcpClient, textOf } from './support/mcp.js';
import { eventually, startStack, type Stack } from './support/stack.js';
import { scaled } from './support/time.js';

const runPath = (agent = 'coach') => `/v1/agents/${agent}/runs`;
const intro = { line: '#intro' };

/** The most engine sessions open at once among `connections`, from the engine's own record (each closed by then). */
function mostAtOnce(connections: EngineConnection[]): number {
  const edges = connections.flatMap((c) => [
    [c.openedAt, 1],
    [c.closedAt!, -1],
  ]);
  // At one instant a close is counted before an open.
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let open = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (open += step!));
  return most;
}

/** The engine's connections of the runs (their run label), once every one has closed. */
async function runConnections(s: Stack, label?: string): Promise<EngineConnection[]> {
  const ofRuns = () =>
    s.engine.record.connections.filter((c) => c.query.runLabel !== undefined && (label === undefined || c.query.runLabel === label));
  await eventually(() => ofRuns().every((c) => c.closedAt !== undefined));
  return ofRuns();
}

/** `n` conversations whose second turn keeps the session open for `ms`. */
const slowConversations = (n: number, ms: number) =>
  Array.from({ length: n }, (_, i) => ({ name: `c${i}`, turns: [intro, { line: `sim:delay:${ms}` }, { line: `line ${i}` }] }));

t.test('a run holds at most its concurrency, not the caller limit; each session closed with 1000', async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_CALLER: '2' } });
  const answer = await s.call('POST', runPath(), { body: { concurrency: 3, conversations: slowConversations(7, scaled(60)) } });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const report = answer.body as RunReport;
  t.equal(report.passed, true);
  t.equal(report.parallelism, 3, 'three at once: more than the caller limit of 2');
  const connections = await runConnections(s);
  t.equal(connections.length, 7);
  t.equal(mostAtOnce(connections), 3, 'the engine never saw more than 3 sessions of the run at once');
  t.same(new Set(connections.map((c) => c.closeCode)), new Set([1000]), 'each closed with 1000');
  t.same(new Set(connections.map((c) => c.closedBy)), new Set(['client']));
  t.notOk(
    report.notes.some((n) => /waited/.test(n)),
    'nothing to wait for',
  );

  // The default is 10.
  s.engine.reset();
  const byDefault = (await s.call('POST', runPath(), { body: { conversations: slowConversations(12, scaled(60)) } })).body as RunReport;
  t.equal(byDefault.parallelism, 10);
  t.equal(mostAtOnce(await runConnections(s)), 10);
});

t.test('a comparison holds its concurrency with both sides together', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', '/v1/agents/coach.2/comparisons', {
    body: { baseline: 'coach', concurrency: 2, repeat: 2, conversations: slowConversations(3, scaled(40)) },
  });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const report = answer.body as ComparisonReport;
  const connections = await runConnections(s);
  t.equal(connections.length, 12, 'three conversations, two attempts, two sides');
  t.same(new Set(connections.map((c) => c.agentKey)), new Set(['coach', 'coach.2']));
  t.equal(mostAtOnce(connections), 2, 'both sides together never above 2');
  t.equal(report.runs.candidate.parallelism, 2);
});

t.test("runs share the pod's run budget: a run waits for room, says so, and interactive conversations still start", async (t) => {
  const s = await startStack(t, {
    env: { MAX_RUN_CONVERSATIONS_PER_POD: '2', MAX_CONVERSATIONS_PER_CALLER: '2', MAX_CONVERSATIONS_PER_POD: '6' },
  });
  const hold = scaled(400);
  const first = s.call('POST', runPath(), { body: { run_label: 'first', concurrency: 5, conversations: slowConversations(3, hold) } });
  await eventually(() => s.app.conversationRegistry.stats.runs === 2);
  const second = s.call('POST', runPath(), { body: { run_label: 'second', concurrency: 5, conversations: slowConversations(2, 10) } });

  // While the runs fill the pod's run budget, the caller's own conversations start: the runs'
  // sessions are not the caller's interactive ones (the limit of 2 is whole), and find room on the pod.
  const mine = [await s.open(), await s.open()];
  for (const conv of mine) t.equal(conv.status, 201, 'an interactive conversation starts while the runs hold their budget');
  t.equal(s.app.conversationRegistry.stats.runs, 2, 'the runs hold the budget meanwhile');
  t.equal((await s.open('coach', {}, 'bob-token')).status, 201, "another caller's too");

  const [one, two] = [(await first).body as RunReport, (await second).body as RunReport];
  t.equal(one.passed, true, 'the first run passed', { notes: one.notes });
  t.equal(two.passed, true, 'the second run passed: it waited, it did not fail', { notes: two.notes });
  const waited = two.notes.find((n) => n.startsWith('The run waited'));
  t.match(
    waited,
    /^The run waited \d+(\.\d)? s for room: this pod's runs held 2 conversations, MAX_RUN_CONVERSATIONS_PER_POD\.$/,
    "the second run's note says how long and why",
  );
  const connections = await runConnections(s);
  t.equal(connections.length, 5);
  t.equal(mostAtOnce(connections), 2, 'the runs together never held more than the pod budget');
  const second0 = Math.min(...connections.filter((c) => c.query.runLabel === 'second').map((c) => c.openedAt));
  t.ok(
    second0 >= Math.min(...connections.filter((c) => c.query.runLabel === 'first').map((c) => c.closedAt!)),
    'it started once a place came free',
  );

  // Nobody was evicted to make room: neither the runs' sessions nor the caller's conversations.
  const evicted = s.app.conversationRegistry.all().filter((c) => c.closeCause === 'evicted');
  t.same(evicted, [], 'no eviction');
  for (const conv of mine) t.equal((await s.call('GET', `/v1/agents/coach/conversations/${conv.sessionId}`)).body.connection, 'open');
});

t.test("the caller's run budget: one caller's runs together hold at most MAX_RUN_CONVERSATIONS_PER_CALLER", async (t) => {
  const s = await startStack(t, { env: { MAX_RUN_CONVERSATIONS_PER_CALLER: '2' } });
  const mine = s.call('POST', runPath(), { body: { run_label: 'mine', concurrency: 4, conversations: slowConversations(4, scaled(150)) } });
  await eventually(() => s.app.conversationRegistry.stats.runs === 2);
  const bobs = (
    await s.call('POST', runPath(), { token: 'bob-token', body: { run_label: 'bobs', conversations: slowConversations(2, 10) } })
  ).body as RunReport;
  t.equal(bobs.passed, true);
  t.notOk(
    bobs.notes.some((n) => /waited/.test(n)),
    "another caller's run did not wait",
  );
  const report = (await mine).body as RunReport;
  t.equal(report.passed, true);
  t.match(
    report.notes.find((n) => n.startsWith('The run waited')),
    /^The run waited \d+(\.\d)? s for room: your runs held 2 conversations, MAX_RUN_CONVERSATIONS_PER_CALLER\.$/,
  );
  t.equal(mostAtOnce(await runConnections(s, 'mine')), 2);
});

t.test("the warm-up session counts in the run's concurrency, not in the caller's interactive limit", async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_CALLER: '5' } });
  const mine = [];
  for (let i = 0; i < 5; i++) mine.push(await s.open());
  const answer = await s.call('POST', runPath(), {
    body: {
      device_ref: 'dave',
      concurrency: 1,
      memory: { restore: { units: [{ kind: 'fact', text: 'x' }] }, confirm: true },
      conversations: [{ turns: [intro] }],
    },
  });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  t.ok(
    answer.body.memory.notes.some((n: string) => /never connected/.test(n)),
    'a warm-up session ran',
  );
  const connections = await runConnections(s);
  t.equal(connections.length, 2, 'the warm-up and the conversation');
  t.equal(mostAtOnce(connections), 1, 'one at a time: the warm-up closed before the conversation opened');
  t.same(
    s.app.conversationRegistry.list('u-demo').filter((c) => c.closeCause === 'evicted'),
    [],
    "none of the caller's five conversations was evicted",
  );
  for (const conv of mine) t.equal((await s.call('GET', `/v1/agents/coach/conversations/${conv.sessionId}`)).body.connection, 'open');
});

t.test('a full pod: the run waits for a place (it evicts no one), then starts', async (t) => {
  const s = await startStack(t, { env: { MAX_CONVERSATIONS_PER_POD: '2' } });
  const idle = await s.open('coach', {}, 'bob-token');
  const busy = await s.open();
  const slowTurn = s.call('POST', `/v1/agents/coach/conversations/${busy.sessionId}/turns`, { body: { line: `sim:delay:${scaled(300)}` } });
  await eventually(() => s.app.conversationRegistry.stats.busy === 1);
  const run = s.call('POST', runPath(), { body: { conversations: [{ turns: [intro] }] } });
  t.equal((await slowTurn).status, 200);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(s.engine.record.connections.filter((c) => c.query.runLabel !== undefined).length, 0, 'no idle conversation was evicted for it');
  t.equal((await s.call('DELETE', `/v1/agents/coach/conversations/${idle.sessionId}`, { token: 'bob-token' })).status, 204);
  const answer = await run;
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const report = answer.body as RunReport;
  const attempt = report.conversations[0]!.attempts[0]!;
  t.equal(attempt.status, 'passed');
  t.ok(attempt.notes.includes('The conversation waited for room under the run limits before it started.'));
  t.match(
    report.notes.find((n) => n.startsWith('The run waited')),
    /^The run waited \d+(\.\d)? s for room: this pod held 2 conversations, MAX_CONVERSATIONS_PER_POD\.$/,
  );
  t.equal((await s.call('GET', `/v1/agents/coach/conversations/${busy.sessionId}`)).body.connection, 'open', 'the idle one stayed');
});

t.test('concurrency is checked everywhere it is given: the REST body, the MCP tools, the CLI', async (t) => {
  const s = await startStack(t);
  const conversations = [{ turns: [intro] }];
  const cases: Array<[unknown, string]> = [
    [0, 'concurrency must be at least 1'],
    [51, 'concurrency must be at most 50'],
    [2.5, 'concurrency must be a whole number of conversations at once'],
    ['ten', 'concurrency must be a whole number of conversations at once'],
  ];
  for (const [concurrency, rule] of cases) {
    for (const [path, extra] of [
      [runPath(), {}],
      ['/v1/agents/coach.3/comparisons', { baseline: 'coach' }],
    ] as const) {
      const answer = await s.call('POST', path, { body: { ...extra, concurrency, conversations } });
      t.equal(answer.status, 400, `${path} ${JSON.stringify(concurrency)}`);
      t.same(answer.body.details.problems[0], { field: 'concurrency', rule });
      t.equal(answer.body.message, `${rule}; nothing was sent to the engine`);
    }
  }

  const client = await mcpClient(t, s);
  for (const [name, args] of [
    ['run_suite', { agent: 'coach' }],
    ['compare_revisions', { baseline: 'coach', candidate: 'coach.3' }],
  ] as const) {
    const refused: Json = await client.callTool({ name, arguments: { ...args, suite: { conversations }, concurrency: 51 } });
    t.equal(textOf(refused), 'invalid_request: concurrency must be at most 50; nothing was sent to the engine', name);
    const inSuite: Json = await client.callTool({ name, arguments: { ...args, suite: { conversations, concurrency: 0 } } });
    t.equal(textOf(inSuite), 'invalid_request: concurrency must be at least 1; nothing was sent to the engine', `${name}: the suite's own`);
  }
  t.same(s.engine.record.connections, [], 'nothing reached the engine');

  // The tool's argument wins over the suite's own.
  const suite = { concurrency: 10, conversations: slowConversations(3, scaled(40)) };
  const ran: Json = await client.callTool({ name: 'run_suite', arguments: { agent: 'coach', suite, concurrency: 1 } });
  t.equal(ran.structuredContent.parallelism, 1);
  t.equal(mostAtOnce(await runConnections(s)), 1);
  s.engine.reset();
  const compared: Json = await client.callTool({
    name: 'compare_revisions',
    arguments: { baseline: 'coach', candidate: 'coach.3', suite, concurrency: 2 },
  });
  t.equal(compared.structuredContent.runs.candidate.parallelism, 2);
  t.equal(mostAtOnce(await runConnections(s)), 2);

  const dir = t.testdir({ 'slow.yaml': `agent: coach\nconcurrency: 10\n${slowYaml(3, scaled(40))}` });
  /** The CLI's `command` on slow.yaml against the stack, with `flags`. */
  const onSlow = (command: 'run' | 'compare', ...flags: string[]) => cli(command, [join(dir, 'slow.yaml'), '--gateway', s.url, ...flags]);
  const bad = await onSlow('run', '--concurrency', '51');
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--concurrency must be at most 50/);
  const badCompare = await onSlow('compare', '--baseline', 'coach', '--candidate', 'coach.3', '--concurrency', '0');
  t.equal(badCompare.code, 2);
  t.match(badCompare.stderr, /--concurrency must be at least 1/);
  s.engine.reset();
  const run = await onSlow('run', '--concurrency', '1');
  t.equal(run.code, 0, run.stderr);
  t.equal(mostAtOnce(await runConnections(s)), 1, '--concurrency wins over the suite file');
  s.engine.reset();
  const compare = await onSlow('compare', '--baseline', 'coach', '--candidate', 'coach.2', '--concurrency', '2');
  t.equal(compare.code, 0, compare.stderr);
  t.equal(mostAtOnce(await runConnections(s)), 2);
});

/** slowConversations as suite-file YAML. */
const slowYaml = (n: number, ms: number): string => {
  const one = (i: number) => `  - name: c${i}\n    turns:\n      - line: "#intro"\n      - line: "sim:delay:${ms}"\n`;
  return `conversations:\n${Array.from({ length: n }, (_, i) => one(i)).join('')}`;
};
