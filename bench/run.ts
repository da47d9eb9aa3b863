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
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  closedLoop,
  DirectConversation,
  figures,
  freePort,
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
  type RunFigures,
} from './lib.js';
import { formatProfile, readProfile, summarizeProfile, type ProfileSummary } from './profile-top.js';

const CPU_PROF = process.argv.includes('--cpu-prof') || process.env.BENCH_CPU_PROF === '1';
const QUICK = process.argv.includes('--quick');
const PROFILE_DIR = join(ROOT, 'bench', 'profiles');

const MANY = 200;
/** Phases, in ms; a phase also stops at its turn cap. */
const T = QUICK
  ? { warm1: 500, measure1: 800, rounds1: 1, warm200: 500, measure200: 1500, settle: 300 }
  : { warm1: 1500, measure1: 2500, rounds1: 2, warm200: 1500, measure200: 5000, settle: 1000 };
const MAX_TURNS_1 = 50_000;
const MAX_TURNS_200 = 300_000;
const STARTUP_SAMPLES = QUICK ? 1 : 3;
const MEMORY_SAMPLES = 5;
const TIME_CAP_MS = 170_000;

/** Now, in µs of the monotonic clock: the clock of a .cpuprofile's timestamps. */
const hrUs = (): number => Number(process.hrtime.bigint() / 1000n);

const TARGETS = {
  overhead_p50_ms: 0.5,
  overhead_p99_ms: 3,
  throughput_ratio_200: 0.5,
  rss_kib_per_conversation: 64,
  startup_ms: 1000,
};

