// The bench's pieces: child processes that cannot outlive it, the three kinds of client, the
// closed-loop driver with per-process CPU accounting, and memory sampling. bench/run.ts composes them.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import WebSocket from 'ws';
import { DEVICE_NAMESPACE, settingsFrom } from '../src/domain/vocabulary.js';
import { socketUrl } from '../src/engine/socket-url.js';
import { frameText } from '../src/http/ws-frames.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AGENT = 'coach';
const TOKEN = 'demo-token';

/** The scripted conversation: ordinary lines, one with a tool call, one with an interactive element. */
export const LINES = [
  'Hello there',
  'Where is my order 1234?',
  'What size should I take?',
  'Can you tell me more about that?',
  'I see, and what else?',
  'Thanks, that helps',
];

export const log = (message: string): void => {
  process.stderr.write(`bench: ${message}\n`);
};

/**
 * The gateway's environment in every bench: the simulators' URLs, quiet logs, an authorization
 * cache and limits that never get in the way, no idle close, no shutdown grace.
 */
export const gatewayEnv = (sims: { engine: string; platform: string }, port: number): Record<string, string> => ({
  PROMETHIST_MCP_ENGINE_URL: sims.engine,
  PROMETHIST_PLATFORM_URL: sims.platform,
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  AUTH_CACHE_TTL_MS: '3600000',
  MAX_CONVERSATIONS_PER_POD: '1000',
  MAX_CONVERSATIONS_PER_CALLER: '1000',
  IDLE_CLOSE_MS: '3600000',
  SHUTDOWN_GRACE_MS: '0',
});

// ---------------------------------------------------------------- child processes

export interface Child {
  name: string;
  proc: ChildProcess;
  exited: Promise<number | null>;
  /** The last lines it wrote, for an error message. */
  tail: string[];
  /** Resolves with the next stdout/stderr line starting with `prefix`. */
  nextLine(prefix: string, timeoutMs: number): Promise<string>;
}

const children = new Set<Child>();

function killAll(signal: NodeJS.Signals): void {
  for (const child of children) if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill(signal);
}

/** Every child dies with this process: on exit, on a signal, on an error, and at the time cap. */
export function installCleanup(timeCapMs: number): void {
  process.on('exit', () => killAll('SIGKILL'));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`);
      killAll('SIGKILL');
      process.exit(130);
    });
  }
  const cap = setTimeout(() => {
    log(`time cap of ${timeCapMs / 1000} s reached: stopping`);
    killAll('SIGKILL');
    process.exit(2);
  }, timeCapMs);
  cap.unref();
}

/** A node child in the package root; its stdin is a pipe whose end tells it we are gone. */
export function startChild(name: string, args: string[], env: Record<string, string>): Child {
  const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const waiters = new Set<{ prefix: string; resolve: (line: string) => void }>();
  const onText = () => {
    let buffered = '';
    return (chunk: Buffer) => {
      buffered += chunk.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
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
  };
  proc.stdout.on('data', onText());
  proc.stderr.on('data', onText());
  proc.stdin.on('error', () => {});
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const child: Child = {
    name,
    proc,
    exited,
    tail,
    nextLine(prefix, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`${name}: no "${prefix}" line within ${timeoutMs} ms; it wrote:\n${tail.join('\n')}`));
        }, timeoutMs);
        const w = {
          prefix,
          resolve: (line: string) => {
            clearTimeout(timer);
            resolve(line);
          },
        };
        waiters.add(w);
        void exited.then(() => {
          if (!waiters.delete(w)) return;
          clearTimeout(timer);
          reject(new Error(`${name} exited; it wrote:\n${tail.join('\n')}`));
        });
      });
    },
  };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

export async function stopChild(child: Child, timeoutMs = 10_000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const stopped = await Promise.race([child.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
  if (!stopped) {
    log(`${child.name} did not stop within ${timeoutMs} ms: killing it`);
    child.proc.kill('SIGKILL');
    await child.exited;
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Whether something accepts TCP connections on the port: a cheap probe, so polling does not slow a start. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Milliseconds from `since` (a performance.now()) to the first 200 on /readyz. */
export async function waitReady(child: Child, url: string, since: number, timeoutMs = 15_000): Promise<number> {
  const deadline = since + timeoutMs;
  const port = Number(new URL(url).port);
  for (;;) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${child.name} exited before it was ready; it wrote:\n${child.tail.join('\n')}`);
    }
    if (await accepts(port)) {
      try {
        const res = await request(`${url}/readyz`, { headersTimeout: 1_000, bodyTimeout: 1_000 });
        const at = performance.now();
        await res.body.dump();
        if (res.statusCode === 200) return at - since;
      } catch {
        // listening, not answering yet
      }
    }
    if (performance.now() > deadline) throw new Error(`${child.name} not ready within ${timeoutMs} ms:\n${child.tail.join('\n')}`);
    await sleep(3);
  }
}

