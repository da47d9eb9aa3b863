// `npm run bench`: the gateway's cost per turn, its throughput against the bare engine socket,
// the cost of a socket per turn, its memory per open idle conversation, and its start-up time.
//
// Processes (all on loopback, all stopped by this one, also when it fails or is killed):
//   sims      node --import tsx bench/sims-process.ts      engine simulator (instant replies) + platform simulator
//   gateway   node dist/server.js                          the compiled service, as deployed
//   per-turn  node --import tsx bench/per-turn-gateway.ts   same REST shape, a new engine socket per turn
//   this      the client: ws for (a), an undici keep-alive Pool for (b) and (c)
//
// Modes: (a) straight to the simulator's socket, (b) through the gateway, (c) through the per-turn
// variant; each at 1 conversation and at 200 concurrent ones, closed loop, after a warm-up.
// Human-readable output first; the LAST line of stdout is one JSON object. Progress goes to stderr.
// Options: --cpu-prof (profile the gateway; figures are then distorted), --quick (short phases).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  closedLoop,
  cpuCharge,
  DirectConversation,
  figures,
  freePort,
  gatewayEnv as gatewayEnvOf,
  installCleanup,
  log,
  LINES,
  machine,
  mapLimit,
  median,
  memorySample,
  newPool,
  RestConversation,
  ROOT,
  round,
  startChild,
  stopChild,
  times,
  waitReady,
  type Measured,
  type MemorySample,
  type RunFigures,
} from './lib.js';
import { forwardOverhead } from './forward.js';
import { formatProfile, readProfile, summarizeProfile, type ProfileSummary } from './profile-top.js';

const CPU_PROF = process.argv.includes('--cpu-prof') || process.env.BENCH_CPU_PROF === '1';
const QUICK = process.argv.includes('--quick');
const PROFILE_DIR = join(ROOT, 'bench', 'profiles');

const MANY = 200;
/** Phases, in ms; a phase also stops at its turn cap. */
const T = QUICK
  ? { warm1: 500, measure1: 800, warm200: 500, measure200: 1000, rounds: 1, settle: 300 }
  : { warm1: 1500, measure1: 2500, warm200: 1500, measure200: 2500, rounds: 2, settle: 1000 };
const MAX_TURNS_1 = 50_000;
const MAX_TURNS_200 = 300_000;
const STARTUP_SAMPLES = QUICK ? 1 : 5;
/** What the image runs (Dockerfile: ENTRYPOINT and CMD, after tini). */
const IMAGE_COMMAND = ['dist/entrypoint.js', 'serve'];
const MEMORY_SAMPLES = 5;
const MEMORY_CYCLES = QUICK ? 1 : 3;
const TIME_CAP_MS = 170_000;

/** Now, in µs of the monotonic clock: the clock of a .cpuprofile's timestamps. */
const hrUs = (): number => Number(process.hrtime.bigint() / 1000n);

const TARGETS = {
  overhead_p50_ms: 0.5,
  overhead_p99_ms: 3,
  throughput_ratio_200: 0.5,
  rss_kib_per_conversation: 64,
  gateway_cpu_us_per_turn_200: 80,
  startup_ms: 500,
};

