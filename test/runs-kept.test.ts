// What a pod keeps of runs is bounded in bytes (RUNS_KEPT_BYTES): 40 runs with large transcripts
// (3 conversations × 20 repeats × 3 turns of 8 KB) on two real pods under 8 MiB. Each pod's gauge
// stays under the bound once the runs of a batch ended, the newest run is readable on both, and the
// oldest answers 404 saying it was dropped for room. What the pods keep in all is bounded too: after
// a full GC (the pods run with --expose-gc and bench/gateway-preload.mjs, which collects on
// SIGWINCH), each one's JS heap grew by a few times the bound at most (it grew by ~75 MiB when the
// conversations a run closed kept the whole run alive). Resident memory, before, after and after
// the GC, is printed: a figure for docs/scaling.md, not asserted (V8 gives memory back lazily, and
// how much it holds depends on the machine's memory, not on what the pod keeps).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { request } from 'undici';
import { ConfigError, loadConfig } from '../src/ops/config.js';
import { startPod, startRunSimulators, type Pod } from './support/cluster.js';
import { freePort, runPath, type Json } from './support/http.js';
import { AUTH, metricsOf, runOn, until } from './support/runs.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(600_000));

const MIB = 1_048_576;
const RUNS = 40;
const BOUND = 8 * MIB;

const SUITE = {
  repeat: 20,
  concurrency: 10,
  conversations: ['a', 'b', 'c'].map((name) => ({ name, turns: [1, 2, 3].map(() => ({ line: 'sim:huge:8192' })) })),
};

/** How much a pod's heap may grow in all: the kept runs, and its own working set (compiled code, caches, remembered conversations). */
const HEAP_GROWTH_MAX = 5 * BOUND;

const keptBytes = async (pod: Pod): Promise<number> =>
  Number(/^agent_test_gateway_runs_kept_bytes (\d+)/m.exec(await metricsOf(pod))?.[1] ?? NaN);

