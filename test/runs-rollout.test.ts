// A rolling restart that replaces every pod of a release (four listed addresses, two up; each old
// pod SIGTERMed after a new one started, as the chart's rolling update does): a comparison running
// through it ends with its full report, and a run that ended before the rollout is still readable,
// with its report, on both new pods (REST and MCP `tasks/result`) — the draining pods hand their ended runs on, not only their
// running ones. Every process exits 0 within its shutdown grace.
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { startPod, startRunSimulators, type Pod } from './support/cluster.js';
import { freePort, type Json } from './support/http.js';
import { mcpClient, textOf } from './support/mcp.js';
import { attemptsOf, runOn, startComparison, until } from './support/runs.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(300_000));

const SUITE = {
  max_attempts: 12,
  concurrency: 4,
  conversations: ['a', 'b', 'c'].map((name) => ({
    name,
    turns: [{ line: 'sim:delay:150' }, { line: 'sim:chance:0.8', expect: { text_matches: 'Yes' } }],
  })),
};
const BUDGET = SUITE.conversations.length * SUITE.max_attempts * 2;
const GRACE_MS = scaled(30_000);

/** SIGTERM, and the exit code once the pod is gone (failing when it outlives its grace by far). */
async function stop(pod: Pod): Promise<number | null> {
  pod.child.kill('SIGTERM');
  const late = new Promise<never>((_, reject) => {
    const timer = setTimeout(() => reject(new Error(`the pod outlived its grace:\n${pod.output()}`)), GRACE_MS + scaled(15_000));
    timer.unref();
  });
  return Promise.race([pod.exited, late]);
}

const ended = async (pod: Pod, id: string): Promise<Json> => {
  const { status, body } = await runOn(pod, id);
  return status === 200 && body.status !== 'running' ? body : undefined;
};

t.test('a rolling restart of every pod loses neither the running comparison nor an ended run', async (t) => {
  const { spawned, podEnv } = await startRunSimulators(t);
  const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env = podEnv(
    ports.map((p) => `127.0.0.1:${p}`),
    { SHUTDOWN_GRACE_MS: String(GRACE_MS) },
  );
  const up = (i: number) => startPod(ports[i]!, env, (pod) => spawned.push(pod));
  const [a, b] = await Promise.all([up(0), up(1)]);

  const before = await startComparison(a, { ...SUITE, max_attempts: 2 });
  let report: Json;
  await until(async () => (report = await ended(a, before)) !== undefined, 60_000, 'the first comparison ends');
  const endedBefore = report;
  const running = await startComparison(b, SUITE);
  await until(async () => ((await runOn(b, running)).body.progress?.sessions ?? 0) >= 6, 60_000, 'a round of the comparison');

  t.equal(await stop(a), 0, 'the first old pod exits 0 within its grace');
  const c = await up(2);
  t.equal(await stop(b), 0, 'the second old pod exits 0 within its grace');
  const d = await up(3);

  let last: Json;
  await until(async () => (last = await ended(d, running)) !== undefined, 120_000, 'the running comparison ends');
  t.match(last, { status: 'passed', report: { run_id: running } }, 'the comparison ends with its report');
  t.notOk(
    last.report.conversations.some((conv: Json) => conv.verdict === 'error'),
    'every conversation has a verdict',
  );
  t.ok(attemptsOf(last.report) <= BUDGET, `sessions within the budget (${attemptsOf(last.report)} of ${BUDGET})`);

  for (const pod of [c, d]) {
    const { status, body } = await runOn(pod, before);
    t.equal(status, 200, `the run that ended before the rollout is readable on ${pod.url}`);
    t.same(body.report, endedBefore.report, 'with its report');
    const client = await mcpClient({ teardown: () => undefined }, pod);
    const result: Json = await client.experimental.tasks.getTaskResult(before, CallToolResultSchema);
    await client.close();
    t.notOk(result.isError, `tasks/result answers it on ${pod.url}: ${textOf(result).slice(0, 200)}`);
    t.match(result.structuredContent, { run_id: before }, 'with its report');
  }
  // The new pods keep it themselves: a rollout of the new pods keeps it on.
  t.equal(await stop(c), 0, 'a new pod drains too');
  t.same((await runOn(d, before)).body.report, endedBefore.report, 'the last pod standing still answers it');
  t.equal(await stop(d), 0);
});
