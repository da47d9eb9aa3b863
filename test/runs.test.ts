// Runs as resources on one pod: Prefer: respond-async, GET /v1/runs/{id}, its events from any line,
// the caller's list, ownership, DELETE, a follower hanging up and coming back within the grace, a
// comparison's decisions as they come, and a drain with no sibling: cancelled, with a report of
// what was completed and no attempt that was not made.
import t from 'tap';
import { request } from 'undici';
import { comparePath, runPath, type Json } from './support/http.js';
import { eventually, startStack, UUID, type Stack } from './support/stack.js';

const intro = { line: '#intro' };

/** The run's lines after `after`, read to the end of the stream. */
async function events(s: Stack, id: string, after = 0, token = 'demo-token'): Promise<{ status: number; lines: Json[] }> {
  const res = await request(`${s.url}/v1/runs/${id}/events?after=${after}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    lines:
      res.statusCode === 200
        ? text
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
        : [JSON.parse(text)],
  };
}

t.test('Prefer: respond-async answers 202 with the run; it is read, followed from any line, and listed', async (t) => {
  const s = await startStack(t);
  const suite = {
    name: 'orders',
    conversations: [{ name: 'order', turns: [intro, { line: 'Where is my order?', expect: { tool: 'lookup_order' } }] }],
    repeat: 2,
  };
  const started = await s.call('POST', runPath(), { body: suite, headers: { prefer: 'respond-async' } });
  t.equal(started.status, 202);
  const id = started.body.id;
  t.match(id, UUID);
  t.equal(started.headers.location, `/v1/runs/${id}`);
  t.match(started.body, { kind: 'run', status: 'running', agent: 'agent:coach', baseline: null, suite: 'orders', report: null, moves: [] });

  const all = await events(s, id);
  t.equal(all.status, 200);
  t.match(all.lines[0], { run: { id, status: 'running', kind: 'run', conversations: 1, sessions_budget: 2 } });
  t.equal(all.lines.filter((l) => l.turn !== undefined).length, 4, 'two attempts of two turns');
  const last = all.lines.at(-1);
  t.match(last, { report: { run_id: id, passed: true } });

  const later = await events(s, id, 3);
  t.same(later.lines, all.lines.slice(3), 'after=3 starts with line 4');

  const view = await s.call('GET', `/v1/runs/${id}`);
  t.equal(view.status, 200);
  t.match(view.body, {
    id,
    status: 'passed',
    ended_at: String,
    report: { run_id: id, passed: true },
    progress: {
      sessions: 2,
      sessions_budget: 2,
      decided: 1,
      conversations: [{ conversation: 'order', rounds: 2, budget: 2, sessions: 2, attempts: { attempts: 2, passed: 2 }, state: 'passed' }],
    },
  });
  const list = await s.call('GET', '/v1/runs');
  t.equal(list.status, 200);
  t.same(
    list.body.runs.map((r: Json) => [r.id, r.suite, r.report]),
    [[id, 'orders', null]],
    'the list has the run and its suite’s name, without its report',
  );
});

t.test('the team reads a run, only its caller cancels it; a stranger and an unknown run get 404', async (t) => {
  const s = await startStack(t);
  const started = await s.call('POST', runPath(), { body: { conversations: [{ turns: [intro] }] }, headers: { prefer: 'respond-async' } });
  const id = started.body.id;
  t.equal(started.body.suite, null, 'a suite sent without a name has none');
  for (const [method, path] of [
    ['GET', `/v1/runs/${id}`],
    ['GET', `/v1/runs/${id}/events`],
    ['DELETE', `/v1/runs/${id}`],
  ] as const) {
    const stranger = await s.call(method, path, { token: 'outsider-token' });
    t.equal(stranger.status, 404, `${method} ${path}`);
    t.equal(stranger.body.error, 'run_not_found');
  }
  t.equal((await s.call('GET', `/v1/runs/${id}`, { token: 'bob-token' })).status, 200, 'a Viewer of its agent reads it');
  const teammate = await s.call('DELETE', `/v1/runs/${id}`, { token: 'bob-token' });
  t.equal(teammate.status, 403);
  t.equal(teammate.body.error, 'run_not_yours');
  t.same((await s.call('GET', '/v1/runs', { token: 'bob-token' })).body.runs, [], "another caller's list is empty");
  const same = await s.call('GET', `/v1/runs/${id}`, { token: 'demo-token-2' });
  t.equal(same.status, 200, 'two tokens of one user are one caller');
  const unknown = await s.call('GET', '/v1/runs/6f1c1f8e-4d6b-4d62-9a55-3e5d1f0f2a10');
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'run_not_found');
  const bad = await s.call('GET', `/v1/runs/${id}/events?after=-1`);
  t.equal(bad.status, 400);
  t.match(bad.body.message, /after must be a whole number/);
});

t.test('DELETE cancels a running run: its turn ends with a plain close, the report says cancelled', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '30000' } });
  const started = await s.call('POST', runPath(), {
    body: { conversations: [{ turns: [intro, { line: 'sim:hang' }, { line: 'never sent' }] }] },
    headers: { prefer: 'respond-async' },
  });
  const id = started.body.id;
  await eventually(() => s.engine.record.connections[0]?.frames.includes('sim:hang') === true);
  const cancelled = await s.call('DELETE', `/v1/runs/${id}`);
  t.equal(cancelled.status, 200);
  t.match(cancelled.body, { status: 'cancelled', report: { passed: null, cancelled: { reason: 'DELETE /v1/runs/{id} cancelled it' } } });
  t.match(cancelled.body.report.notes[0], /cancelled: DELETE \/v1\/runs\/\{id\} cancelled it/);
  const conn = s.engine.record.connections[0]!;
  await eventually(() => conn.closeCode !== undefined);
  t.equal(conn.closeCode, 1000, 'a plain close, never #exit');
  t.same(conn.frames, ['#intro', 'sim:hang']);
  const again = await s.call('DELETE', `/v1/runs/${id}`);
  t.equal(again.body.status, 'cancelled', 'cancelling an ended run answers it as it is');
});

t.test('a follower that hangs up and comes back within the grace keeps the run; it ends passed', async (t) => {
  const s = await startStack(t, { env: { RUN_FOLLOW_GRACE_MS: '5000' } });
  const body = { conversations: [{ turns: [intro, { line: 'sim:delay:300' }, { line: 'Where is my order?' }] }] };
  const hangUp = new AbortController();
  const res = await request(s.url + runPath(), {
    method: 'POST',
    headers: { authorization: 'Bearer demo-token', 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify(body),
    signal: hangUp.signal,
  });
  const id = String(res.headers.location).split('/').pop()!;
  t.match(id, UUID);
  // Read the first line, then hang up.
  await res.body[Symbol.asyncIterator]().next();
  hangUp.abort();
  await eventually(() => s.app.runs.get(id)!.followers === 0);
  t.equal(s.app.runs.get(id)!.status, 'running', 'not cancelled at once');
  const rest = await events(s, id, 1);
  t.match(rest.lines.at(-1), { report: { run_id: id, passed: true } }, 'followed again to its report');
  t.equal((await s.call('GET', `/v1/runs/${id}`)).body.status, 'passed');
});

t.test("a comparison's decisions as the gate stops each conversation: its decided lines and progress, equal to the report's", async (t) => {
  const s = await startStack(t);
  const conversations = [
    { name: 'broken', turns: [{ line: 'sim:chance:1,0', expect: { text_contains: 'Yes' } }] },
    { name: 'same', turns: [{ line: 'sim:chance:1', expect: { text_contains: 'Yes' } }] },
  ];
  const started = await s.call('POST', comparePath(), {
    body: { baseline: 'coach', min_attempts: 3, max_attempts: 6, conversations },
    headers: { prefer: 'respond-async' },
  });
  const id = started.body.id;
  const all = await events(s, id);
  const decided = all.lines.filter((l) => l.decided !== undefined).map((l) => l.decided);
  const view = (await s.call('GET', `/v1/runs/${id}`)).body;
  const { report } = view;
  t.same(decided.map((d: Json) => d.conversation).sort(), ['broken', 'same'], 'one decided line per conversation');
  t.same(
    view.progress.conversations.map((c: Json) => c.decision),
    [0, 1].map((i) => decided.find((d: Json) => d.conversation_index === i)),
    'the progress carries each decision as its line said',
  );
  const broken = decided.find((d: Json) => d.conversation === 'broken');
  t.match(broken, { stop: 'decided', verdict: 'regressed', baseline: { passed: broken.rounds, errors: 0 }, candidate: { passed: 0 } });
  for (const d of decided) {
    const c = report.conversations[d.conversation_index];
    t.same(
      [d.baseline.pass_rate_interval, d.candidate.pass_rate_interval, d.rounds, d.stop],
      [c.baseline.pass_rate_interval, c.candidate.pass_rate_interval, c.statistics.rounds, c.statistics.stop],
      `${d.conversation}: the report's intervals, rounds and stop`,
    );
    const judged = (side: Json) => side.attempts_total - side.attempts_error - side.attempts_invalid - side.attempts_cancelled;
    t.same([d.baseline.judged, d.candidate.judged], [judged(c.baseline), judged(c.candidate)], `${d.conversation}: the attempts judged`);
    if (d.verdict !== null) t.equal(d.verdict, c.verdict, `${d.conversation}: the report's verdict`);
  }
});

