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
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Pool, request } from 'undici';
import WebSocket from 'ws';
import { socketUrl } from '../src/engine/socket-url.js';
import { DEVICE_NAMESPACE, settingsFrom } from '../src/schemas/connect.js';
import { formatProfile, readProfile, summarizeProfile } from './profile-top.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CPU_PROF = process.argv.includes('--cpu-prof') || process.env.BENCH_CPU_PROF === '1';
const QUICK = process.argv.includes('--quick');
const PROFILE_DIR = join(ROOT, 'bench', 'profiles');

const AGENT = 'coach';
const TOKEN = 'demo-token';
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

/** The scripted conversation: ordinary lines, one with a tool call, one with an interactive element. */
const LINES = [
  'Hello there',
  'Where is my order 1234?',
  'What size should I take?',
  'Can you tell me more about that?',
  'I see, and what else?',
  'Thanks, that helps',
];

const TARGETS = {
  overhead_p50_ms: 0.5,
  overhead_p99_ms: 3,
  throughput_ratio_200: 0.5,
  rss_kib_per_conversation: 64,
  startup_ms: 1000,
};

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

// ---------------------------------------------------------------- child processes

interface Child {
  name: string;
  proc: ChildProcess;
  exited: Promise<number | null>;
  /** The last lines it wrote, for an error message. */
  tail: string[];
  /** Resolves with the next stdout/stderr line starting with `prefix`. */
  nextLine(prefix: string, timeoutMs: number): Promise<string>;
}

const children = new Set<Child>();

function killAll(signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const child of children) if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill(signal);
}
process.on('exit', () => killAll('SIGKILL'));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    killAll('SIGKILL');
    process.exit(130);
  });
}
const cap = setTimeout(() => {
  log(`time cap of ${TIME_CAP_MS / 1000} s reached: stopping`);
  killAll('SIGKILL');
  process.exit(2);
}, TIME_CAP_MS);
cap.unref();

function startChild(name: string, args: string[], env: Record<string, string>): Child {
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  const waiters = new Set<{ prefix: string; resolve: (line: string) => void }>();
  const onText = (buffered: { text: string }) => (chunk: Buffer) => {
    buffered.text += chunk.toString();
    let nl: number;
    while ((nl = buffered.text.indexOf('\n')) >= 0) {
      const line = buffered.text.slice(0, nl);
      buffered.text = buffered.text.slice(nl + 1);
      tail.push(line);
      if (tail.length > 40) tail.shift();
      for (const w of waiters) {
        if (line.startsWith(w.prefix)) {
          waiters.delete(w);
          w.resolve(line);
        }
      }
    }
  };
  proc.stdout!.on('data', onText({ text: '' }));
  proc.stderr!.on('data', onText({ text: '' }));
  proc.stdin!.on('error', () => {});
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const child: Child = {
    name,
    proc,
    exited,
    tail,
    nextLine(prefix, timeoutMs) {
      return new Promise((resolve, reject) => {
        const w = { prefix, resolve };
        waiters.add(w);
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`${name}: no "${prefix}" line within ${timeoutMs} ms; it wrote:\n${tail.join('\n')}`));
        }, timeoutMs);
        void exited.then(() => {
          if (!waiters.delete(w)) return;
          clearTimeout(timer);
          reject(new Error(`${name} exited; it wrote:\n${tail.join('\n')}`));
        });
        const done = w.resolve;
        w.resolve = (line) => {
          clearTimeout(timer);
          done(line);
        };
      });
    },
  };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