async function main(): Promise<void> {
  installCleanup(TIME_CAP_MS);
  if (!existsSync(join(ROOT, 'dist', 'server.js'))) throw new Error('dist/server.js is missing: run npm run build first');
  if (CPU_PROF) {
    rmSync(PROFILE_DIR, { recursive: true, force: true });
    mkdirSync(PROFILE_DIR, { recursive: true });
  }

  const loadBefore = loadavg().map((x) => round(x, 2));
  const charge = cpuCharge();
  log('starting the simulators');
  const sims = startChild('sims', ['--import', 'tsx', 'bench/sims-process.ts'], {});
  const urls = JSON.parse(await sims.nextLine('{', 30_000)) as { engine: string; platform: string };

  const gatewayEnv = (port: number): Record<string, string> => gatewayEnvOf(urls, port);

  // Start-up: spawn → first 200 on /readyz. `startup_ms` is the image's command (the Dockerfile's
  // ENTRYPOINT and CMD without tini) with its compile cache, which the image fills at build and a
  // first start here fills too (not counted); `node dist/server.js` is measured as well, no cache.
  const compileCache = mkdtempSync(join(tmpdir(), 'agent-test-gateway-bench-cache-'));
  const startOnce = async (name: string, args: string[], env: Record<string, string>): Promise<number> => {
    const port = await freePort();
    const since = performance.now();
    const child = startChild(name, args, { ...gatewayEnv(port), ...env });
    const ms = round(await waitReady(child, `http://127.0.0.1:${port}`, since), 1);
    await stopChild(child);
    return ms;
  };
  const startupSamples = async (name: string, args: string[], env: Record<string, string>): Promise<number[]> => {
    const samples: number[] = [];
    for (let i = 0; i < STARTUP_SAMPLES; i++) samples.push(await startOnce(name, args, env));
    return samples;
  };
  const imageEnv = { NODE_ENV: 'production', NODE_COMPILE_CACHE: compileCache };
  await startOnce('gateway (filling the compile cache)', IMAGE_COMMAND, imageEnv);
  const startup = await startupSamples('gateway (start-up, image command)', IMAGE_COMMAND, imageEnv);
  const startupServer = await startupSamples('gateway (start-up, dist/server.js)', ['dist/server.js'], { NODE_DISABLE_COMPILE_CACHE: '1' });
  rmSync(compileCache, { recursive: true, force: true });
  log(`start-up: image command ${startup.join(', ')} ms; dist/server.js ${startupServer.join(', ')} ms`);

  const gwPort = await freePort();
  const gwUrl = `http://127.0.0.1:${gwPort}`;
  const gateway = startChild(
    'gateway',
    [
      '--expose-gc',
      '--import',
      pathToFileURL(join(ROOT, 'bench', 'gateway-preload.mjs')).href,
      ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []),
      'dist/server.js',
    ],
    gatewayEnv(gwPort),
  );
  const ptPort = await freePort();
  const ptUrl = `http://127.0.0.1:${ptPort}`;
  const perTurn = startChild('per-turn gateway', ['--import', 'tsx', 'bench/per-turn-gateway.ts'], gatewayEnv(ptPort));
  const since = performance.now();
  const sinceUs = hrUs();
  const [gatewayReadyMs] = await Promise.all([waitReady(gateway, gwUrl, since), waitReady(perTurn, ptUrl, since, 30_000)]);
  const gatewayReadyUs = sinceUs + gatewayReadyMs * 1000;
  /** When the gateway served mode (b): the windows of its profile worth reading. */
  const bWindows: Array<[number, number]> = [];
  const inWindow = async <R>(run: () => Promise<R>): Promise<R> => {
    const from = hrUs();
    try {
      return await run();
    } finally {
      bWindows.push([from, hrUs()]);
    }
  };
  const poolB = newPool(gwUrl);
  const poolC = newPool(ptUrl);
  const sims_ = { sims: sims.proc.pid!, client: 'self' as const };
  const watch = {
    a: sims_,
    b: { ...sims_, gateway: gateway.proc.pid! },
    c: { ...sims_, gateway: perTurn.proc.pid! },
  };

  // Memory per open idle conversation: RSS after a full GC (median of several samples) with no
  // conversation open, then with MANY open and idle. RSS moves by megabytes with the heap's own
  // sizing, so the cycle runs MEMORY_CYCLES times (closing the conversations in between) and the
  // median of the per-cycle differences is the figure; the first cycle is on the fresh gateway,
  // after a light warm-up of the code paths and caches.
  log('memory: warming up');
  await mapLimit(times(20), 10, async () => {
    const conv = await RestConversation.start(poolB);
    for (const line of LINES.slice(0, 5)) await conv.turn(line);
    await conv.close();
  });
  const memoryCycles: Array<{
    before: MemorySample;
    after: MemorySample;
    rss_kib_per_conversation: number;
    heap_kib_per_conversation: number;
  }> = [];
  let idle: RestConversation[] = [];
  for (let cycle = 0; cycle < MEMORY_CYCLES; cycle++) {
    if (cycle > 0) await mapLimit(idle, 20, (conv) => conv.close());
    const before = await memorySample(gateway, gwUrl, T.settle, MEMORY_SAMPLES);
    idle = await mapLimit(times(MANY), 20, () => RestConversation.start(poolB));
    const after = await memorySample(gateway, gwUrl, T.settle, MEMORY_SAMPLES);
    memoryCycles.push({
      before,
      after,
      rss_kib_per_conversation: round((after.rss_kib - before.rss_kib) / MANY, 1),
      heap_kib_per_conversation: round((after.heap_used_kib - before.heap_used_kib) / MANY, 1),
    });
    log(`memory: cycle ${cycle + 1}: RSS ${before.rss_kib} → ${after.rss_kib} KiB with ${MANY} idle conversations`);
  }
  const rssPerConversation = median(memoryCycles.map((c) => c.rss_kib_per_conversation));
  const heapPerConversation = median(memoryCycles.map((c) => c.heap_kib_per_conversation));
  log(`memory: ${rssPerConversation.toFixed(1)} KiB RSS, ${heapPerConversation.toFixed(1)} KiB heap per conversation`);

  type Mode = 'a' | 'b' | 'c';
  const MODES: Mode[] = ['a', 'b', 'c'];
  /**
   * Each mode warms up, then the modes take turns in short rounds (a b c, then c b a, …), so that
   * drift and whatever else runs on the machine fall on all of them alike.
   */
  async function rounds(
    convs: Record<Mode, RestConversation[] | DirectConversation[]>,
    t: { warm: number; measure: number; rounds: number; maxTurns: number },
  ) {
    const parts: Record<Mode, Measured[]> = { a: [], b: [], c: [] };
    for (const mode of MODES) await closedLoop(convs[mode], { warmMs: t.warm, measureMs: 0, maxTurns: t.maxTurns });
    for (let r = 0; r < t.rounds; r++) {
      for (const mode of r % 2 === 0 ? MODES : [...MODES].reverse()) {
        const run = () => closedLoop(convs[mode], { warmMs: 300, measureMs: t.measure, maxTurns: t.maxTurns, watch: watch[mode] });
        parts[mode].push(await (mode === 'b' ? inWindow(run) : run()));
      }
    }
    return parts;
  }

  log('1 conversation');
  const one = {
    a: [await DirectConversation.open(urls.engine)],
    b: [await RestConversation.start(poolB)],
    c: [await RestConversation.start(poolC)],
  };
  const parts1 = await rounds(one, { warm: T.warm1, measure: T.measure1, rounds: T.rounds, maxTurns: MAX_TURNS_1 });
  await one.a[0]!.close();
  const runs1 = { a: figures('a', 1, parts1.a), b: figures('b', 1, parts1.b), c: figures('c', 1, parts1.c) };

  log(`${MANY} concurrent conversations`);
  const many = {
    a: await mapLimit(times(MANY), 20, () => DirectConversation.open(urls.engine)),
    b: idle,
    c: await mapLimit(times(MANY), 20, () => RestConversation.start(poolC)),
  };
  const parts200 = await rounds(many, { warm: T.warm200, measure: T.measure200, rounds: T.rounds, maxTurns: MAX_TURNS_200 });
  await Promise.all(many.a.map((d) => d.close()));
  const a200 = figures('a', MANY, parts200.a);
  const b200 = figures('b', MANY, parts200.b);
  const c200 = figures('c', MANY, parts200.c);

  await Promise.allSettled([poolB.close(), poolC.close()]);
  await stopChild(gateway, 30_000);
  await stopChild(perTurn);
  log('forwarded turns: two gateways, peers of each other');
  const forward = await forwardOverhead(gatewayEnv, QUICK ? 300 : 2000);
  await stopChild(sims);

  let profile: ProfileSummary | undefined;
  if (CPU_PROF) {
    const file = readdirSync(PROFILE_DIR).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) log('no .cpuprofile was written');
    else {
      const data = readProfile(join(PROFILE_DIR, file));
      const startupProfile = summarizeProfile(data, 15, [[data.startTime, gatewayReadyUs]]);
      profile = summarizeProfile(data, 30, bWindows);
      process.stdout.write(
        [
          `gateway CPU profile (bench/profiles/${file})`,
          `-- start-up, process start → ready (${((gatewayReadyUs - data.startTime) / 1000).toFixed(0)} ms; --cpu-prof slows it):`,
          formatProfile(startupProfile),
          '-- mode (b) turns, 1 and 200 conversations:',
          formatProfile(profile),
          '',
          '',
        ].join('\n'),
      );
    }
  }

  const result = {
    overhead_p50_ms: round(runs1.b.p50_ms - runs1.a.p50_ms),
    overhead_p99_ms: round(runs1.b.p99_ms - runs1.a.p99_ms),
    throughput_ratio_200: round(b200.turns_per_s / a200.turns_per_s),
    per_turn_socket_ratio: round(c200.turns_per_s / b200.turns_per_s),
    rss_kib_per_conversation: round(rssPerConversation, 1),
    gateway_cpu_us_per_turn_200: b200.cpu_us_per_turn.gateway,
    direct_cpu_us_per_turn_200: a200.cpu_us_per_turn.client,
    startup_ms: median(startup),
    startup_server_ms: median(startupServer),
    forward_overhead_p50_ms: forward.forward_overhead_p50_ms,
    forward_overhead_p99_ms: forward.forward_overhead_p99_ms,
  };
  const met = {
    overhead_p50_ms: result.overhead_p50_ms <= TARGETS.overhead_p50_ms,
    overhead_p99_ms: result.overhead_p99_ms <= TARGETS.overhead_p99_ms,
    throughput_ratio_200: result.throughput_ratio_200 >= TARGETS.throughput_ratio_200,
    rss_kib_per_conversation: result.rss_kib_per_conversation <= TARGETS.rss_kib_per_conversation,
    gateway_cpu_us_per_turn_200:
      result.gateway_cpu_us_per_turn_200 !== undefined && result.gateway_cpu_us_per_turn_200 <= TARGETS.gateway_cpu_us_per_turn_200,
    startup_ms: result.startup_ms <= TARGETS.startup_ms,
  };
  const runs: RunFigures[] = [runs1.a, runs1.b, runs1.c, a200, b200, c200];
  const host = {
    ...machine(),
    cpu_charged_per_wall_ms: charge,
    loadavg_before: loadBefore,
    loadavg_after: loadavg().map((x) => round(x, 2)),
  };

  const label = { a: '(a) engine socket, direct', b: '(b) gateway REST', c: '(c) per-turn socket gateway' };
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const ok = (pass: boolean) => (pass ? 'ok' : 'MISSED');
  const cpu = (r: RunFigures) =>
    ['client', 'gateway', 'sims'].map((k) => pad(r.cpu_us_per_turn[k] === undefined ? '-' : r.cpu_us_per_turn[k], 6)).join('');
  // Figures start at column 50, after their label.
  const row = (label: string, figures: string) => `${label.padEnd(50)}${figures}`;
  const profiled = `${CPU_PROF ? ' — PROFILED: figures distorted' : ''}${QUICK ? ' — QUICK' : ''}`;
  const disturbed = host.loadavg_before[0]! > 1 ? ' — other work was running: figures are disturbed' : '';
  const memoryMedians = memoryCycles.map((c) => c.rss_kib_per_conversation).join(', ');
  const out = [
    `agent-test-gateway bench — ${host.nproc} CPUs (${host.cpu}), node ${host.node}${profiled}`,
    `load average before ${host.loadavg_before.join(' ')}, after ${host.loadavg_after.join(' ')}${disturbed}`,
    '',
    `${''.padEnd(99)}   CPU µs per turn (a busy loop is charged ${host.cpu_charged_per_wall_ms} ms per ms here)`,
    `${'mode'.padEnd(30)}${pad('convs', 6)}${pad('turns', 8)}${pad('seconds', 9)}${pad('turns/s', 10)}` +
      `${pad('p50 ms', 9)}${pad('p90 ms', 9)}${pad('p99 ms', 9)}${pad('max ms', 9)}  client gatew.  sims`,
    ...runs.map(
      (r) =>
        `${label[r.mode].padEnd(30)}${pad(r.conversations, 6)}${pad(r.turns, 8)}${pad(r.seconds.toFixed(2), 9)}` +
        `${pad(r.turns_per_s.toFixed(0), 10)}${pad(r.p50_ms.toFixed(3), 9)}${pad(r.p90_ms.toFixed(3), 9)}` +
        `${pad(r.p99_ms.toFixed(3), 9)}${pad(r.max_ms.toFixed(2), 9)}  ${cpu(r)}`,
    ),
    '',
    row(
      'gateway added latency at 1 conversation (b − a)',
      `p50 ${result.overhead_p50_ms.toFixed(3)} ms (target ≤ ${TARGETS.overhead_p50_ms}) ${ok(met.overhead_p50_ms)}`,
    ),
    row('', `p99 ${result.overhead_p99_ms.toFixed(3)} ms (target ≤ ${TARGETS.overhead_p99_ms}) ${ok(met.overhead_p99_ms)}`),
    row(
      `throughput at ${MANY} conversations, b / a`,
      `${result.throughput_ratio_200.toFixed(3)} (target ≥ ${TARGETS.throughput_ratio_200}) ${ok(met.throughput_ratio_200)}`,
    ),
    row(
      `socket per turn at ${MANY} conversations, c / b`,
      `${result.per_turn_socket_ratio.toFixed(3)} (at 1 conversation: ${(runs1.c.turns_per_s / runs1.b.turns_per_s).toFixed(3)})`,
    ),
    row(
      'resident memory per open idle conversation',
      `${result.rss_kib_per_conversation.toFixed(1)} KiB (target ≤ ${TARGETS.rss_kib_per_conversation}) ` +
        `${ok(met.rss_kib_per_conversation)}  median of ${memoryCycles.length}: [${memoryMedians}]; ` +
        `JS heap used ${heapPerConversation.toFixed(1)} KiB per conversation`,
    ),
    row(
      `gateway CPU per turn at ${MANY} conversations`,
      `${result.gateway_cpu_us_per_turn_200} µs (target ≤ ${TARGETS.gateway_cpu_us_per_turn_200}) ` +
        `${ok(met.gateway_cpu_us_per_turn_200)}; ` +
        `the direct socket's client ${result.direct_cpu_us_per_turn_200} µs (mode (a), same run; ` +
        `a busy loop is charged ${host.cpu_charged_per_wall_ms} ms per ms)`,
    ),
    row(
      'start-up, spawn → first 200 on /readyz',
      `${result.startup_ms} ms for the image's command (${IMAGE_COMMAND.join(' ')}, compile cache), ` +
        `median of [${startup.join(', ')}] (target ≤ ${TARGETS.startup_ms}) ${ok(met.startup_ms)}`,
    ),
    row('', `${result.startup_server_ms} ms for node dist/server.js (no compile cache), median of [${startupServer.join(', ')}]`),
    row(
      'forwarded turn over a local one (peer hop)',
      `p50 ${result.forward_overhead_p50_ms.toFixed(3)} ms, p99 ${result.forward_overhead_p99_ms.toFixed(3)} ms ` +
        `(local p50 ${forward.local.p50_ms}, forwarded p50 ${forward.forwarded.p50_ms}; ${forward.local.turns} turns each)`,
    ),
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  const raw = {
    targets: TARGETS,
    met,
    runs,
    memory: {
      conversations: MANY,
      heap_used_kib_per_conversation: heapPerConversation,
      cycles: memoryCycles,
    },
    startup_samples_ms: startup,
    startup_server_samples_ms: startupServer,
    forward: { local: forward.local, forwarded: forward.forwarded },
    per_turn_socket_ratio_1: round(runs1.c.turns_per_s / runs1.b.turns_per_s),
    machine: host,
    profiled: CPU_PROF,
    quick: QUICK,
    ...(profile ? { profile_top: profile.top.slice(0, 10).map((r) => ({ fn: r.name, at: r.where, self_ms: Math.round(r.selfMs) })) } : {}),
  };
  process.stdout.write(`${JSON.stringify({ ...result, ...raw })}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