// ---------------------------------------------------------------- clients

export interface Conversation {
  turn(line: string): Promise<void>;
  close(): Promise<void>;
}

/** (a) The gateway's own query, straight to the engine socket: a line out, elements in until `exit`. */
export class DirectConversation implements Conversation {
  readonly #ws: WebSocket;
  #waiting: { resolve: () => void; reject: (err: Error) => void } | undefined;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('message', (data) => {
      const element = JSON.parse(frameText(data)) as { type?: unknown; code?: unknown };
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
        const element = JSON.parse(frameText(data)) as { type?: unknown };
        if (element.type === 'session') resolve();
        else reject(new Error(`expected the session element, got ${frameText(data)}`));
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
export class RestConversation implements Conversation {
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

  /** The same conversation, its calls sent through another gateway (a peer of the one holding it). */
  through(pool: Pool): RestConversation {
    return new RestConversation(pool, this.sessionId);
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

export const newPool = (url: string): Pool =>
  new Pool(url, { connections: 256, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });

export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
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

export const times = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

// ---------------------------------------------------------------- CPU

/** CPU time (user + system) of a process so far, in ms; `self` for this one. */
function cpuMs(pid: number | 'self'): number | undefined {
  if (pid === 'self') {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

const cpuSnapshot = (pids: Record<string, number | 'self'>): Record<string, number | undefined> =>
  Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));

// ---------------------------------------------------------------- measuring

export interface Measured {
  turns: number;
  seconds: number;
  samples: number[];
  /** CPU ms each watched process spent in the measured window. */
  cpuMs: Record<string, number>;
}

export interface LoopOptions {
  warmMs: number;
  measureMs: number;
  maxTurns: number;
  /** Processes whose CPU time is accounted over the measured window. */
  watch?: Record<string, number | 'self'>;
}

/**
 * Every conversation runs turn after turn (a closed loop). Turns that end within the warm-up are
 * not counted; turns that end within the measured window are, and give the throughput.
 */
export async function closedLoop(convs: Conversation[], opts: LoopOptions): Promise<Measured> {
  const samples: number[] = [];
  const measureStart = performance.now() + opts.warmMs;
  let measureEnd = measureStart + opts.measureMs;
  const watch = opts.watch ?? {};
  let cpuStart: Record<string, number | undefined> = {};
  let cpuEnd: Record<string, number | undefined> | undefined;
  const startTimer = setTimeout(() => (cpuStart = cpuSnapshot(watch)), opts.warmMs);
  let stop = false;
  const halt = () => {
    if (stop) return;
    stop = true;
    cpuEnd = cpuSnapshot(watch);
  };
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
          halt();
          return;
        }
        const ended = performance.now();
        if (ended < measureStart) continue;
        if (ended > measureEnd) return halt();
        samples.push(ended - started);
        if (samples.length >= opts.maxTurns) {
          measureEnd = ended;
          halt();
        }
      }
    }),
  );
  clearTimeout(startTimer);
  if (failure) throw failure;
  const used: Record<string, number> = {};
  for (const name of Object.keys(watch)) {
    const from = cpuStart[name];
    const to = cpuEnd?.[name];
    if (from !== undefined && to !== undefined) used[name] = to - from;
  }
  return { turns: samples.length, seconds: Math.max(0, measureEnd - measureStart) / 1000, samples, cpuMs: used };
}

