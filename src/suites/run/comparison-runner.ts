import { randomUUID } from 'node:crypto';
import { createGate, type ConversationGate, type Gate } from '../../stats/index.js';
import { comparisonReportOf, type ComparisonReport, type Side } from '../report/comparison.js';
import type { AttemptReport } from '../report/run-report.js';
import type { HttpMemory, Suite } from '../spec/format.js';
import { runAttempt } from './attempt.js';
import type { RunContext } from './context.js';
import { prepareRun, type RunState } from './run-state.js';
import { restoreUnusedFixture, runReportOf, runUnits, saveAfterRun } from './runner.js';

const SIDES: Side[] = ['baseline', 'candidate'];

const COMPARISON_NOTES = {
  fair:
    'Both sides ran the same scripted lines, simulated users, seed and memory fixture; their attempts were interleaved ' +
    '(baseline 1, candidate 1, baseline 2, …) so that any drift of the engine touched both alike.',
  usage: 'A comparison holds real engine sessions on both sides: they count towards usage like any other conversation.',
};

/** An attempt as the gate reads it: passed, failed, or left out (an error could not be judged, an invalid one was spoiled). */
const judged = (attempt: AttemptReport | undefined): boolean | null =>
  attempt === undefined || attempt.status === 'error' || attempt.status === 'invalid' ? null : attempt.status === 'passed';

/** The decision rule the suite asks for: exactly `repeat` rounds, or sequential rounds until each conversation is decided. */
function gateOf(suite: Suite<HttpMemory>): Gate {
  const { attempts: plan } = suite;
  return createGate({
    confidence: suite.confidence,
    conversations: suite.conversations.length,
    mode: plan.kind === 'repeat' ? { kind: 'repeat', attempts: plan.attempts } : { kind: 'sequential', min: plan.min, max: plan.max },
  });
}

/**
 * Runs a suite against a baseline and a candidate revision, fairly: the same seed and run label
 * stem on both sides, the memory fixture restored before each attempt on either side, and round
 * by round each conversation's baseline attempt followed by its candidate attempt — a returning
 * user's visits (a device group) as one journey per side and round. After every round the gate
 * (src/stats) reads the pair of outcomes; a conversation stops once its verdict is decided (or
 * can no longer be, within the budget), a device group once all of its conversations stopped.
 * Conversations run in parallel up to the suite's `concurrency`, both sides together.
 */
export async function compareSuite(sides: Record<Side, RunContext>, suite: Suite<HttpMemory>): Promise<ComparisonReport> {
  const id = randomUUID();
  const startedAt = Date.now();
  const gate = gateOf(suite);
  const stem = suite.runLabel ?? `cmp-${id.slice(0, 8)}`;
  const sized = { ...suite, repeat: gate.maxRounds };
  const baseline = prepareRun(sides.baseline, { ...sized, runLabel: `${stem}:baseline` });
  const candidate = prepareRun(sides.candidate, { ...sized, runLabel: `${stem}:candidate`, seed: baseline.seed });
  const states: Record<Side, RunState> = { baseline, candidate };
  const attempts: Record<Side, AttemptReport[][]> = {
    baseline: suite.conversations.map(() => []),
    candidate: suite.conversations.map(() => []),
  };
  const tests: ConversationGate[] = suite.conversations.map(() => gate.conversation());
  for (const side of SIDES) await restoreUnusedFixture(sides[side], states[side]);
  const journey = async (group: number[]) => {
    for (let round = 1; round <= gate.maxRounds && !sides.candidate.signal.aborted; round++) {
      const open = group.filter((i) => tests[i]!.stop === null && SIDES.every((side) => attempts[side][i]!.length < gate.maxRounds));
      if (open.length === 0) return;
      for (const side of SIDES) {
        for (const i of group) {
          const spent = attempts[side][i]!;
          if (spent.length >= gate.maxRounds) continue;
          spent.push(await runAttempt(sides[side], states[side], i, spent.length + 1));
          // Sequential: an invalid attempt (the simulated user spoiled it) is run again at once, within the side's budget.
          while (gate.mode === 'sequential' && spent.at(-1)!.status === 'invalid' && spent.length < gate.maxRounds) {
            spent.push(await runAttempt(sides[side], states[side], i, spent.length + 1));
          }
        }
      }
      for (const i of open) tests[i]!.record(judged(attempts.baseline[i]!.at(-1)), judged(attempts.candidate[i]!.at(-1)));
    }
  };
  const peak = await runUnits(
    sides.candidate,
    baseline.groups.map((group) => [() => journey(group)]),
  );
  await saveAfterRun(sides.candidate, candidate);
  const runs = {
    baseline: runReportOf(sides.baseline, baseline, attempts.baseline, peak),
    candidate: runReportOf(sides.candidate, candidate, attempts.candidate, peak),
  };
  const notes = [...(sides.candidate.signal.aborted ? ['The comparison was cancelled: the caller hung up before it ended.'] : [])];
  const waited = sides.candidate.room.note();
  if (waited !== undefined) notes.push(waited);
  notes.push(COMPARISON_NOTES.fair, COMPARISON_NOTES.usage);
  return comparisonReportOf(
    id,
    runs,
    { gate, confidence: suite.confidence, verdicts: await gate.finalize(tests) },
    { startedAt, finishedAt: Date.now() },
    notes,
  );
}
