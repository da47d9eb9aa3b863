import { isGatewayError } from '../../errors.js';
import type { MemoryExpect } from '../spec/format.js';
import { unjudged, type AttemptMemoryReport, type CriterionResult, type ExpectationResult } from '../report/run-report.js';
import { seconds } from '../report/memory-wording.js';
import { CANCELLED, sleep } from './cancellation.js';
import type { RunContext } from './context.js';
import { quote } from './expectations.js';
import type { AttemptError } from './model-calls.js';

// `expect.memory`: what a conversation left in the simulated user's memory. The units before the
// conversation are read first; after its plain close the memory is polled until the units it
// added appear and stop changing (the engine aggregates a session about 30 s after its close),
// then the checks run over the difference. The engine's answer is untrusted: a read that fails, or
// an answer that is not a list of JSON objects, fails this attempt's checks with the reason.

type Unit = Record<string, unknown>;

/** The units a memory read found, or why there are none. */
export type MemoryRead = { units: Unit[]; error?: undefined } | { units?: undefined; error: AttemptError };

/** The same JSON whatever the order of an object's keys: units are compared by content. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Units after less units before (`added`), and before less after (`removed`), counting duplicates. */
export function diffUnits(before: Unit[], after: Unit[]): { added: Unit[]; removed: Unit[] } {
  const left = new Map<string, Unit[]>();
  for (const unit of before) {
    const key = canonical(unit);
    left.set(key, [...(left.get(key) ?? []), unit]);
  }
  const added: Unit[] = [];
  for (const unit of after) {
    const same = left.get(canonical(unit));
    if (same !== undefined && same.length > 0) same.shift();
    else added.push(unit);
  }
  return { added, removed: [...left.values()].flat() };
}

/**
 * The simulated user's units now. A device that never connected has no engine user and no
 * memory yet (its first conversation creates both): none.
 */
export async function readUnits(ctx: RunContext, deviceRef: string): Promise<MemoryRead> {
  try {
    const userId = await ctx.engine.deviceUser(deviceRef);
    return { units: await ctx.engine.readMemory(userId) };
  } catch (err) {
    if (isGatewayError(err) && err.code === 'device_not_found') return { units: [] };
    if (!isGatewayError(err)) ctx.log?.error({ err }, 'a memory read for memory checks failed');
    return {
      error: isGatewayError(err)
        ? { error: err.code, message: err.message }
        : { error: 'internal', message: 'The gateway failed while reading the memory; it has been logged.' },
    };
  }
}

/** `45 s`, `0.3 s`: a wait as the reports say it. */

/** How the memory looked at the end of the wait. */
export interface Settled {
  status: AttemptMemoryReport['status'];
  after: Unit[] | undefined;
  waitedMs: number;
  polls: number;
  error: MemoryRead['error'];
  notes: string[];
}

/**
 * Polls the memory every `pollMs` after the close, until the units differ from `before` and two
 * reads in a row agree, up to `waitMs`. A read that fails ends the wait (`unreadable`).
 */
export async function awaitAggregation(
  ctx: RunContext,
  deviceRef: string,
  before: Unit[],
  expect: Pick<MemoryExpect, 'waitMs'>,
): Promise<Settled> {
  const started = Date.now();
  const pollMs = ctx.config.memoryPollMs;
  let last: string | undefined;
  let after: Unit[] | undefined;
  let polls = 0;
  const settled = (status: Settled['status'], extra: Partial<Settled> = {}): Settled => ({
    status,
    after,
    waitedMs: Date.now() - started,
    polls,
    error: undefined,
    notes: [],
    ...extra,
  });
  for (;;) {
    const left = expect.waitMs - (Date.now() - started);
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left), ctx.signal);
    if (ctx.signal.aborted) return settled('not_checked', { notes: [`The memory was not checked: ${CANCELLED}.`] });
    const read = await readUnits(ctx, deviceRef);
    polls += 1;
    if (read.error !== undefined) return settled('unreadable', { error: read.error });
    after = read.units;
    const { added, removed } = diffUnits(before, after);
    const now = added.length + removed.length > 0 ? canonical(after) : undefined;
    if (now !== undefined && now === last) return settled('aggregated');
    last = now;
  }
  if (last === undefined) return settled('nothing_aggregated');
  return settled('aggregated', {
    notes: [`The memory was still changing when the wait of ${seconds(expect.waitMs)} ran out: the checks read its last state.`],
  });
}

const MAX_UNIT_QUOTE = 300;
const unitText = (unit: Unit): string => {
  const json = JSON.stringify(unit);
  return json.length > MAX_UNIT_QUOTE ? `${json.slice(0, MAX_UNIT_QUOTE)}…` : json;
};
const holds = (unit: Unit, text: string): boolean => JSON.stringify(unit).toLowerCase().includes(text.toLowerCase());
const units = (n: number): string => `${n} unit${n === 1 ? '' : 's'}`;