export interface RunFigures {
  mode: 'a' | 'b' | 'c';
  conversations: number;
  turns: number;
  seconds: number;
  turns_per_s: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  /** CPU µs per turn by process: client (this one), gateway, sims (engine + platform). */
  cpu_us_per_turn: Record<string, number>;
}

export const quantile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

export const round = (x: number, digits = 3): number => Math.round(x * 10 ** digits) / 10 ** digits;

export function figures(mode: RunFigures['mode'], conversations: number, parts: Measured[]): RunFigures {
  const all = Float64Array.from(parts.flatMap((p) => p.samples)).sort();
  const turns = parts.reduce((n, p) => n + p.turns, 0);
  const seconds = parts.reduce((n, p) => n + p.seconds, 0);
  const cpu: Record<string, number> = {};
  for (const part of parts) for (const [name, ms] of Object.entries(part.cpuMs)) cpu[name] = (cpu[name] ?? 0) + ms;
  return {
    mode,
    conversations,
    turns,
    seconds: round(seconds),
    turns_per_s: round(turns / seconds, 1),
    p50_ms: round(quantile(all, 0.5)),
    p90_ms: round(quantile(all, 0.9)),
    p99_ms: round(quantile(all, 0.99)),
    max_ms: round(all[all.length - 1] ?? NaN),
    cpu_us_per_turn: Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, Math.round((ms * 1000) / turns)])),
  };
}

// ---------------------------------------------------------------- memory

export function vmRssKiB(pid: number): number | undefined {
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
  const match = /^process_resident_memory_bytes\s+(\S+)/m.exec(text);
  if (!match) throw new Error('no process_resident_memory_bytes on /metrics');
  return Number(match[1]) / 1024;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export interface MemorySample {
  rss_kib: number;
  heap_used_kib: number;
  rss_samples_kib: number[];
}

/**
 * After a settle delay: several samples, each straight after a full GC (bench/gateway-preload.mjs
 * answers SIGWINCH with gc() and a BENCH_MEM line), median. VmRSS from /proc, else /metrics.
 */
export async function memorySample(gateway: Child, url: string, settleMs: number, samples: number): Promise<MemorySample> {
  await sleep(settleMs);
  const rss: number[] = [];
  const heap: number[] = [];
  for (let i = 0; i < samples; i++) {
    const line = gateway.nextLine('BENCH_MEM ', 3_000);
    gateway.proc.kill('SIGWINCH');
    const mem = JSON.parse((await line).slice('BENCH_MEM '.length)) as { heapUsed: number };
    heap.push(mem.heapUsed / 1024);
    rss.push(vmRssKiB(gateway.proc.pid!) ?? (await metricsRssKiB(url)));
    await sleep(150);
  }
  return { rss_kib: median(rss), heap_used_kib: Math.round(median(heap)), rss_samples_kib: rss };
}

/**
 * CPU ms the kernel charges a busy loop per ms of wall time, alone on the machine: 1 on a
 * dedicated core; less where the VM's accounting clock or the host's sharing says so. The CPU µs
 * per turn of the report are as charged: compare them with each other, not across machines.
 */
export function cpuCharge(ms = 300): number {
  const start = performance.now();
  const before = cpuMs('self')!;
  while (performance.now() - start < ms) {
    // busy
  }
  return round((cpuMs('self')! - before) / (performance.now() - start), 2);
}

export function machine(): { nproc: number; node: string; cpu: string } {
  let cpu = 'unknown';
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpu;
  } catch {
    // not Linux
  }
  return { nproc: availableParallelism(), node: process.version, cpu };
}
