// Pods as a mesh or a NAT sees them: a call between pods does not come from the address the pod is
// listed under. Each pod listens on its own loopback address (127.0.0.2, 127.0.0.3, one port), so a
// call between them arrives from 127.0.0.1, as from a sidecar; then pods listed by host name
// (localhost:PORT). Either way a sibling keeps the replica of a running comparison (the call names
// the address its sender is listed under), and finishes it with the full report when the pod running
// it is SIGKILLed; no call between the pods is refused.
import t, { type Test } from 'tap';
import { createServer } from 'node:net';
import { request } from 'undici';
import { startPod, startRunSimulators, type Pod } from './support/cluster.js';
import { freePort, type Json } from './support/http.js';
import {
  AUTH,
  attemptsOf,
  collect,
  IDENTICAL_BUDGET as BUDGET,
  IDENTICAL_SUITE as SUITE,
  metricsOf,
  runOn,
  startComparison,
  until,
} from './support/runs.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(240_000));

/** SIGKILLs `holder` two rounds into a comparison it runs; `sibling`, followed meanwhile, ends it with the report. */
async function killHolderMidway(t: Test, holder: Pod, sibling: Pod): Promise<void> {
  try {
    await holderKilledMidway(t, holder, sibling);
  } catch (err) {
    // A call that failed outright (a pod gone, refused): what both pods said is the evidence.
    throw new Error(`${(err as Error).message}\nholder said:\n${holder.output()}\nsibling said:\n${sibling.output()}`, { cause: err });
  }
}

async function holderKilledMidway(t: Test, holder: Pod, sibling: Pod): Promise<void> {
  const id = await startComparison(holder, SUITE);
  const follow = await request(`${sibling.url}/v1/runs/${id}/events`, { headers: AUTH });
  t.equal(follow.statusCode, 200, 'followed through the sibling');
  const lines: Json[] = [];
  const streamed = collect(follow.body, lines);
  await until(async () => ((await runOn(holder, id)).body.progress?.sessions ?? 0) >= 8, 60_000, 'two rounds of every conversation');
  // A heartbeat later the holder knows a sibling keeps the replica.
  await until(async () => /agent_test_gateway_runs_unreplicated 0/.test(await metricsOf(holder)), 10_000, 'the holder sees its replica');
  holder.child.kill('SIGKILL');
  await streamed;
  const last = lines.at(-1);
  t.ok(last.report !== undefined, `the sibling ends the run with the report, not ${JSON.stringify(last).slice(0, 200)}`);
  t.match(lines.find((l) => l.moved !== undefined)?.moved, { cause: 'takeover' });
  t.notOk(
    last.report.conversations.some((conv: Json) => conv.verdict === 'error'),
    'every conversation has a verdict',
  );
  t.ok(attemptsOf(last.report) <= BUDGET, `sessions within the budget (${attemptsOf(last.report)} of ${BUDGET})`);
  t.match((await runOn(sibling, id)).body, { status: 'passed', moves: [{ cause: 'takeover' }] });
  const metrics = await metricsOf(sibling);
  t.notMatch(metrics, /agent_test_gateway_peer_refusals_total\{[^}]*\} [1-9]/, 'no call between the pods was refused');
}

/** Whether this machine answers on 127.0.0.2 (Linux routes all of 127/8 to loopback; macOS only 127.0.0.1 unless aliased). */
const loopbackAliases = await new Promise<boolean>((resolve) => {
  const server = createServer();
  server.once('error', () => resolve(false));
  server.listen(0, '127.0.0.2', () => server.close(() => resolve(true)));
});

t.test(
  'each pod on its own loopback address: calls between them arrive from 127.0.0.1',
  {
    skip: loopbackAliases
      ? false
      : 'needs 127.0.0.2 and 127.0.0.3 on loopback (macOS: sudo ifconfig lo0 alias 127.0.0.2 up; the same for 127.0.0.3)',
  },
  async (t) => {
    const { spawned, podEnv } = await startRunSimulators(t);
    const port = await freePort();
    const listed = ['127.0.0.2', '127.0.0.3'].map((host) => `${host}:${port}`);
    const [a, b] = await Promise.all(
      ['127.0.0.2', '127.0.0.3'].map((HOST) => startPod(port, podEnv(listed, { HOST }), (pod) => spawned.push(pod))),
    );
    await killHolderMidway(t, a!, b!);
  },
);

t.test('pods listed by host name (localhost:PORT)', async (t) => {
  const { spawned, podEnv } = await startRunSimulators(t);
  const ports = [await freePort(), await freePort()];
  const env = podEnv(ports.map((p) => `localhost:${p}`));
  const [a, b] = await Promise.all(ports.map((port) => startPod(port, env, (pod) => spawned.push(pod))));
  await killHolderMidway(t, b!, a!);
});
