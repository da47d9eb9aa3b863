/** Several gateways built from app.ts in this process, peers of each other, on one engine and platform. */

import { createServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/ops/config.js';
import { startEngineSimulator, type EngineSimulator } from '../../src/simulators/engine.js';
import { startPlatformSimulator } from '../../src/simulators/platform.js';
import { demoWorld } from '../../src/simulators/world.js';
import { callAt, freePort, type Answer, type CallOptions } from './http.js';
import { scaledEnv } from './time.js';

export const PEER_SECRET = 'peer-secret-for-tests-0123456789';

export interface Pods {
  engine: EngineSimulator;
  apps: FastifyInstance[];
  urls: string[];
  call(pod: number, method: string, path: string, o?: CallOptions): Promise<Answer>;
  open(pod: number, token?: string, body?: Record<string, unknown>): Promise<string>;
}

export async function startPods(
  t: { teardown(fn: () => unknown): void },
  n: number,
  opts: { env?: Record<string, string>; extraPeers?: string[]; engine?: { replyDelayMs?: number } } = {},
): Promise<Pods> {
  const world = demoWorld();
  const engine = await startEngineSimulator({ world, sessionEndDelayMs: 50, ...opts.engine });
  const platform = await startPlatformSimulator({ world });
  const ports = await Promise.all(Array.from({ length: n }, freePort));
  const peers = [...ports.map((p) => `127.0.0.1:${p}`), ...(opts.extraPeers ?? [])].join(',');
  const apps: FastifyInstance[] = [];
  for (const port of ports) {
    const config = loadConfig({
      PROMETHIST_MCP_ENGINE_URL: engine.url,
      PROMETHIST_PLATFORM_URL: platform.url,
      // As on an idle machine, scaled by TEST_TIME_SCALE: a peer lookup between pods in this one
      // busy process must answer in time (PEER_TIMEOUT_MS, the service's default of 300 ms, scaled).
      TURN_BUDGET_MS: scaledEnv(2000),
      ENGINE_CONNECT_TIMEOUT_MS: scaledEnv(1000),
      PLATFORM_TIMEOUT_MS: scaledEnv(1000),
      PEER_TIMEOUT_MS: scaledEnv(300),
      PORT: String(port),
      PEERS: peers,
      PEER_SECRET,
      ...opts.env,
    });
    const app = await buildApp(config, { logger: false });
    await app.listen({ port, host: '127.0.0.1' });
    apps.push(app);
  }
  t.teardown(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await engine.close();
    await platform.close();
  });
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);

  const call: Pods['call'] = (pod, method, path, o) => callAt(urls[pod]!, method, path, o);

  const open: Pods['open'] = async (pod, token = 'demo-token', body = {}) => {
    const answer = await call(pod, 'POST', '/v1/agents/coach/conversations', { token, body });
    if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status}: ${answer.text}`);
    return answer.body.session_id as string;
  };
  return { engine, apps, urls, call, open };
}

/** A peer that accepts connections and never answers, on a free loopback port (closed at teardown). */
export async function startHangingPeer(t: { teardown(fn: () => unknown): void }): Promise<{ port: number; connections: () => number }> {
  const sockets = new Set<Socket>();
  const hanging = createServer((s) => sockets.add(s));
  const port = await freePort();
  await new Promise<void>((resolve) => hanging.listen(port, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    hanging.close();
  });
  return { port, connections: () => sockets.size };
}