const rssMiB = (pod: Pod): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pod.child.pid}/status`, 'utf8'))?.[1]) / 1024;

/** What a full GC leaves of a pod (gateway-preload.mjs answers SIGWINCH with one, and a BENCH_MEM line). */
async function afterGc(pod: Pod): Promise<{ rssMiB: number; heapUsedMiB: number }> {
  const lines = () => pod.output().match(/^BENCH_MEM .*$/gm) ?? [];
  const seen = lines().length;
  pod.child.kill('SIGWINCH');
  await until(() => lines().length > seen, 10_000, 'a full GC');
  const mem = JSON.parse(lines()[seen]!.slice('BENCH_MEM '.length)) as { heapUsed: number };
  return { rssMiB: rssMiB(pod), heapUsedMiB: mem.heapUsed / MIB };
}

/** Node flags of the pods: a full GC on SIGWINCH. */
const GC_ON_SIGNAL = ['--expose-gc', '--import', './bench/gateway-preload.mjs'];

async function startRun(pod: Pod): Promise<string> {
  const res = await request(pod.url + runPath(), {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify(SUITE),
  });
  const body = (await res.body.json()) as Json;
  if (res.statusCode !== 202) throw new Error(`expected 202, got ${res.statusCode}: ${JSON.stringify(body)}`);
  return body.id as string;
}

t.test('RUNS_KEPT_BYTES: a size, with or without a binary unit', async (t) => {
  const base = { PROMETHIST_MCP_ENGINE_URL: 'http://engine.example', PROMETHIST_PLATFORM_URL: 'http://platform.example' };
  t.equal(loadConfig(base).runs.keptBytes, 64 * MIB, '64 MiB by default');
  t.equal(loadConfig({ ...base, RUNS_KEPT_BYTES: '8MiB' }).runs.keptBytes, 8 * MIB);
  t.equal(loadConfig({ ...base, RUNS_KEPT_BYTES: '300Mi' }).runs.keptBytes, 300 * MIB, 'as Kubernetes writes a limit');
  t.equal(loadConfig({ ...base, RUNS_KEPT_BYTES: '2097152' }).runs.keptBytes, 2 * MIB);
  for (const bad of ['8MB', '1KiB', 'lots']) {
    t.throws(() => loadConfig({ ...base, RUNS_KEPT_BYTES: bad }), ConfigError, bad);
    t.throws(() => loadConfig({ ...base, RUNS_KEPT_BYTES: bad }), /RUNS_KEPT_BYTES must be a size in bytes of at least 1048576/);
  }
});

t.test('40 runs with large transcripts on two pods under RUNS_KEPT_BYTES=8MiB', async (t) => {
  const { spawned, podEnv } = await startRunSimulators(t);
  const ports = [await freePort(), await freePort()];
  const env = podEnv(
    ports.map((p) => `127.0.0.1:${p}`),
    { RUNS_KEPT_BYTES: '8MiB' },
  );
  const pods = await Promise.all(ports.map((port) => startPod(port, env, (pod) => spawned.push(pod), GC_ON_SIGNAL)));
  const before = await Promise.all(pods.map(afterGc));
  const ids: string[] = [];
  let most = 0;
  // Two at a time, one started on each pod: each pod holds one and keeps the other's replica.
  for (let i = 0; i < RUNS; i += 2) {
    const batch = await Promise.all(pods.map((pod) => startRun(pod)));
    ids.push(...batch);
    for (const id of batch) {
      await until(async () => (await runOn(pods[0]!, id)).body.status !== 'running', 120_000, `run ${id} ends`);
    }
    for (const pod of pods) {
      // A replica hears of its run's end with the holder's next push.
      await until(async () => (await keptBytes(pod)) <= BOUND, 10_000, 'the gauge under the bound');
      most = Math.max(most, await keptBytes(pod));
    }
  }
  t.ok(most <= BOUND, `each pod's gauge stayed under the bound once a batch ended (at most ${(most / MIB).toFixed(1)} MiB)`);
  const newest = ids.at(-1)!;
  for (const pod of pods) {
    const read = await runOn(pod, newest);
    t.equal(read.status, 200, 'the newest run is readable');
    t.equal(read.body.report?.totals?.attempts?.total, 60, 'with its full report');
    const dropped = await runOn(pod, ids[0]!);
    t.equal(dropped.status, 404, 'the oldest is gone');
    t.match(dropped.body, { error: 'run_not_found', message: /dropped for room/ });
  }
  const events = await request(`${pods[1]!.url}/v1/runs/${newest}/events`, { headers: AUTH });
  const lines = (await events.body.text()).trim().split('\n');
  t.ok(JSON.parse(lines.at(-1)!).report !== undefined, "the newest run's events end with its report");
  const rssAfter = pods.map(rssMiB);
  const after = await Promise.all(pods.map(afterGc));
  for (const [i] of pods.entries()) {
    const growth = after[i]!.heapUsedMiB - before[i]!.heapUsedMiB;
    t.ok(
      growth * MIB <= HEAP_GROWTH_MAX,
      `pod ${i}: its heap after a full GC grew by ${growth.toFixed(1)} MiB, within ${HEAP_GROWTH_MAX / MIB} MiB`,
    );
  }
  const mib = (n: number) => n.toFixed(0);
  const rss = pods.map((_, i) => `${mib(before[i]!.rssMiB)} → ${mib(rssAfter[i]!)} MiB (${mib(after[i]!.rssMiB)} after a GC)`);
  const heap = pods.map((_, i) => `${mib(before[i]!.heapUsedMiB)} → ${mib(after[i]!.heapUsedMiB)}`);
  const kept = (await Promise.all(pods.map(keptBytes))).map((b) => (b / MIB).toFixed(1));
  t.comment(`per pod: RSS ${rss.join(', ')}; heap used after a GC ${heap.join(', ')} MiB; kept ${kept.join(', ')} MiB`);
});
