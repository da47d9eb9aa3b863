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

export function prepareRun(ctx: RunContext, suite: Suite<HttpMemory>): RunState {
  const runId = randomUUID();
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
    { event: 'run_started', run_id: runId, agent: ctx.access.agentKey, conversations: suite.conversations.length, repeat: suite.repeat },
    'suite run started',
  );
  return {
    runId,
    runLabel: suite.runLabel ?? `run-${runId.slice(0, 8)}`,
    seed: suite.seed ?? randomInt(MAX_DRAWN_SEED),
    startedAt: Date.now(),
    suite,
    groups,
    memory: blankMemoryReport(suite.memory),
    notes: [],
  };
}
