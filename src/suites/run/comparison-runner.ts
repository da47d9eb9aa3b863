import { createGate, type ConversationGate, type Gate } from '../../stats/index.js';
import { comparisonReportOf, conversationDecision, type ComparisonReport, type Side } from '../report/comparison.js';
import type { AttemptReport } from '../report/run-report.js';
import type { HttpMemory, Suite } from '../spec/format.js';
import { cancelledBecause } from './cancellation.js';
import type { RunContext } from './context.js';
import { RunHalted, type CompletedRound, type RunJournal } from './journal.js';
import type { RunState } from './run-state.js';
import { runAttempt } from './attempt.js';
import { restoreUnusedFixture, runReportOf, runUnits, saveAfterRun } from './runner.js';

const SIDES: Side[] = ['baseline', 'candidate'];

const COMPARISON_NOTES = {
  fair:
    'Both sides ran the same scripted lines, simulated users, seed and memory fixture; their attempts were interleaved ' +
    '(baseline 1, candidate 1, baseline 2, …) so that any drift of the engine touched both alike.',
  usage: 'A comparison holds real engine sessions on both sides: they count towards usage like any other conversation.',
};

/**
 * An attempt as the gate reads it: passed, failed, or left out (an error could not be judged, an
 * invalid one was spoiled, a cancelled one was cut short).
 */
const judged = (attempt: AttemptReport | undefined): boolean | null =>
  attempt === undefined || attempt.status === 'error' || attempt.status === 'invalid' || attempt.status === 'cancelled'
    ? null
    : attempt.status === 'passed';

/** A round's last attempt of conversation `i` on `side`, if one ran (the cancel may have come before it). */
const ranIn = (round: CompletedRound, side: Side, i: number): AttemptReport | undefined =>
  round.attempts.filter((_, j) => round.sides[j] === side && round.conversations[j] === i).at(-1);

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
 * stem on both sides (the prepared states), the memory fixture restored before each journey on
 * either side, and round by round each conversation's baseline attempt followed by its candidate
 * attempt — a returning user's visits (a device group) as one journey per side and round. After
 * every round the gate (src/stats) reads the pair of outcomes; a conversation stops once its
 * verdict is decided (or can no longer be, within the budget), a device group once all of its
 * conversations stopped. Conversations run in parallel up to the suite's `concurrency`, both
 * sides together. Each completed round of a group goes to the journal, and a round it already
 * holds (the comparison moved here) is read from it, so the gate sees the same rounds in the same
 * order; a halted journal ends the comparison without a report (RunHalted).
 */
export async function compareSuite(
  id: string,
  sides: Record<Side, RunContext>,
  states: Record<Side, RunState>,
  journal: RunJournal,
): Promise<ComparisonReport> {
  const { suite } = states.candidate;
  const gate = gateOf(suite);
  const attempts: Record<Side, AttemptReport[][]> = {
    baseline: suite.conversations.map(() => []),
    candidate: suite.conversations.map(() => []),
  };
  const tests: ConversationGate[] = suite.conversations.map(() => gate.conversation());
  for (const side of SIDES) await restoreUnusedFixture(sides[side], states[side]);
  /** Tells the journal of each conversation that goes on no more (it keeps the first word on each). */
  const announce = (conversations: number[]) => {
    for (const i of conversations) if (!gate.goesOn(i)) journal.stopped(conversationDecision(suite.conversations[i]!.name, i, tests[i]!));
  };
  const journey = async (group: number[], g: number) => {
    for (let round = 1; round <= gate.maxRounds && !journal.halted; round++) {
      // The gate says who goes on: a conversation its own rule stopped as futile plays on while the suite's test needs it.
      const open = group.filter((i) => gate.goesOn(i) && SIDES.every((side) => attempts[side][i]!.length < gate.maxRounds));
      announce(group);
      if (open.length === 0) return;
      let done = journal.completed(g, round);
      if (done === undefined) {
        // A cancelled comparison starts no round: its report holds the rounds completed.
        if (sides.candidate.signal.aborted) return;
        journal.starting(g, round, 2 * group.length);
        done = { unit: g, round, attempts: [], conversations: [], sides: [] };
        for (const side of SIDES) {
          for (const i of group) {
            let spent = attempts[side][i]!.length;
            // A pod that no longer knows it holds the run starts no attempt, even within a round.
            if (spent >= gate.maxRounds || journal.halted) continue;
            const runOne = async () => {
              const attempt = await runAttempt(sides[side], states[side], i, ++spent);
              if (attempt === null) return null;
              done!.attempts.push(attempt);
              done!.conversations.push(i);
              done!.sides.push(side);
              return attempt;
            };
            let last = await runOne();
            // Sequential: an invalid attempt (the simulated user spoiled it) is run again at once, within the side's budget.
            while (gate.mode === 'sequential' && last?.status === 'invalid' && spent < gate.maxRounds && !journal.halted)
              last = await runOne();
          }
        }
        if (journal.halted) return;
        journal.complete(done);
      }
      done.attempts.forEach((attempt, j) => attempts[done.sides[j]!][done.conversations[j]!]!.push(attempt));
      for (const i of open) {
        const [baseline, candidate] = [ranIn(done, 'baseline', i), ranIn(done, 'candidate', i)];
        // A round the cancel came before, or cut short, on both sides is no round: the gate does not see it.
        const cut = (attempt: AttemptReport | undefined) => attempt === undefined || attempt.status === 'cancelled';
        if (!cut(baseline) || !cut(candidate)) tests[i]!.record(judged(baseline), judged(candidate));
      }
      announce(open);
    }
  };
  const peak = await runUnits(
    sides.candidate,
    journal,
    states.baseline.groups.map((group, g) => [() => journey(group, g)]),
  );
  if (journal.halted) throw new RunHalted();
  await saveAfterRun(sides.candidate, states.candidate);
  // A conversation the gate had not stopped when the comparison was cancelled is undecided, on both sides.
  const undecided = (i: number) => tests[i]!.stop === null;
  const runs = {
    baseline: runReportOf(sides.baseline, states.baseline, attempts.baseline, peak, undecided),
    candidate: runReportOf(sides.candidate, states.candidate, attempts.candidate, peak, undecided),
  };
  const { signal } = sides.candidate;
  const cancelled = signal.aborted ? cancelledBecause(signal) : null;
  const notes = cancelled === null ? [] : [`The comparison was cancelled: ${cancelled}.`];
  const waited = sides.candidate.room.note();
  if (waited !== undefined) notes.push(waited);
  notes.push(COMPARISON_NOTES.fair, COMPARISON_NOTES.usage);
  const { conversations: verdicts, suite: suiteVerdict } = await gate.finalize();
  return comparisonReportOf(
    id,
    runs,
    { gate, confidence: suite.confidence, verdicts, suite: suiteVerdict, cancelled },
    { startedAt: states.candidate.startedAt, finishedAt: Date.now() },
    notes,
  );
}
