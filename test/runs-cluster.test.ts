// Three real gateway processes of one release (PEERS): a sequential comparison followed through
// the pod that runs it survives that pod's SIGTERM (handed over, the stream relayed to the
// report), and a comparison followed through another pod survives the SIGKILL of the pod running
// it (a sibling takes it over from its checkpoint). Every line reaches the follower, whichever pod
// it follows through; no conversation ends in `error`; no attempt is streamed that was not made.
import t from 'tap';
import { request } from 'undici';
import { startRunPods, type Pod } from './support/cluster.js';
import { comparePath, type Json } from './support/http.js';
import { attemptsOf, collect, IDENTICAL_BUDGET as BUDGET, IDENTICAL_SUITE as SUITE, until } from './support/runs.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(240_000));

t.test('a comparison outlives the SIGTERM and the SIGKILL of the pod running it', async (t) => {
  const {
    pods: [a, b, c],
  } = await startRunPods(t, { SHUTDOWN_GRACE_MS: String(scaled(60_000)) });
  const auth = { authorization: 'Bearer demo-token' };
  const progressOn = async (pod: Pod, id: string): Promise<number> => {
    const res = await request(`${pod.url}/v1/runs/${id}`, { headers: auth });
    const view = (await res.body.json()) as Json;
    return view.progress?.sessions ?? 0;
  };

  await t.test('SIGTERM: handed over, and the stream through the draining pod ends with the report', async (t) => {
    const res = await request(a!.url + comparePath('coach.3'), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/x-ndjson' },
      body: JSON.stringify({ ...SUITE, baseline: 'coach' }),
    });
    t.equal(res.statusCode, 200);
    const lines: Json[] = [];
    const streamed = collect(res.body, lines);
    await until(() => lines.length > 0, 20_000, 'the first line');
    const id = lines[0].run.id;
    await until(async () => (await progressOn(a!, id)) >= 8, 60_000, 'two rounds of every conversation');
    a!.child.kill('SIGTERM');
    await streamed;
    const last = lines.at(-1);
    t.ok(last.report !== undefined, `the stream through the draining pod ends with the report, not ${JSON.stringify(last).slice(0, 200)}`);
    const moved = lines.filter((l) => l.moved !== undefined);
    t.equal(moved.length, 1, 'it moved once');
    t.match(moved[0].moved, { cause: 'drain', rounds_completed: Number, attempts_rerun: Number });
    const { report } = last;
    t.equal(report.run_id, id);
    t.notOk(
      report.conversations.some((conv: Json) => conv.verdict === 'error'),
      'every conversation has a verdict',
    );
    t.ok(attemptsOf(report) <= BUDGET, `sessions within the budget (${attemptsOf(report)} of ${BUDGET})`);
    t.notOk(
      lines.some((l) => l.turn?.turn.outcome === 'error'),
      'no attempt streamed as an error',
    );
    t.equal(await a!.exited, 0, 'the drained pod exits 0');
    // The same lines through another pod, from the first.
    const again = await request(`${b!.url}/v1/runs/${id}/events`, { headers: auth });
    const replayed: Json[] = [];
    await collect(again.body, replayed);
    t.same(replayed, lines, 'the events route of a sibling serves every line, in the same order');
    const view = (await (await request(`${c!.url}/v1/runs/${id}`, { headers: auth })).body.json()) as Json;
    t.match(view, { status: 'passed', moves: [{ cause: 'drain', to: String }] });
  });

  await t.test('SIGKILL: a sibling takes it over from its checkpoint; the follower through another pod gets the report', async (t) => {
    const started = await request(b!.url + comparePath('coach.3'), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', prefer: 'respond-async' },
      body: JSON.stringify({ ...SUITE, baseline: 'coach' }),
    });
    t.equal(started.statusCode, 202);
    const { id } = (await started.body.json()) as Json;
    const follow = await request(`${c!.url}/v1/runs/${id}/events`, { headers: auth });
    const lines: Json[] = [];
    const streamed = collect(follow.body, lines);
    await until(async () => (await progressOn(b!, id)) >= 8, 60_000, 'two rounds of every conversation');
    b!.child.kill('SIGKILL');
    await streamed;
    const last = lines.at(-1);
    t.ok(last.report !== undefined, `the follower through another pod gets the report, not ${JSON.stringify(last).slice(0, 200)}`);
    t.match(lines.find((l) => l.moved !== undefined)?.moved, { cause: 'takeover' });
    t.notOk(
      last.report.conversations.some((conv: Json) => conv.verdict === 'error'),
      'every conversation has a verdict',
    );
    t.ok(attemptsOf(last.report) <= BUDGET, `sessions within the budget (${attemptsOf(last.report)} of ${BUDGET})`);
  });
});
