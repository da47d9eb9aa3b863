import { randomUUID } from 'node:crypto';
import { runAttempt } from './attempt.js';
import type { RunContext } from './context.js';
import { comparisonReportOf, type ComparisonReport, type Side } from '../report/comparison.js';
import type { HttpMemory, Suite } from '../spec/format.js';
import type { AttemptReport } from '../report/run-report.js';
import { prepareRun } from './run-state.js';
import { groupUnits, restoreUnusedFixture, runReportOf, runUnits, saveAfterRun } from './runner.js';

const COMPARISON_NOTES = {
  fair:
    'Both sides ran the same scripted lines, simulated users, seed and memory fixture; their attempts were interleaved ' +
    '(baseline 1, candidate 1, baseline 2, …) so that any drift of the engine touched both alike.',
  usage: 'A comparison holds real engine sessions on both sides: they count towards usage like any other conversation.',
};

/**
 * Runs a suite against a baseline and a candidate revision, fairly: the same seed and run label
 * stem on both sides, the memory fixture restored before each attempt on either side, and every
 * attempt of the baseline followed by the same attempt of the candidate, one conversation's
 * attempts one after the other — a returning user's visits (a device group) as one journey per
 * side and attempt. Conversations run in parallel up to the suite's `concurrency`, both sides together.
 */
export async function compareSuite(sides: Record<Side, RunContext>, suite: Suite<HttpMemory>): Promise<ComparisonReport> {
  const id = randomUUID();
  const startedAt = Date.now();
  const stem = suite.runLabel ?? `cmp-${id.slice(0, 8)}`;
  const baseline = prepareRun(sides.baseline, { ...suite, runLabel: `${stem}:baseline` });
  const candidate = prepareRun(sides.candidate, { ...suite, runLabel: `${stem}:candidate`, seed: baseline.seed });
  const states = { baseline, candidate };
  const attempts: Record<Side, AttemptReport[][]> = {
    baseline: suite.conversations.map(() => []),
    candidate: suite.conversations.map(() => []),
  };
  for (const side of ['baseline', 'candidate'] as const) await restoreUnusedFixture(sides[side], states[side]);
  const units = groupUnits(baseline).map((rounds) =>
    rounds.flatMap((round) =>
      (['baseline', 'candidate'] as const).map((side) => async () => {
        for (const [i, k] of round) attempts[side][i]![k - 1] = await runAttempt(sides[side], states[side], i, k);
      }),
    ),
  );
  const peak = await runUnits(sides.candidate, units);
  await saveAfterRun(sides.candidate, candidate);
  const runs = {
    baseline: runReportOf(sides.baseline, baseline, attempts.baseline, peak),
    candidate: runReportOf(sides.candidate, candidate, attempts.candidate, peak),
  };
  const notes = [...(sides.candidate.signal.aborted ? ['The comparison was cancelled: the caller hung up before it ended.'] : [])];
  const waited = sides.candidate.room.note();
  if (waited !== undefined) notes.push(waited);
  notes.push(COMPARISON_NOTES.fair, COMPARISON_NOTES.usage);
  return comparisonReportOf(id, runs, { startedAt, finishedAt: Date.now() }, notes);
}