t.test('a drain with no sibling ends a comparison cancelled, with what it completed and no attempt it did not make', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '30000' } });
  const suite = {
    max_attempts: 20,
    concurrency: 2,
    conversations: [
      { name: 'slow a', turns: [{ line: 'sim:delay:150' }] },
      { name: 'slow b', turns: [{ line: 'sim:delay:150' }] },
    ],
  };
  const started = await s.call('POST', comparePath('coach'), {
    body: { ...suite, baseline: 'coach' },
    headers: { prefer: 'respond-async' },
  });
  const id = started.body.id;
  await eventually(() => (s.app.runs.get(id)?.rounds.length ?? 0) >= 2);
  const connectionsAtDrain = s.engine.record.connections.length;
  await s.app.runs.drain();
  const run = s.app.runs.get(id)!;
  t.equal(run.status, 'cancelled');
  const report = run.report as Json;
  t.match(report.notes[0], /cancelled: the pod running it shut down, and no other pod of the release could take it over/);
  const attempts = report.runs.baseline.conversations.reduce((n: number, c: Json) => n + c.attempts.length, 0);
  t.ok(attempts >= 1, 'the completed rounds are reported');
  t.ok(
    attempts + report.runs.candidate.conversations.reduce((n: number, c: Json) => n + c.attempts.length, 0) <= connectionsAtDrain,
    'no attempt reported that was not made',
  );
  const turnLines = run.lines.map((l) => JSON.parse(l)).filter((l) => l.turn !== undefined);
  t.notOk(
    turnLines.some((l) => l.turn.turn.outcome === 'error'),
    'no attempt streamed as an error',
  );
  t.equal(s.app.runs.running.length, 0);
  const refused = await s.call('POST', runPath(), { body: { conversations: [{ turns: [intro] }] } });
  t.equal(refused.status, 503, 'a draining pod starts no run');
});
