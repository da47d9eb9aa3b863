// What two pods' memory does under RUNS_KEPT_BYTES=8MiB while runs with large transcripts come
// and go (test/runs-kept.test.ts runs the same scenario once, and prints RSS). Rounds of 40 runs
// (3 conversations × 20 repeats × 3 turns of 8 KB, two at a time, one started on each pod); after
// each round, every pod's VmRSS as the runs left it, then again after a full GC with the heap's
// figures (bench/gateway-preload.mjs answers SIGWINCH with gc()). Bounded means the figures after
// a GC stop growing from one round to the next: a leak grows them by a round's worth each time.
//
//   npm run bench:runs-memory [-- --rounds 3 --runs 40 --old-space MiB --snapshot]
//
// `--old-space` starts the pods with NODE_OPTIONS=--max-old-space-size=MiB (as the chart does
// from the memory limit); `--snapshot` writes a heap snapshot of each pod after the last round
// into the package root (`*.heapsnapshot`, git-ignored). Environment variables reach the pods
// (MALLOC_ARENA_MAX=2, say). The last line of stdout is one JSON object.
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { startEngineSimulator } from '../src/simulators/engine.js';
import { startPlatformSimulator } from '../src/simulators/platform.js';
import { demoWorld } from '../src/simulators/world.js';
import { freePort, installCleanup, log, ROOT, startChild, stopChild, vmRssKiB, waitReady, type Child } from './lib.js';

const MIB = 1_048_576;
const AUTH = { authorization: 'Bearer demo-token' };

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    runs: { type: 'string', default: '40' },
    'old-space': { type: 'string' },
    snapshot: { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(opts.rounds);
const RUNS = Number(opts.runs);

const SUITE = {
  repeat: 20,
  concurrency: 10,
  conversations: ['a', 'b', 'c'].map((name) => ({ name, turns: [1, 2, 3].map(() => ({ line: 'sim:huge:8192' })) })),
};

interface Pod {
  child: Child;
  url: string;
}

interface Sample {
  rss_mib: number;
  rss_after_gc_mib: number;
  heap_used_mib: number;
  heap_total_mib: number;
  external_mib: number;
  array_buffers_mib: number;
  kept_mib: number;
}

const mib = (bytes: number): number => Math.round((bytes / MIB) * 10) / 10;

async function keptBytes(pod: Pod): Promise<number> {
  const text = await (await request(`${pod.url}/metrics`)).body.text();
  return Number(/^agent_test_gateway_runs_kept_bytes (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** VmRSS as the pod is, then a full GC and the figures after it. */
async function sample(pod: Pod): Promise<Sample> {
  const rss = vmRssKiB(pod.child.proc.pid!)! * 1024;
  const line = pod.child.nextLine('BENCH_MEM ', 10_000);
  pod.child.proc.kill('SIGWINCH');
  const mem = JSON.parse((await line).slice('BENCH_MEM '.length)) as Record<string, number>;
  return {
    rss_mib: mib(rss),
    rss_after_gc_mib: mib(vmRssKiB(pod.child.proc.pid!)! * 1024),
    heap_used_mib: mib(mem.heapUsed!),
    heap_total_mib: mib(mem.heapTotal!),
    external_mib: mib(mem.external!),
    array_buffers_mib: mib(mem.arrayBuffers!),
    kept_mib: mib(await keptBytes(pod)),
  };
}

async function startRun(pod: Pod): Promise<string> {
  const res = await request(`${pod.url}/v1/agents/coach/runs`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify(SUITE),
  });
  const body = (await res.body.json()) as { id?: string };
  if (res.statusCode !== 202 || body.id === undefined) throw new Error(`expected 202, got ${res.statusCode}: ${JSON.stringify(body)}`);
  return body.id;
}

async function ended(pod: Pod, id: string): Promise<void> {
  for (;;) {
    const res = await request(`${pod.url}/v1/runs/${id}`, { headers: AUTH });
    const body = (await res.body.json()) as { status?: string };
    if (res.statusCode === 200 && body.status !== 'running') return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

installCleanup(30 * 60_000);
const world = demoWorld();
const engine = await startEngineSimulator({ world, sessionEndDelayMs: 50 });
const platform = await startPlatformSimulator({ world });
const ports = [await freePort(), await freePort()];
const pods: Pod[] = [];
for (const [i, port] of ports.entries()) {
  const env: Record<string, string> = {
    PROMETHIST_MCP_ENGINE_URL: engine.url,
    PROMETHIST_PLATFORM_URL: platform.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PEERS: ports.map((p) => `127.0.0.1:${p}`).join(','),
    PEER_SECRET: 'peer-secret-for-the-bench-0123456789',
    RUN_TAKEOVER_MS: '3000',
    AUTH_CACHE_TTL_MS: '3600000',
    RUNS_KEPT_BYTES: '8MiB',
    NODE_OPTIONS: opts['old-space'] === undefined ? '' : `--max-old-space-size=${opts['old-space']}`,
  };
  const args = ['--expose-gc', '--heapsnapshot-signal=SIGUSR2', '--import', './bench/gateway-preload.mjs', 'dist/server.js'];
  const child = startChild(`pod ${i}`, args, env);
  const url = `http://127.0.0.1:${port}`;
  await waitReady(child, url, performance.now(), 60_000);
  pods.push({ child, url });
}
// Snapshots are written into the pods' working directory (the package root): moved afterwards.
const before = await Promise.all(pods.map(sample));
log(`before: ${JSON.stringify(before)}`);
const rounds: Sample[][] = [];
for (let r = 0; r < ROUNDS; r++) {
  const started = performance.now();
  for (let i = 0; i < RUNS; i += 2) {
    const batch = await Promise.all(pods.map(startRun));
    for (const id of batch) await ended(pods[0]!, id);
  }
  // A replica hears of its run's end with the holder's next push.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const after = await Promise.all(pods.map(sample));
  rounds.push(after);
  log(`round ${r + 1} (${RUNS} runs, ${Math.round((performance.now() - started) / 1000)} s): ${JSON.stringify(after)}`);
}
if (opts.snapshot) {
  // Node writes them into the pod's working directory (the package root): moved afterwards.
  for (const pod of pods) pod.child.proc.kill('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 20_000));
  log(`heap snapshots: Heap.*.heapsnapshot in ${ROOT}`);
}
for (const pod of pods) await stopChild(pod.child);
await engine.close();
await platform.close();

const cell = (value: number | string, width: number) => String(value).padStart(width);
const table = ['pod  round  RSS MiB  after GC  heap used  heap total  external  kept'];
for (const [i] of pods.entries()) {
  for (const [r, samples] of [before, ...rounds].entries()) {
    const s = samples[i]!;
    const figures = [cell(s.rss_mib, 7), cell(s.rss_after_gc_mib, 8), cell(s.heap_used_mib, 9), cell(s.heap_total_mib, 10)];
    table.push(`${i}    ${cell(r, 5)}  ${figures.join('  ')}  ${cell(s.external_mib, 8)}  ${s.kept_mib}`);
  }
}
console.log(table.join('\n'));
console.log(JSON.stringify({ runs_per_round: RUNS, old_space_mib: opts['old-space'] ?? null, before, rounds }));
process.exit(0);
