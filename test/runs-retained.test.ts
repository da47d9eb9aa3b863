// A run a pod no longer keeps leaves nothing of it behind: once an ended run is dropped (here by
// RUNS_KEPT_MAX=1, the same forgetting as RUNS_KEPT_BYTES and RUNS_KEPT_MS), a full GC collects
// its record (its lines, its rounds, what its runner prepared). Before, every conversation the run
// had closed was remembered with the run's room, which reached the whole record, so a pod kept the
// transcripts of up to REMEMBERED_CONVERSATIONS_MAX conversations' runs for a day, whatever the
// bound in bytes said.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import type { Run } from '../src/runs/run.js';
import { runPath } from './support/http.js';
import { startPods } from './support/peers.js';
import { eventually, startStack } from './support/stack.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Whether the object behind `ref` is garbage: full GCs, each in a task of its own (a WeakRef holds
 * its target to the end of the task that read it).
 */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    if (ref.deref() === undefined) return true;
  }
  return false;
}

const SUITE = {
  repeat: 3,
  concurrency: 3,
  conversations: ['a', 'b'].map((name) => ({ name, turns: [{ line: 'sim:huge:4096' }, { line: 'Where is my order?' }] })),
};

t.test('an ended run dropped from a pod is garbage: no closed conversation keeps it', async (t) => {
  const s = await startStack(t, { env: { RUNS_KEPT_MAX: '1' } });
  const first = await s.call('POST', runPath(), { body: SUITE });
  t.equal(first.status, 200, 'the first run ends with its report');
  const id = first.body.run_id as string;
  const ref = new WeakRef<Run>(s.app.runs.get(id)!);
  t.ok(ref.deref(), 'the pod keeps it while it is the newest');
  t.ok(s.app.conversationRegistry.stats.remembered >= 6, 'the conversations it closed are remembered');

  const second = await s.call('POST', runPath(), { body: SUITE });
  t.equal(second.status, 200);
  t.equal(s.app.runs.get(id), undefined, 'the first is dropped (RUNS_KEPT_MAX=1)');
  t.ok(await collected(ref), 'and collected: nothing else holds its record');
  t.equal((await s.call('GET', `/v1/runs/${id}`)).status, 404);
});

t.test('between pods: a dropped run is garbage on its holder and on its sibling', async (t) => {
  const pods = await startPods(t, 2, { env: { RUNS_KEPT_MAX: '1' } });
  const [holder, sibling] = pods.apps as [(typeof pods.apps)[0], (typeof pods.apps)[0]];
  const run = async () => {
    const answer = await pods.call(0, 'POST', runPath(), { body: SUITE });
    t.equal(answer.status, 200, 'the run ends with its report');
    return answer.body.run_id as string;
  };
  const id = await run();
  // The sibling hears of the run's end with the holder's last push.
  await eventually(() => sibling.runs.get(id)?.ended === true);
  const refs = [new WeakRef<Run>(holder.runs.get(id)!), new WeakRef<Run>(sibling.runs.get(id)!)];

  const next = await run();
  await eventually(() => sibling.runs.get(next)?.ended === true);
  for (const app of [holder, sibling]) t.equal(app.runs.get(id), undefined, 'the first is dropped on each pod');
  t.ok(await collected(refs[0]!), "the holder's record is collected");
  t.ok(await collected(refs[1]!), "the sibling's replica is collected");
});
