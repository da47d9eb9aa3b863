// A drain whose grace runs out while callers still follow a run on the draining pod: the run goes
// on on a sibling, and each caller is answered before the pod goes away — a JSON caller gets a 503
// `shutting_down` that says where the run goes on (Location), a streaming caller's stream ends
// cleanly without a last line (the command then re-attaches) — never a cut connection.
import t from 'tap';
import { comparePath, type Json } from './support/http.js';
import { startPods } from './support/peers.js';
import { eventually } from './support/stack.js';

const SUITE = {
  max_attempts: 20,
  concurrency: 2,
  conversations: ['a', 'b'].map((name) => ({
    name,
    turns: [{ line: 'sim:delay:100' }, { line: 'sim:chance:0.8', expect: { text_matches: 'Yes' } }],
  })),
};

t.test('the grace runs out: the JSON caller is told where the run goes on, the stream ends cleanly', async (t) => {
  const pods = await startPods(t, 2);
  const json = pods.call(0, 'POST', comparePath(), { body: { ...SUITE, baseline: 'coach' } });
  const streamed = pods.call(0, 'POST', comparePath(), {
    body: { ...SUITE, baseline: 'coach' },
    headers: { accept: 'application/x-ndjson' },
  });
  await eventually(
    () => pods.apps[0]!.runs.running.length === 2 && pods.apps[0]!.runs.running.every((run) => run.rounds.length > 0),
    30_000,
  );
  const ids = pods.apps[0]!.runs.running.map((run) => run.id);

  await pods.apps[0]!.runs.drain(Date.now() + 200);

  const answer = await json;
  t.equal(answer.status, 503);
  t.equal(answer.body.error, 'shutting_down');
  const id = String(answer.headers.location).replace('/v1/runs/', '');
  t.ok(ids.includes(id), 'Location names the run');
  t.match(answer.body.message, `the run goes on on another pod: GET /v1/runs/${id} answers its report`);

  const stream = await streamed;
  t.equal(stream.status, 200);
  const lines: Json[] = stream.text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.match(lines[0], { run: { status: 'running' } });
  t.notOk(
    lines.some((line) => line.report !== undefined || line.error !== undefined),
    'the stream ended without a last line: the follower re-attaches',
  );

  for (const run of ids) {
    let view: Json;
    await eventually(async () => {
      view = (await pods.call(1, 'GET', `/v1/runs/${run}`)).body;
      return view.status !== 'running';
    }, 60_000);
    t.match(view, { status: 'passed', report: { run_id: run }, moves: [{ rounds_completed: Number }] }, 'the sibling finished it');
  }
});
