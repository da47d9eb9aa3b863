// `npm run bench:ab -- A B [C …]`: the CPU per turn of two or more gateway builds at 200
// conversations, side by side in one run, for a change too small for `npm run bench` to show.
//
// Each argument is a gateway entry point: a build's `dist/server.js` (another checkout's, or
// this one's) or `bench/minimal-gateway.ts`, the yardstick. All of them run at once against one
// engine and platform simulator; their measured windows alternate (A B, B A, …) so that drift
// falls on all alike. With `taskset` (Linux), the gateways run on CPU 1 and the client and the
// simulators on CPU 0: on a 2-core machine, where the scheduler otherwise moves the three
// processes around, that takes most of the run-to-run spread out of the figure.
// Options: --rounds N (windows per gateway, default 6), --no-pin.
// Output: a table, then the last line of stdout is one JSON object.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import {
  closedLoop,
  freePort,
  gatewayEnv,
  installCleanup,
  log,
  mapLimit,
  median,
  newPool,
  RestConversation,
  round,
  startChild,
  stopChild,
  times,
  waitReady,
  type Child,
} from './lib.js';

const CONVERSATIONS = 200;
const WARM_MS = 3000;
const WINDOW_MS = 2500;

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at < 0 ? undefined : args.splice(at, 2)[1];
};
const rounds = Number(option('--rounds') ?? 6);
const noPin = args.includes('--no-pin');
const entries = args.filter((a) => a !== '--no-pin');
if (entries.length < 2 || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('usage: npm run bench:ab -- <gateway entry> <gateway entry> [...] [--rounds N] [--no-pin]\n');
  process.exit(2);
}

/** Read before this process is pinned: afterwards it would count the one CPU left to it. */
const CPUS = availableParallelism();

/** Pins a process and all its threads to one CPU, where taskset exists and there are two CPUs. */
function pin(pid: number, cpu: number): boolean {
  if (noPin || CPUS < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

interface Measured {
  entry: string;
  gateway: Child;
  conversations: RestConversation[];
  cpuUsPerTurn: number[];
  turnsPerS: number[];
}

installCleanup(60_000 + entries.length * (WARM_MS + rounds * (WINDOW_MS + 1000)) * 2);
const pinned = pin(process.pid, 0);
const sims = startChild('sims', ['--import', 'tsx', 'bench/sims-process.ts'], {});
const urls = JSON.parse(await sims.nextLine('{', 30_000)) as { engine: string; platform: string };
pin(sims.proc.pid!, 0);

const gateways: Measured[] = [];
for (const entry of entries) {
  const port = await freePort();
  const script = resolve(entry);
  const gateway = startChild(entry, [...(script.endsWith('.ts') ? ['--import', 'tsx'] : []), script], gatewayEnv(urls, port));
  const url = `http://127.0.0.1:${port}`;
  await waitReady(gateway, url, performance.now(), 30_000);
  pin(gateway.proc.pid!, 1);
  const pool = newPool(url);
  const conversations = await mapLimit(times(CONVERSATIONS), 20, () => RestConversation.start(pool));
  log(`${entry}: warming up`);
  await closedLoop(conversations, { warmMs: WARM_MS, measureMs: 0, maxTurns: Number.MAX_SAFE_INTEGER });
  gateways.push({ entry, gateway, conversations, cpuUsPerTurn: [], turnsPerS: [] });
}

for (let r = 0; r < rounds; r++) {
  for (const g of r % 2 === 0 ? gateways : [...gateways].reverse()) {
    const m = await closedLoop(g.conversations, {
      warmMs: 300,
      measureMs: WINDOW_MS,
      maxTurns: Number.MAX_SAFE_INTEGER,
      watch: { gateway: g.gateway.proc.pid! },
    });
    g.cpuUsPerTurn.push(round((m.cpuMs.gateway! * 1000) / m.turns, 1));
    g.turnsPerS.push(Math.round(m.turns / m.seconds));
  }
  log(`round ${r + 1} of ${rounds}`);
}
for (const g of gateways) await stopChild(g.gateway, 10_000);
await stopChild(sims);

const results = gateways.map((g) => ({
  entry: g.entry,
  cpu_us_per_turn: median(g.cpuUsPerTurn),
  turns_per_s: median(g.turnsPerS),
  windows_cpu_us_per_turn: g.cpuUsPerTurn,
}));
const width = Math.max(...entries.map((e) => e.length));
process.stdout.write(
  [
    `gateway CPU per turn at ${CONVERSATIONS} conversations, median of ${rounds} windows of ${WINDOW_MS} ms` +
      `${pinned ? ' (gateways on CPU 1, client and simulators on CPU 0)' : ''}`,
    ...results.map(
      (r) =>
        `${r.entry.padEnd(width)}  ${r.cpu_us_per_turn.toFixed(1).padStart(6)} µs  ${String(r.turns_per_s).padStart(6)} turns/s  ` +
        `[${r.windows_cpu_us_per_turn.join(' ')}]`,
    ),
    JSON.stringify({ conversations: CONVERSATIONS, rounds, pinned, results }),
    '',
  ].join('\n'),
);
process.exit(0);
