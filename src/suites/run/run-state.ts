import { randomInt, randomUUID } from 'node:crypto';
import type { RunContext } from './context.js';
import { blankMemoryReport } from './fixture.js';
import type { HttpMemory, Suite } from '../spec/format.js';
import type { MemoryReport } from '../report/run-report.js';

/** A prepared run: what every attempt of it shares. */
export interface RunState {
  runId: string;
  runLabel: string;
  /** the suite's seed, or one drawn for the run */
  seed: number;
  startedAt: number;
  suite: Suite<HttpMemory>;
  /**
   * Conversations sharing a device_ref, in the order written: one simulated user coming back,
   * run one after the other. A conversation on no device is a group of its own.
   */
  groups: number[][];
  /** the memory fixture's report, filled as attempts restore it */
  memory: MemoryReport | null;
  notes: string[];
}

const MAX_DRAWN_SEED = 2 ** 31 - 1;

/**
 * What names a run and fixes its draws, chosen once when it starts and kept when it moves to
 * another pod: its id, run label, seed and start time.
 */
export interface RunIdentity {
  runId: string;
  runLabel: string;
  seed: number;
  startedAt: number;
}

/** A run's identity: `id` is the run's, the suite's label and seed when it gives them. */
export const runIdentity = (suite: Suite<HttpMemory>, id: string): RunIdentity => ({
  runId: id,
  runLabel: suite.runLabel ?? `run-${id.slice(0, 8)}`,
  seed: suite.seed ?? randomInt(MAX_DRAWN_SEED),
  startedAt: Date.now(),
});

/**
 * A comparison's two runs: run labels `<label>:baseline` and `<label>:candidate` (`cmp-<8 hex
 * digits>` without a label), one seed for both sides.
 */
export function comparisonIdentities(suite: Suite<HttpMemory>, id: string): { baseline: RunIdentity; candidate: RunIdentity } {
  const stem = suite.runLabel ?? `cmp-${id.slice(0, 8)}`;
  const seed = suite.seed ?? randomInt(MAX_DRAWN_SEED);
  const startedAt = Date.now();
  return {
    baseline: { runId: randomUUID(), runLabel: `${stem}:baseline`, seed, startedAt },
    candidate: { runId: randomUUID(), runLabel: `${stem}:candidate`, seed, startedAt },
  };
}

/** What a run has gathered besides its attempts, kept when it moves: the fixture's report and the run's notes. */
export interface RunGathered {
  memory: MemoryReport | null;
  notes: string[];
}

export function prepareRun(ctx: RunContext, suite: Suite<HttpMemory>, identity: RunIdentity, gathered?: RunGathered): RunState {
  const { runId } = identity;
  const groups: number[][] = [];
  const byDevice = new Map<string, number[]>();
  suite.conversations.forEach((conv, i) => {
    const device = conv.connect.device_ref;
    if (device === undefined) return groups.push([i]);
    const group = byDevice.get(device);
    if (group !== undefined) return group.push(i);
    const fresh = [i];
    byDevice.set(device, fresh);
    return groups.push(fresh);
  });
  ctx.log?.info(
    {
      event: gathered === undefined ? 'run_started' : 'run_resumed',
      run_id: runId,
      agent: ctx.access.agentKey,
      conversations: suite.conversations.length,
      repeat: suite.repeat,
    },
    gathered === undefined ? 'suite run started' : 'suite run resumed',
  );
  return {
    ...identity,
    suite,
    groups,
    memory: gathered?.memory ?? blankMemoryReport(suite.memory),
    notes: gathered?.notes ?? [],
  };
}
