// The reliability suite's figures. Each test file counts what it did and, in its last test,
// records its figures for the run and prints them; the file of the run that finds every file's
// figures recorded prints the suite's line:
//   reliability: faults=N inputs=N conversations=N sockets_leaked=0 bad_input_5xx=0
// tap runs every file in a process of its own, so the figures meet in a directory per run.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Stack } from '../support/stack.js';
import { eventually } from '../support/stack.js';

export interface Figures {
  /** fault injections exercised (one per faulty request, handshake, socket or platform answer) */
  faults: number;
  /** hostile inputs sent (requests whose input the rules refuse or must pass through exactly) */
  inputs: number;
  /** engine sessions the gateway held (distinct session ids at the engine simulator) */
  conversations: number;
  /** engine sockets still open once the gateway holds none, or not matched by its registry */
  socketsLeaked: number;
  /** hostile inputs answered 5xx */
  badInput5xx: number;
}

export const newFigures = (): Figures => ({ faults: 0, inputs: 0, conversations: 0, socketsLeaked: 0, badInput5xx: 0 });

interface Commenter {
  comment(...args: unknown[]): void;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const RUNS = join(tmpdir(), 'agent-test-gateway-reliability');
/** One directory per `tap` run: every test file of a run is a child of the same runner process. */
const RUN = join(RUNS, `runner-${process.ppid}-${startTimeOf(process.ppid)}`);

function startTimeOf(pid: number): string {
  try {
    // Linux: field 22 of /proc/<pid>/stat, so that a reused pid is another run.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

const line = (f: Figures): string =>
  `faults=${f.faults} inputs=${f.inputs} conversations=${f.conversations} sockets_leaked=${f.socketsLeaked} bad_input_5xx=${f.badInput5xx}`;

const sum = (all: Figures[]): Figures =>
  all.reduce(
    (a, f) => ({
      faults: a.faults + f.faults,
      inputs: a.inputs + f.inputs,
      conversations: a.conversations + f.conversations,
      socketsLeaked: a.socketsLeaked + f.socketsLeaked,
      badInput5xx: a.badInput5xx + f.badInput5xx,
    }),
    newFigures(),
  );

/**
 * The end of one stack's life in a test: the gateway's registry and the engine's open sockets
 * must agree once things settle, and once the gateway has drained, the engine holds none. What
 * stays open counts as leaked; the sessions it held count as conversations.
 */
export async function settleStack(s: Stack, figures: Figures): Promise<{ leaked: number }> {
  let leaked = 0;
  try {
    await eventually(() => s.engine.openSockets() === s.app.conversationRegistry.stats.open, 3000);
  } catch {
    leaked += Math.abs(s.engine.openSockets() - s.app.conversationRegistry.stats.open);
  }
  await s.app.conversationRegistry.drain(0);
  try {
    await eventually(() => s.engine.openSockets() === 0, 3000);
  } catch {
    leaked += s.engine.openSockets();
  }
  const sessions = new Set(s.engine.record.connections.filter((c) => c.status === 101).map((c) => c.sessionId));
  figures.conversations += sessions.size;
  figures.socketsLeaked += leaked;
  return { leaked };
}

/** Records this file's figures for the run, prints them, and prints the suite's line when every file has reported. */
export function reportFigures(t: Commenter, testFile: string, figures: Figures): void {
  const name = basename(testFile).replace(/\.test\.ts$/, '');
  pruneOldRuns();
  mkdirSync(RUN, { recursive: true });
  writeFileSync(join(RUN, `${name}.json`), JSON.stringify(figures));
  t.comment(`reliability ${name}: ${line(figures)}`);

  const files = readdirSync(HERE)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => f.replace(/\.test\.ts$/, ''));
  const reported = files.filter((f) => readdirSync(RUN).includes(`${f}.json`));
  const all = sum(reported.map((f) => JSON.parse(readFileSync(join(RUN, `${f}.json`), 'utf8')) as Figures));
  if (reported.length < files.length) {
    t.comment(`reliability so far (${reported.length} of ${files.length} files: ${reported.join(', ')}): ${line(all)}`);
    return;
  }
  try {
    mkdirSync(join(RUN, 'printed')); // once per run, even if two files finish together
  } catch {
    return;
  }
  for (const f of reported) {
    const each = JSON.parse(readFileSync(join(RUN, `${f}.json`), 'utf8')) as Figures;
    t.comment(`  ${f.padEnd(16)} ${line(each)}`);
  }
  t.comment(`reliability: ${line(all)}`);
}

function pruneOldRuns(): void {
  try {
    for (const run of readdirSync(RUNS)) {
      const dir = join(RUNS, run);
      if (dir !== RUN && Date.now() - statSync(dir).mtimeMs > 6 * 3600_000) rmSync(dir, { recursive: true, force: true });
    }
  } catch {
    // nothing recorded yet
  }
}
