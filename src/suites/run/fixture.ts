import { isGatewayError } from '../../errors.js';
import { restoreMemory, snapshotMemory } from '../../memory/snapshots.js';
import type { AttemptError } from './model-calls.js';
import type { RunContext } from './context.js';
import type { HttpMemory, SuiteConversation } from '../spec/format.js';
import type { MemoryReport } from '../report/run-report.js';
import { warmUpDevice } from './conversation-calls.js';

// A suite's memory fixture: restored before each journey on its device (every round of its
// conversations starts from the same state; the later visits build on the earlier ones), and
// the snapshot read after the run.

const FIXTURE_NOTES = {
  aggregation:
    'The engine aggregates a session into memory about 30 s after its connection closes, so a snapshot taken sooner may not hold ' +
    "this run's conversations yet; set memory.wait_ms (e.g. 35000) to wait for them.",
  restoreClears:
    "Each restore was the engine's own delete-then-write: it cleared the simulated user's memory before loading the snapshot, " +
    'before every journey on that device (the first of its conversations, every round), not between its conversations.',
  warmUp:
    'The device had never connected, so the run first opened one engine session for it without sending a line (closed plainly, ' +
    "counted as one of the run's conversations) to create its engine user, which the restore needs.",
};

/** What failed, as a report says it: the gateway's own code and sentence, or an internal failure named by what it was doing. */
export const errorOf = (err: unknown, doing: 'running this turn' | 'restoring the memory fixture' | 'taking the snapshot'): AttemptError =>
  isGatewayError(err)
    ? { error: err.code, message: err.message }
    : { error: 'internal', message: `The gateway failed while ${doing}; it has been logged.` };

export const blankMemoryReport = (memory: HttpMemory | undefined): MemoryReport | null =>
  memory === undefined ? null : { device_ref: memory.deviceRef, restored: null, restores: 0, snapshot: null, error: null, notes: [] };

/** Whether an attempt of this conversation starts with the fixture restored. */
export const usesFixture = (memory: HttpMemory | undefined, conv: SuiteConversation | undefined): boolean =>
  memory?.restore !== undefined && (conv === undefined || conv.connect.device_ref === memory.deviceRef);

/** Restores the fixture (creating the device's engine user first when it never connected). */
export async function restoreFixture(
  ctx: RunContext,
  memory: HttpMemory,
  report: MemoryReport,
  connect: SuiteConversation['connect'] | undefined,
  runLabel: string,
): Promise<void> {
  const createDevice = async (): Promise<void> => {
    await warmUpDevice(ctx, { ...connect, device_ref: memory.deviceRef, run_label: runLabel });
    if (!report.notes.includes(FIXTURE_NOTES.warmUp)) report.notes.push(FIXTURE_NOTES.warmUp);
  };
  report.restored = (await restoreMemory(ctx.engine, memory.deviceRef, memory.restore!.units, createDevice)).restored;
  report.restores += 1;
  if (!report.notes.includes(FIXTURE_NOTES.restoreClears)) report.notes.push(FIXTURE_NOTES.restoreClears);
}

/** The snapshot after the run, when the suite asked for one; a failure is reported, not thrown. */
export async function takeSnapshotAfterRun(ctx: RunContext, memory: HttpMemory, report: MemoryReport, runId: string): Promise<void> {
  try {
    report.snapshot = await snapshotMemory(ctx.engine, memory.deviceRef);
    if (memory.waitMs < 30_000) report.notes.push(FIXTURE_NOTES.aggregation);
  } catch (err) {
    report.error = errorOf(err, 'taking the snapshot');
    report.notes.push(`The snapshot after the run could not be taken: ${report.error.message}`);
    if (!isGatewayError(err)) ctx.log?.error({ err, run_id: runId }, 'memory snapshot after the run failed');
  }
}
