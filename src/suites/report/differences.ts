import type { components } from '../../api/report-shapes.js';
import type { AttemptReport, TurnReport } from './run-report.js';
import { describeExpectation } from './wording.js';

// The shapes by their schema (comparison.ts names them too, and imports this module).
type Schemas = components['schemas'];
type Difference = Schemas['ComparisonDifference'];
type Tally = Schemas['ComparisonTally'];

/**
 * Which expectations and criteria came out differently between a comparison's sides, and which
 * fail alike on both: each side's attempts tallied check by check. Apart from the comparison's
 * other figures because the text, JUnit and HTML reports read it too (a conversation failing on
 * both sides), and the HTML report's modules, which the runs page serves to the browser, must not
 * bring the gate's statistics along.
 */

/** One outcome as both sides' tallies are keyed: where it is, what it is, and how it came out in one attempt. */
interface Outcome {
  key: string;
  kind: Difference['kind'];
  turn: number | null;
  name: string;
  description: string;
  passed: boolean | null;
  evidence: string | null;
}

function outcomesOf(attempt: AttemptReport): Outcome[] {
  const out: Outcome[] = [];
  const at = (turn: TurnReport | null) => (turn === null ? 'conversation' : `turn ${turn.index}`);
  /** `where` keys the part apart (a turn, the conversation, its memory); `unjudged`: its criteria were never ruled on. */
  const add =
    (turn: TurnReport | null, where = at(turn), unjudged = turn?.status === 'skipped') =>
    (attemptPart: Pick<AttemptReport, 'expectations' | 'criteria'>) => {
      for (const e of attemptPart.expectations) {
        const description = describeExpectation(e);
        out.push({
          key: `${where} expectation ${description}`,
          kind: 'expectation',
          turn: turn?.index ?? null,
          name: e.kind,
          description,
          passed: e.passed,
          evidence: e.evidence,
        });
      }
      for (const c of attemptPart.criteria) {
        out.push({
          key: `${where} criterion ${c.id}`,
          kind: 'criterion',
          turn: turn?.index ?? null,
          name: c.id,
          description: c.text,
          // A criterion on a turn that was never judged (skipped, or memory never checked) is not counted.
          passed: unjudged ? null : c.passed,
          evidence: c.reasoning,
        });
      }
    };
  // Only scripted turns carry expectations and criteria of the suite's; a simulated turn's index differs between attempts.
  for (const turn of attempt.turns) if (turn.source === 'script') add(turn)(turn);
  add(null)(attempt);
  // Memory checks are listed like any other: "memory_contains" differs when one side remembered less often.
  if (attempt.memory !== null) add(null, 'memory', attempt.memory.status === 'not_checked')(attempt.memory);
  return out;
}

interface Tallied {
  outcome: Outcome;
  tally: Tally;
  /** whether the evidence kept is of a failure */
  failedEvidence: boolean;
}

function tallies(attempts: AttemptReport[]): Map<string, Tallied> {
  const byKey = new Map<string, Tallied>();
  for (const attempt of attempts) {
    for (const outcome of outcomesOf(attempt)) {
      let entry = byKey.get(outcome.key);
      if (entry === undefined) {
        entry = { outcome, tally: { passed: 0, evaluated: 0, evidence: null }, failedEvidence: false };
        byKey.set(outcome.key, entry);
      }
      if (outcome.passed === null) continue;
      entry.tally.evaluated += 1;
      if (outcome.passed) entry.tally.passed += 1;
      if (entry.tally.evidence === null || (!outcome.passed && !entry.failedEvidence)) {
        entry.tally.evidence = outcome.evidence;
        entry.failedEvidence = !outcome.passed;
      }
    }
  }
  return byKey;
}

const shareOf = (t: Tally): number | null => (t.evaluated === 0 ? null : t.passed / t.evaluated);
const noTally = (): Tally => ({ passed: 0, evaluated: 0, evidence: null });

/** Each expectation and criterion of either side with both sides' tallies, in the suite's order, kept where `keep` says. */
function pairedTallies(baseline: AttemptReport[], candidate: AttemptReport[], keep: (left: Tally, right: Tally) => boolean): Difference[] {
  const b = tallies(baseline);
  const c = tallies(candidate);
  const keys = [...new Set([...b.keys(), ...c.keys()])];
  return keys.flatMap((key): Difference[] => {
    const outcome = (b.get(key) ?? c.get(key))!.outcome;
    const left = b.get(key)?.tally ?? noTally();
    const right = c.get(key)?.tally ?? noTally();
    if (!keep(left, right)) return [];
    return [
      { kind: outcome.kind, turn: outcome.turn, name: outcome.name, description: outcome.description, baseline: left, candidate: right },
    ];
  });
}

/** The expectations and criteria whose share of passing attempts differs between the sides, in the suite's order. */
export const differencesOf = (baseline: AttemptReport[], candidate: AttemptReport[]): Difference[] =>
  pairedTallies(baseline, candidate, (left, right) => shareOf(left) !== shareOf(right));

/**
 * What a conversation that fails on both sides fails on alike: the expectations and criteria that fail in the same
 * share of attempts on each side (those whose share differs are its `differences`). Read from the report's runs.
 */
export function failingAlike(
  report: Pick<Schemas['ComparisonReport'], 'runs'>,
  c: Pick<Schemas['ComparedConversation'], 'index'>,
): Difference[] {
  const attemptsOf = (side: 'baseline' | 'candidate') =>
    report.runs[side].conversations.find((conv) => conv.index === c.index)?.attempts ?? [];
  return pairedTallies(attemptsOf('baseline'), attemptsOf('candidate'), (left, right) => {
    const share = shareOf(left);
    return share !== null && share < 1 && share === shareOf(right);
  });
}