async function stopChild(child: Child, timeoutMs = 10_000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const stopped = await Promise.race([child.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
  if (!stopped) {
    log(`${child.name} did not stop within ${timeoutMs} ms: killing it`);
    child.proc.kill('SIGKILL');
    await child.exited;
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Milliseconds from `since` to the first 200 on /readyz. */
async function waitReady(child: Child, url: string, since: number, timeoutMs = 15_000): Promise<number> {
  const deadline = since + timeoutMs;
  for (;;) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${child.name} exited before it was ready; it wrote:\n${child.tail.join('\n')}`);
    }
    try {
      const res = await request(`${url}/readyz`, { headersTimeout: 1_000, bodyTimeout: 1_000 });
      const at = performance.now();
      await res.body.dump();
      if (res.statusCode === 200) return at - since;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) throw new Error(`${child.name} not ready within ${timeoutMs} ms:\n${child.tail.join('\n')}`);
    await sleep(2);
  }
}

// ---------------------------------------------------------------- clients

interface Conversation {
  turn(line: string): Promise<void>;
  close(): Promise<void>;
}

/** (a) The gateway's own query, straight to the engine socket: a line out, elements in until `exit`. */
class DirectConversation implements Conversation {
  readonly #ws: WebSocket;
  #waiting: { resolve: () => void; reject: (err: Error) => void } | undefined;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('message', (data) => {
      const element = JSON.parse(data.toString()) as { type?: unknown; code?: unknown };
      if (element.type === 'exit') {
        const w = this.#waiting;
        this.#waiting = undefined;
        w?.resolve();
      } else if (element.type === 'error') {
        this.#waiting?.reject(new Error(`engine error ${String(element.code)}`));
      }
    });
    ws.on('close', (code) => this.#waiting?.reject(new Error(`engine closed the socket (${code})`)));
    ws.on('error', (err) => this.#waiting?.reject(err));
  }

  static async open(engineUrl: string): Promise<DirectConversation> {
    const settings = settingsFrom({}, () => `${DEVICE_NAMESPACE}${randomUUID()}`);
    const ws = new WebSocket(socketUrl(engineUrl, AGENT, settings), { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('error', reject);
      ws.once('message', (data) => {
        const element = JSON.parse(data.toString()) as { type?: unknown };
        if (element.type === 'session') resolve();
        else reject(new Error(`expected the session element, got ${data.toString()}`));
      });
    });
    ws.removeAllListeners();
    const conv = new DirectConversation(ws);
    await conv.turn('#intro'); // as the gateway's start route does
    return conv;
  }

  turn(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#ws.send(line);
    });
  }

  async close(): Promise<void> {
    this.#waiting = undefined;
    this.#ws.close(1000);
  }
}

const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

/** (b) and (c): the REST routes over a keep-alive pool; every answer is read and parsed, as a client would. */
class RestConversation implements Conversation {
  private constructor(
    readonly pool: Pool,
    readonly sessionId: string,
  ) {}

  static async start(pool: Pool): Promise<RestConversation> {
    const res = await pool.request({ method: 'POST', path: `/v1/agents/${AGENT}/conversations`, headers: HEADERS, body: '{}' });
    const text = await res.body.text();
    if (res.statusCode !== 201) throw new Error(`start: HTTP ${res.statusCode}: ${text.slice(0, 300)}`);
    return new RestConversation(pool, (JSON.parse(text) as { session_id: string }).session_id);
  }

  async turn(line: string): Promise<void> {
    const res = await this.pool.request({
      method: 'POST',
      path: `/v1/agents/${AGENT}/conversations/${this.sessionId}/turns`,
      headers: HEADERS,
      body: JSON.stringify({ line }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`turn: HTTP ${res.statusCode}: ${text.slice(0, 300)}`);
    const outcome = (JSON.parse(text) as { turn?: { outcome?: unknown } }).turn?.outcome;
    if (outcome !== 'exit') throw new Error(`turn: outcome ${String(outcome)}`);
  }

  async close(): Promise<void> {
    const res = await this.pool.request({
      method: 'DELETE',
      path: `/v1/agents/${AGENT}/conversations/${this.sessionId}`,
      headers: { authorization: HEADERS.authorization },
    });
    await res.body.dump();
  }
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

const times = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

// ---------------------------------------------------------------- measuring

interface Measured {
  turns: number;
  seconds: number;
  samples: number[];
}

/**
 * Every conversation runs turn after turn (a closed loop). Turns that end within the warm-up are
 * not counted; turns that end within the measured window are, and give the throughput.
 */
async function closedLoop(convs: Conversation[], warmMs: number, measureMs: number, maxTurns: number): Promise<Measured> {
  const samples: number[] = [];
  const measureStart = performance.now() + warmMs;
  let measureEnd = measureStart + measureMs;
  let stop = false;
  let failure: Error | undefined;
  await Promise.all(
    convs.map(async (conv, i) => {
      let k = i;
      while (!stop) {
        const line = LINES[k++ % LINES.length]!;
        const started = performance.now();
        try {
          await conv.turn(line);
        } catch (err) {
          failure ??= err as Error;
          stop = true;
          return;
        }
        const ended = performance.now();
        if (ended < measureStart) continue;
        if (ended > measureEnd) {
          stop = true;
          return;
        }
        samples.push(ended - started);
        if (samples.length >= maxTurns) {
          measureEnd = ended;
          stop = true;
        }
      }
    }),
  );
  if (failure) throw failure;
  return { turns: samples.length, seconds: (measureEnd - measureStart) / 1000, samples };
}

interface RunFigures {
  mode: 'a' | 'b' | 'c';
  conversations: number;
  turns: number;
  seconds: number;
  turns_per_s: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
}

const quantile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

function figures(mode: RunFigures['mode'], conversations: number, parts: Measured[]): RunFigures {
  const all = Float64Array.from(parts.flatMap((p) => p.samples)).sort();
  const turns = parts.reduce((n, p) => n + p.turns, 0);
  const seconds = parts.reduce((n, p) => n + p.seconds, 0);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    mode,
    conversations,
    turns,
    seconds: r3(seconds),
    turns_per_s: Math.round((turns / seconds) * 10) / 10,
    p50_ms: r3(quantile(all, 0.5)),
    p90_ms: r3(quantile(all, 0.9)),
    p99_ms: r3(quantile(all, 0.99)),
    max_ms: r3(all[all.length - 1] ?? NaN),
  };
}

// ---------------------------------------------------------------- memory

function vmRssKiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function metricsRssKiB(url: string): Promise<number> {
  const res = await request(`${url}/metrics`);
  const text = await res.body.text();
  const match = /^agent_test_gateway_process_resident_memory_bytes\s+(\S+)/m.exec(text);
  if (!match) throw new Error('no process_resident_memory_bytes on /metrics');
  return Number(match[1]) / 1024;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface MemorySample {
  rss_kib: number;
  heap_used_kib: number;
  rss_samples_kib: number[];
}

/** After a settle delay: several samples, each straight after a full GC (the preload's SIGWINCH), median. */
async function memorySample(gateway: Child, url: string): Promise<MemorySample> {
  await sleep(T.settle);
  const rss: number[] = [];
  const heap: number[] = [];
  for (let i = 0; i < MEMORY_SAMPLES; i++) {
    const line = gateway.nextLine('BENCH_MEM ', 3_000);
    gateway.proc.kill('SIGWINCH');
    const mem = JSON.parse((await line).slice('BENCH_MEM '.length)) as { heapUsed: number };
    heap.push(mem.heapUsed / 1024);
    rss.push(vmRssKiB(gateway.proc.pid!) ?? (await metricsRssKiB(url)));
    await sleep(150);
  }
  return { rss_kib: median(rss), heap_used_kib: Math.round(median(heap)), rss_samples_kib: rss };
}

// ---------------------------------------------------------------- the run

function machine() {
  let cpu = 'unknown';
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpu;
  } catch {
    // not Linux
  }
  return { nproc: availableParallelism(), node: process.version, cpu };
}

async function main(): Promise<void> {
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
    NODE_ENV: 'production',
  });

  // Start-up: spawn → first 200 on /readyz, of `node dist/server.js` exactly as deployed.
  const startup: number[] = [];
  for (let i = 0; i < STARTUP_SAMPLES; i++) {
    const port = await freePort();
    const since = performance.now();
    const child = startChild('gateway (start-up)', ['dist/server.js'], gatewayEnv(port));
    startup.push(Math.round((await waitReady(child, `http://127.0.0.1:${port}`, since)) * 10) / 10);
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

  const poolOptions = { connections: 256, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 };
  const poolB = new Pool(gwUrl, poolOptions);
  const poolC = new Pool(ptUrl, poolOptions);

  // Memory per open idle conversation, on the fresh gateway: warm its code paths and caches
  // with conversations that are then closed, sample; open 200 and leave them idle, sample.
  log('memory: warming up');
  await mapLimit(times(20), 10, async () => {
    const conv = await RestConversation.start(poolB);
    for (const line of LINES.slice(0, 5)) await conv.turn(line);
    await conv.close();
  });
  const memBefore = await memorySample(gateway, gwUrl);
  log(`memory: opening ${MANY} idle conversations`);
  const idle = await mapLimit(times(MANY), 20, () => RestConversation.start(poolB));
  const memAfter = await memorySample(gateway, gwUrl);
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
  for (const mode of ['a', 'b', 'c'] as const) await closedLoop([one[mode]], T.warm1, 0, MAX_TURNS_1);
  for (let round = 0; round < T.rounds1; round++) {
    for (const mode of ['a', 'b', 'c'] as const) parts1[mode].push(await closedLoop([one[mode]], 200, T.measure1, MAX_TURNS_1));
  }
  await one.a.close();
  const runs1 = {
    a: figures('a', 1, parts1.a),
    b: figures('b', 1, parts1.b),
    c: figures('c', 1, parts1.c),
  };

  log(`${MANY} concurrent conversations: (a) direct`);
  const direct = await mapLimit(times(MANY), 20, () => DirectConversation.open(urls.engine));
  const a200 = figures('a', MANY, [await closedLoop(direct, T.warm200, T.measure200, MAX_TURNS_200)]);
  await Promise.all(direct.map((d) => d.close()));
  log(`${MANY} concurrent conversations: (b) gateway`);
  const b200 = figures('b', MANY, [await closedLoop(idle, T.warm200, T.measure200, MAX_TURNS_200)]);
  log(`${MANY} concurrent conversations: (c) per-turn sockets`);
  const perTurnConvs = await mapLimit(times(MANY), 20, () => RestConversation.start(poolC));
  const c200 = figures('c', MANY, [await closedLoop(perTurnConvs, T.warm200, T.measure200, MAX_TURNS_200)]);

  await Promise.allSettled([poolB.close(), poolC.close()]);
  await stopChild(gateway, 30_000);
  await Promise.all([stopChild(perTurn), stopChild(sims)]);

  let profile: ReturnType<typeof summarizeProfile> | undefined;
  if (CPU_PROF) {
    const file = readdirSync(PROFILE_DIR).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) log('no .cpuprofile was written');
    else {
      profile = summarizeProfile(readProfile(join(PROFILE_DIR, file)), 30);
      process.stdout.write(`gateway CPU profile (bench/profiles/${file}):\n${formatProfile(profile)}\n\n`);
    }
  }

  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const result = {
    overhead_p50_ms: r3(runs1.b.p50_ms - runs1.a.p50_ms),
    overhead_p99_ms: r3(runs1.b.p99_ms - runs1.a.p99_ms),
    throughput_ratio_200: r3(b200.turns_per_s / a200.turns_per_s),
    per_turn_socket_ratio: r3(c200.turns_per_s / b200.turns_per_s),
    rss_kib_per_conversation: Math.round(rssPerConversation * 10) / 10,
    startup_ms: median(startup),
  };
  const met = {
    overhead_p50_ms: result.overhead_p50_ms <= TARGETS.overhead_p50_ms,
    overhead_p99_ms: result.overhead_p99_ms <= TARGETS.overhead_p99_ms,
    throughput_ratio_200: result.throughput_ratio_200 >= TARGETS.throughput_ratio_200,
    rss_kib_per_conversation: result.rss_kib_per_conversation <= TARGETS.rss_kib_per_conversation,
    startup_ms: result.startup_ms < TARGETS.startup_ms,
  };
  const runs = [runs1.a, runs1.b, runs1.c, a200, b200, c200];
  const host = machine();

  const label = { a: '(a) engine socket, direct', b: '(b) gateway REST', c: '(c) per-turn socket gateway' };
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const ok = (pass: boolean) => (pass ? 'ok' : 'MISSED');
  const out = [
    `agent-test-gateway bench — ${host.nproc} CPUs (${host.cpu}), node ${host.node}${CPU_PROF ? ' — PROFILED: figures distorted' : ''}${QUICK ? ' — QUICK' : ''}`,
    '',
    `${'mode'.padEnd(30)}${pad('convs', 6)}${pad('turns', 8)}${pad('seconds', 9)}${pad('turns/s', 10)}${pad('p50 ms', 9)}${pad('p90 ms', 9)}${pad('p99 ms', 9)}${pad('max ms', 9)}`,
    ...runs.map(
      (r) =>
        `${label[r.mode].padEnd(30)}${pad(r.conversations, 6)}${pad(r.turns, 8)}${pad(r.seconds.toFixed(2), 9)}${pad(r.turns_per_s.toFixed(0), 10)}${pad(r.p50_ms.toFixed(3), 9)}${pad(r.p90_ms.toFixed(3), 9)}${pad(r.p99_ms.toFixed(3), 9)}${pad(r.max_ms.toFixed(2), 9)}`,
    ),
    '',
    `gateway added latency at 1 conversation (b − a)   p50 ${result.overhead_p50_ms.toFixed(3)} ms (target ≤ ${TARGETS.overhead_p50_ms}) ${ok(met.overhead_p50_ms)}`,
    `                                                  p99 ${result.overhead_p99_ms.toFixed(3)} ms (target ≤ ${TARGETS.overhead_p99_ms}) ${ok(met.overhead_p99_ms)}`,
    `throughput at ${MANY} conversations, b / a           ${result.throughput_ratio_200.toFixed(3)} (target ≥ ${TARGETS.throughput_ratio_200}) ${ok(met.throughput_ratio_200)}`,
    `socket per turn at ${MANY} conversations, c / b      ${result.per_turn_socket_ratio.toFixed(3)} (at 1 conversation: ${(runs1.c.turns_per_s / runs1.b.turns_per_s).toFixed(3)})`,
    `resident memory per open idle conversation       ${result.rss_kib_per_conversation.toFixed(1)} KiB (target ≤ ${TARGETS.rss_kib_per_conversation}) ${ok(met.rss_kib_per_conversation)}  [RSS ${Math.round(memBefore.rss_kib)} → ${Math.round(memAfter.rss_kib)} KiB, heap used ${heapPerConversation.toFixed(1)} KiB/conversation]`,
    `start-up, spawn → first 200 on /readyz           ${result.startup_ms} ms median of [${startup.join(', ')}] (target < ${TARGETS.startup_ms}) ${ok(met.startup_ms)}`,
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
      heap_used_kib_per_conversation: Math.round(heapPerConversation * 10) / 10,
    },
    startup_samples_ms: startup,
    per_turn_socket_ratio_1: r3(runs1.c.turns_per_s / runs1.b.turns_per_s),
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
