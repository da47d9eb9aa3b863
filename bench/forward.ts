// A forwarded turn's added latency over a local one: two gateway processes (dist/server.js),
// peers of each other; one conversation held by the first; its turns sent alternately to the
// first (local) and to the second (forwarded to the first), one at a time.
import { randomBytes } from 'node:crypto';
import { freePort, LINES, log, newPool, quantile, RestConversation, round, startChild, stopChild, waitReady } from './lib.js';

export interface ForwardFigures {
  forward_overhead_p50_ms: number;
  forward_overhead_p99_ms: number;
  local: { turns: number; p50_ms: number; p99_ms: number };
  forwarded: { turns: number; p50_ms: number; p99_ms: number };
}

export async function forwardOverhead(env: (port: number) => Record<string, string>, turns: number): Promise<ForwardFigures> {
  const ports = [await freePort(), await freePort()];
  const peers = { PEERS: ports.map((p) => `127.0.0.1:${p}`).join(','), PEER_SECRET: randomBytes(24).toString('hex') };
  const since = performance.now();
  const [holder, other] = ports.map((port, i) => startChild(`peer gateway ${i + 1}`, ['dist/server.js'], { ...env(port), ...peers }));
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  try {
    await Promise.all([waitReady(holder!, urls[0]!, since), waitReady(other!, urls[1]!, since)]);
    const pools = urls.map(newPool);
    const local = await RestConversation.start(pools[0]!);
    const forwarded = local.through(pools[1]!);
    const timed = async (conv: RestConversation, line: string, into: number[]) => {
      const start = performance.now();
      await conv.turn(line);
      into.push(performance.now() - start);
    };
    const warm: number[] = [];
    for (let i = 0; i < Math.min(200, turns); i++) await timed(i % 2 === 0 ? local : forwarded, LINES[i % LINES.length]!, warm);
    const samples = { local: [] as number[], forwarded: [] as number[] };
    for (let i = 0; i < turns; i++) {
      const line = LINES[i % LINES.length]!;
      // Alternating, so that drift and other work fall on both alike.
      await timed(local, line, samples.local);
      await timed(forwarded, line, samples.forwarded);
    }
    await local.close();
    await Promise.all(pools.map((p) => p.close()));
    const stats = (values: number[]) => {
      const sorted = Float64Array.from(values).sort();
      return { turns: values.length, p50_ms: round(quantile(sorted, 0.5)), p99_ms: round(quantile(sorted, 0.99)) };
    };
    const figures = { local: stats(samples.local), forwarded: stats(samples.forwarded) };
    log(`forwarded turn: p50 ${figures.forwarded.p50_ms} ms, local ${figures.local.p50_ms} ms`);
    return {
      forward_overhead_p50_ms: round(figures.forwarded.p50_ms - figures.local.p50_ms),
      forward_overhead_p99_ms: round(figures.forwarded.p99_ms - figures.local.p99_ms),
      ...figures,
    };
  } finally {
    await Promise.all([stopChild(holder!), stopChild(other!)]);
  }
}