async function main(): Promise<void> {
  installCleanup(TIME_CAP_MS);
  if (!existsSync(join(ROOT, 'dist', 'server.js'))) throw new Error('dist/server.js is missing: run npm run build first');
  if (CPU_PROF) {
    rmSync(PROFILE_DIR, { recursive: true, force: true });
    mkdirSync(PROFILE_DIR, { recursive: true });
  }

  log('starting the simulators');
  const sims = startChild('sims', ['--import', 'tsx', 'bench/sims-process.ts'], {});
  const urls = JSON.parse(await sims.nextLine('{', 30_000)) as { engine: string; platform: string };

  const gatewayEnv = (port: number): Record<string, string> => ({
    PROMETHIST_MCP_ENGINE_URL: urls.engine,
    PROMETHIST_PLATFORM_URL: urls.platform,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    AUTH_CACHE_TTL_MS: '3600000',
    MAX_CONVERSATIONS_PER_POD: '1000',
    MAX_CONVERSATIONS_PER_CALLER: '1000',
    IDLE_CLOSE_MS: '3600000',
    SHUTDOWN_GRACE_MS: '0',
  });

  // Start-up: spawn → first 200 on /readyz, of `node dist/server.js` exactly as deployed.
  const startup: number[] = [];
  for (let i = 0; i < STARTUP_SAMPLES; i++) {
    const port = await freePort();
    const since = performance.now();
    const child = startChild('gateway (start-up)', ['dist/server.js'], gatewayEnv(port));
    startup.push(round(await waitReady(child, `http://127.0.0.1:${port}`, since), 1));
    await stopChild(child);
  }
  log(`start-up: ${startup.join(', ')} ms`);

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
  await Promise.all([waitReady(gateway, gwUrl, since), waitReady(perTurn, ptUrl, since, 30_000)]);
  const gatewayReadyUs = hrUs();
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

  // Memory per open idle conversation, on the fresh gateway. The warm-up is the measured phase
  // once over (200 conversations opened 20 at a time, a few turns, then closed), so that the
  // heap's young generation and the caches are as grown before the baseline as after.
  log('memory: warming up');
  const warm = await mapLimit(times(MANY), 20, () => RestConversation.start(poolB));
  await mapLimit(warm, 20, async (conv) => {
    for (const line of LINES.slice(0, 3)) await conv.turn(line);
    await conv.close();
  });
  const memBefore = await memorySample(gateway, gwUrl, T.settle, MEMORY_SAMPLES);
  log(`memory: opening ${MANY} idle conversations`);
  const idle = await mapLimit(times(MANY), 20, () => RestConversation.start(poolB));
  const memAfter = await memorySample(gateway, gwUrl, T.settle, MEMORY_SAMPLES);
  const rssPerConversation = (memAfter.rss_kib - memBefore.rss_kib) / MANY;
  const heapPerConversation = (memAfter.heap_used_kib - memBefore.heap_used_kib) / MANY;
  log(`memory: ${rssPerConversation.toFixed(1)} KiB RSS, ${heapPerConversation.toFixed(1)} KiB heap per conversation`);

  // One conversation: rounds of a, b, c, so that drift does not favour one mode.
  log('1 conversation');
  const one = {
    a: await DirectConversation.open(urls.engine),
    b: await RestConversation.start(poolB),
    c: await RestConversation.start(poolC),
  };
  const parts1: Record<'a' | 'b' | 'c', Measured[]> = { a: [], b: [], c: [] };
  for (const mode of ['a', 'b', 'c'] as const) await closedLoop([one[mode]], { warmMs: T.warm1, measureMs: 0, maxTurns: MAX_TURNS_1 });
  for (let round1 = 0; round1 < T.rounds1; round1++) {
    for (const mode of ['a', 'b', 'c'] as const) {
      const run = () => closedLoop([one[mode]], { warmMs: 200, measureMs: T.measure1, maxTurns: MAX_TURNS_1, watch: watch[mode] });
      parts1[mode].push(await (mode === 'b' ? inWindow(run) : run()));
    }
  }
  await one.a.close();
  const runs1 = { a: figures('a', 1, parts1.a), b: figures('b', 1, parts1.b), c: figures('c', 1, parts1.c) };

  const loop200 = { warmMs: T.warm200, measureMs: T.measure200, maxTurns: MAX_TURNS_200 };
  log(`${MANY} concurrent conversations: (a) direct`);
  const direct = await mapLimit(times(MANY), 20, () => DirectConversation.open(urls.engine));
  const a200 = figures('a', MANY, [await closedLoop(direct, { ...loop200, watch: watch.a })]);
  await Promise.all(direct.map((d) => d.close()));
  log(`${MANY} concurrent conversations: (b) gateway`);
  const b200 = figures('b', MANY, [await inWindow(() => closedLoop(idle, { ...loop200, watch: watch.b }))]);
  log(`${MANY} concurrent conversations: (c) per-turn sockets`);
  const perTurnConvs = await mapLimit(times(MANY), 20, () => RestConversation.start(poolC));
  const c200 = figures('c', MANY, [await closedLoop(perTurnConvs, { ...loop200, watch: watch.c })]);

  await Promise.allSettled([poolB.close(), poolC.close()]);
  await stopChild(gateway, 30_000);
  await Promise.all([stopChild(perTurn), stopChild(sims)]);

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
    startup_ms: median(startup),
  };
  const met = {
    overhead_p50_ms: result.overhead_p50_ms <= TARGETS.overhead_p50_ms,
    overhead_p99_ms: result.overhead_p99_ms <= TARGETS.overhead_p99_ms,
    throughput_ratio_200: result.throughput_ratio_200 >= TARGETS.throughput_ratio_200,
    rss_kib_per_conversation: result.rss_kib_per_conversation <= TARGETS.rss_kib_per_conversation,
    startup_ms: result.startup_ms < TARGETS.startup_ms,
  };
  const runs: RunFigures[] = [runs1.a, runs1.b, runs1.c, a200, b200, c200];
  const host = machine();

  const label = { a: '(a) engine socket, direct', b: '(b) gateway REST', c: '(c) per-turn socket gateway' };
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const ok = (pass: boolean) => (pass ? 'ok' : 'MISSED');
  const cpu = (r: RunFigures) =>
    ['client', 'gateway', 'sims'].map((k) => pad(r.cpu_us_per_turn[k] === undefined ? '-' : r.cpu_us_per_turn[k]!, 6)).join('');
  const out = [
    `agent-test-gateway bench — ${host.nproc} CPUs (${host.cpu}), node ${host.node}${CPU_PROF ? ' — PROFILED: figures distorted' : ''}${QUICK ? ' — QUICK' : ''}`,
    '',
    `${''.padEnd(30)}${''.padStart(6)}${''.padStart(8)}${''.padStart(9)}${''.padStart(10)}${''.padStart(36)}   CPU µs per turn`,
    `${'mode'.padEnd(30)}${pad('convs', 6)}${pad('turns', 8)}${pad('seconds', 9)}${pad('turns/s', 10)}${pad('p50 ms', 9)}${pad('p90 ms', 9)}${pad('p99 ms', 9)}${pad('max ms', 9)}  client gatew.  sims`,
    ...runs.map(
      (r) =>
        `${label[r.mode].padEnd(30)}${pad(r.conversations, 6)}${pad(r.turns, 8)}${pad(r.seconds.toFixed(2), 9)}${pad(r.turns_per_s.toFixed(0), 10)}${pad(r.p50_ms.toFixed(3), 9)}${pad(r.p90_ms.toFixed(3), 9)}${pad(r.p99_ms.toFixed(3), 9)}${pad(r.max_ms.toFixed(2), 9)}  ${cpu(r)}`,
    ),
    '',
    `gateway added latency at 1 conversation (b − a)   p50 ${result.overhead_p50_ms.toFixed(3)} ms (target ≤ ${TARGETS.overhead_p50_ms}) ${ok(met.overhead_p50_ms)}`,
    `                                                  p99 ${result.overhead_p99_ms.toFixed(3)} ms (target ≤ ${TARGETS.overhead_p99_ms}) ${ok(met.overhead_p99_ms)}`,
    `throughput at ${MANY} conversations, b / a           ${result.throughput_ratio_200.toFixed(3)} (target ≥ ${TARGETS.throughput_ratio_200}) ${ok(met.throughput_ratio_200)}`,
    `socket per turn at ${MANY} conversations, c / b      ${result.per_turn_socket_ratio.toFixed(3)} (at 1 conversation: ${(runs1.c.turns_per_s / runs1.b.turns_per_s).toFixed(3)})`,
    `resident memory per open idle conversation       ${result.rss_kib_per_conversation.toFixed(1)} KiB (target ≤ ${TARGETS.rss_kib_per_conversation}) ${ok(met.rss_kib_per_conversation)}  [RSS ${Math.round(memBefore.rss_kib)} → ${Math.round(memAfter.rss_kib)} KiB; JS heap used ${heapPerConversation.toFixed(1)} KiB per conversation]`,
    `start-up, spawn → first 200 on /readyz           ${result.startup_ms} ms, median of [${startup.join(', ')}] (target < ${TARGETS.startup_ms}) ${ok(met.startup_ms)}`,
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  const raw = {
    targets: TARGETS,
    met,
    runs,
    memory: {
      conversations: MANY,
      before: memBefore,
      after: memAfter,
      heap_used_kib_per_conversation: round(heapPerConversation, 1),
    },
    startup_samples_ms: startup,
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