/** The deterministic checks over the added units, one `memory_contains` / `memory_not_contains` per text. */
function evaluateMemory(expect: MemoryExpect, added: Unit[]): ExpectationResult[] {
  const out: ExpectationResult[] = [];
  for (const text of expect.contains) {
    const unit = added.find((u) => holds(u, text));
    out.push({
      kind: 'memory_contains',
      expected: text,
      passed: unit !== undefined,
      evidence:
        unit !== undefined
          ? `the added unit ${unitText(unit)} holds ${quote(text)}`
          : `none of the ${units(added.length)} added holds ${quote(text)}`,
      actual: unit ?? null,
    });
  }
  for (const text of expect.notContains) {
    const unit = added.find((u) => holds(u, text));
    out.push({
      kind: 'memory_not_contains',
      expected: text,
      passed: unit === undefined,
      evidence:
        unit === undefined
          ? `none of the ${units(added.length)} added holds ${quote(text)}`
          : `the added unit ${unitText(unit)} holds ${quote(text)}`,
      actual: unit ?? null,
    });
  }
  const count = added.length;
  if (expect.addedAtLeast !== undefined) {
    const passed = count >= expect.addedAtLeast;
    const evidence = `${units(count)} added${passed ? '' : `, fewer than ${expect.addedAtLeast}`}`;
    out.push({ kind: 'memory_added_at_least', expected: expect.addedAtLeast, passed, evidence, actual: count });
  }
  if (expect.addedAtMost !== undefined) {
    const passed = count <= expect.addedAtMost;
    const evidence = `${units(count)} added${passed ? '' : `, more than ${expect.addedAtMost}`}`;
    out.push({ kind: 'memory_added_at_most', expected: expect.addedAtMost, passed, evidence, actual: count });
  }
  return out;
}

/** Memory that could not be checked (nothing aggregated, unreadable): an implicit failure first, then every check failed with why. */
function failMemory(expect: MemoryExpect, why: string): ExpectationResult[] {
  return [
    {
      kind: 'memory_aggregated',
      expected: `the memory changes within ${seconds(expect.waitMs)}`,
      passed: false,
      evidence: why,
      actual: null,
    },
    ...evaluateMemory(expect, []).map((e) => ({ ...e, passed: false, evidence: `not met: ${why}`, actual: null })),
  ];
}

/** Listed, unevaluated: the conversation did not run, or the caller hung up. */
export function uncheckedMemory(expect: MemoryExpect, why: string): AttemptMemoryReport {
  return {
    status: 'not_checked',
    waited_ms: 0,
    polls: 0,
    units_before: null,
    units_after: null,
    added: [],
    removed: [],
    expectations: evaluateMemory(expect, []).map((e) => ({ ...e, passed: null, evidence: `not evaluated: ${why}`, actual: null })),
    criteria: expect.criteria.map((c) => unjudged(c, why)),
    error: null,
    notes: [],
  };
}

/** Rules on memory criteria over the added and removed units (and the attempt's transcript). */
export type MemoryJudge = (criteria: MemoryExpect['criteria'], memory: { added: Unit[]; removed: Unit[] }) => Promise<CriterionResult[]>;

/**
 * Waits for the engine to aggregate the conversation and checks what it added, from `before`
 * (the units read before the conversation, or why they could not be).
 */
export async function checkMemory(
  ctx: RunContext,
  deviceRef: string,
  expect: MemoryExpect,
  before: MemoryRead,
  judge: MemoryJudge,
): Promise<AttemptMemoryReport> {
  const base = before.units ?? [];
  const settled: Settled =
    before.error !== undefined
      ? { status: 'unreadable', after: undefined, waitedMs: 0, polls: 0, error: before.error, notes: [] }
      : await awaitAggregation(ctx, deviceRef, base, expect);
  const report: AttemptMemoryReport = {
    status: settled.status,
    waited_ms: settled.waitedMs,
    polls: settled.polls,
    units_before: before.units === undefined ? null : base.length,
    units_after: settled.after === undefined ? null : settled.after.length,
    added: [],
    removed: [],
    expectations: [],
    criteria: [],
    error: settled.error ?? null,
    notes: settled.notes,
  };
  if (settled.status === 'not_checked') return { ...uncheckedMemory(expect, CANCELLED), notes: settled.notes };
  if (settled.status !== 'aggregated') {
    const why =
      settled.status === 'nothing_aggregated'
        ? `nothing was aggregated within ${seconds(expect.waitMs)}`
        : `the memory could not be read: ${settled.error!.message}`;
    report.expectations = failMemory(expect, why);
    report.criteria = expect.criteria.map((c) => unjudged(c, why));
    return report;
  }
  const diff = diffUnits(base, settled.after!);
  report.added = diff.added;
  report.removed = diff.removed;
  report.expectations = evaluateMemory(expect, diff.added);
  if (expect.criteria.length > 0) report.criteria = await judge(expect.criteria, diff);
  return report;
}
