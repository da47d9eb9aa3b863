/**
 * Real gateway processes (src/server.ts, as `npm start` runs it) that are peers of each other,
 * and Debian's nginx in front of them: one listener hashing on the Authorization header as the
 * chart's ingress does, one plain round robin.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startEngineSimulator, type EngineSimulator } from '../../src/simulators/engine.js';
import { startPlatformSimulator } from '../../src/simulators/platform.js';
import { demoWorld } from '../../src/simulators/world.js';
import { freePort } from './http.js';
import { PEER_SECRET } from './peers.js';
import { waitUntilReady } from './server.js';
import { childEnv } from './stack.js';
import { scaled } from './time.js';
import { toolPath } from './tools.js';

export interface Pod {
  port: number;
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

/**
 * A pod on `env.HOST` (default 127.0.0.1: another loopback address, 127.0.0.2, makes calls between
 * pods arrive from 127.0.0.1); `nodeArgs` go to its node before the service (flags, preloads).
 */
function spawnPod(port: number, env: Record<string, string>, nodeArgs: string[] = []): Pod {
  const host = env.HOST ?? '127.0.0.1';
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/server.ts'], {
    env: childEnv({ PORT: String(port), HOST: host, LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { port, url: `http://${host}:${port}`, child, exited, output: () => output };
}

/** Spawns a pod and waits until it is ready; `started` learns of it at once, so a teardown can stop it. */
export async function startPod(
  port: number,
  env: Record<string, string>,
  started: (pod: Pod) => void,
  nodeArgs: string[] = [],
): Promise<Pod> {
  const pod = spawnPod(port, env, nodeArgs);
  started(pod);
  await Promise.race([
    // A loaded machine starts tsx slowly (waitUntilReady scales this by TEST_TIME_SCALE).
    waitUntilReady(pod.url, 60_000),
    pod.exited.then((code) => {
      throw new Error(`the gateway exited (${code}) before it was ready:\n${pod.output()}`);
    }),
  ]);
  return pod;
}

export interface Nginx {
  hashed: string;
  roundRobin: string;
  /** nginx's error log so far: why it answered a 502, if it did. */
  errors(): string;
  /** Takes a pod out of both upstreams or back in, as endpoints do when a pod stops or becomes ready. */
  route(port: number, on: boolean): Promise<void>;
  stop(): Promise<void>;
}

export async function startNginx(podPorts: number[]): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'agw-nginx-'));
  const [hashed, roundRobin] = [await freePort(), await freePort()];
  const down = new Set<number>();
  const servers = () => podPorts.map((p) => `server 127.0.0.1:${p}${down.has(p) ? ' down' : ''};`).join(' ');
  const location = (upstream: string) => `
    location / {
      proxy_pass http://${upstream};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 30s;
    }`;
  const writeConfig = () =>
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream hashed { hash $http_authorization consistent; ${servers()} }
  upstream round_robin { ${servers()} }
  server { listen 127.0.0.1:${hashed}; ${location('hashed')} }
  server { listen 127.0.0.1:${roundRobin}; ${location('round_robin')} }
}
`,
    );
  writeConfig();
  const child = spawn(toolPath('nginx') ?? '/usr/sbin/nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const workers = (): string[] =>
    readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8')
      .split(' ')
      .filter((pid) => pid.trim() !== '');
  const until = Date.now() + scaled(10_000);
  for (;;) {
    try {
      const res = await request(`http://127.0.0.1:${roundRobin}/healthz`);
      await res.body.text();
      break;
    } catch {
      if (Date.now() > until) throw new Error('nginx did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    hashed: `http://127.0.0.1:${hashed}`,
    roundRobin: `http://127.0.0.1:${roundRobin}`,
    errors: () => readFileSync(join(dir, 'error.log'), 'utf8'),
    async route(port, on) {
      if (on) down.delete(port);
      else down.add(port);
      writeConfig();
      // Reloaded once every worker of the old configuration is gone (having finished its calls):
      // what a pod's preStop sleep waits for in a cluster.
      const old = workers();
      child.kill('SIGHUP');
      const until = Date.now() + scaled(20_000);
      while (workers().some((pid) => old.includes(pid)) || workers().length === 0) {
        if (Date.now() > until) throw new Error('nginx did not reload');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async stop() {
      child.kill('SIGQUIT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A run pod's settings: its release's `peers`, a silent holder's runs taken over within about a second, a busy machine's budgets. */
function runPodEnv(o: { engine: string; platform: string; peers: string[]; env: Record<string, string> }): Record<string, string> {
  return {
    PROMETHIST_MCP_ENGINE_URL: o.engine,
    PROMETHIST_PLATFORM_URL: o.platform,
    PEERS: o.peers.join(','),
    PEER_SECRET,
    PEER_TIMEOUT_MS: String(scaled(1000)),
    RUN_TAKEOVER_MS: String(scaled(1000)),
    TURN_BUDGET_MS: String(scaled(20_000)),
    ENGINE_CONNECT_TIMEOUT_MS: String(scaled(20_000)),
    PLATFORM_TIMEOUT_MS: String(scaled(10_000)),
    AUTH_CACHE_TTL_MS: '60000',
    ...o.env,
  };
}

/** The engine and platform simulators real pods run against, stopped with the test after every pod it spawned. */
export async function startRunSimulators(t: { teardown(fn: () => unknown): void }): Promise<{
  engine: EngineSimulator;
  spawned: Pod[];
  /** The environment of a pod of a release whose pods are `peers`. */
  podEnv: (peers: string[], env?: Record<string, string>) => Record<string, string>;
}> {
  const world = demoWorld();
  const engine = await startEngineSimulator({ world, sessionEndDelayMs: 50 });
  const platform = await startPlatformSimulator({ world });
  const spawned: Pod[] = [];
  t.teardown(async () => {
    for (const pod of spawned) pod.child.kill('SIGKILL');
    await engine.close();
    await platform.close();
  });
  const podEnv = (peers: string[], env: Record<string, string> = {}) =>
    runPodEnv({ engine: engine.url, platform: platform.url, peers, env });
  return { engine, spawned, podEnv };
}

/**
 * Three real gateway processes of one release (PEERS), over the engine and platform simulators,
 * with the budgets a busy machine needs and a sibling taking a silent holder's runs over within
 * about a second; every process and simulator stops with the test. `env` adds to (or overrides) it.
 */
export async function startRunPods(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string> = {},
): Promise<{ pods: Pod[]; ports: number[] }> {
  const { spawned, podEnv } = await startRunSimulators(t);
  const ports = [await freePort(), await freePort(), await freePort()];
  const environment = podEnv(
    ports.map((p) => `127.0.0.1:${p}`),
    env,
  );
  const pods = await Promise.all(ports.map((port) => startPod(port, environment, (pod) => spawned.push(pod))));
  return { pods, ports };
}

/**
 * Gateway processes of one release listed in `PEERS` (`listed` addresses, of which the first `up`
 * are started), each over an engine simulator of its own so that a test counts the engine
 * sessions each pod opened; the platform simulator is shared. `env` adds to (or overrides) the
 * settings of startRunPods.
 */
export async function startCountedPods(
  t: { teardown(fn: () => unknown): void },
  opts: { listed: number; up: number; env?: Record<string, string> },
): Promise<{ pods: Pod[]; engines: Array<Awaited<ReturnType<typeof startEngineSimulator>>>; ports: number[] }> {
  const world = demoWorld();
  const platform = await startPlatformSimulator({ world });
  const ports: number[] = [];
  for (let i = 0; i < opts.listed; i++) ports.push(await freePort());
  const engines = await Promise.all(ports.slice(0, opts.up).map(() => startEngineSimulator({ world, sessionEndDelayMs: 50 })));
  const spawned: Pod[] = [];
  t.teardown(async () => {
    for (const pod of spawned) pod.child.kill('SIGKILL');
    for (const pod of spawned) pod.child.kill('SIGCONT');
    await Promise.all(engines.map((engine) => engine.close()));
    await platform.close();
  });
  const peers = ports.map((p) => `127.0.0.1:${p}`);
  const podEnv = (i: number) => runPodEnv({ engine: engines[i]!.url, platform: platform.url, peers, env: opts.env ?? {} });
  const pods = await Promise.all(ports.slice(0, opts.up).map((port, i) => startPod(port, podEnv(i), (pod) => spawned.push(pod))));
  return { pods, engines, ports };
}
