import t from 'tap';
import { createGate, holm, type ConversationGate, type Gate } from '../../src/stats/index.js';

/**
 * A comparison that moves to another pod continues its sequential design where it was: the new
 * pod rebuilds each conversation's gate by replaying the rounds completed before the move (the
 * checkpoint's rounds, in order, as src/suites/run/comparison-runner.ts reads them from its
 * journal) and goes on recording. Computed exactly, over every path of the rounds: moved at any
 * round, every path stops at the same round, for the same reason, with the same p-values, so the
 * false-alarm rate at every common pass rate, and its supremum, is the uninterrupted one's.
 */

type Outcome = [baseline: boolean | null, candidate: boolean | null];

/** With errors too: an attempt in error is left out, and the replay must keep that. */
const OUTCOMES: Outcome[] = [
  [true, true],
  [true, false],
  [false, true],
  [false, false],
  [null, true],
  [false, null],
];

interface Ending {
  path: string;
  stop: string | null;
  rounds: number;
  /** NaN when no pair could be judged. */
  regressed: number;
  fixed: number;
  /** Passes and failures of each side along the path, for its probability. */
  counts: [number, number, number, number];
}

/** A gate rebuilt on another pod: a new conversation fed the rounds recorded before the move. */
function replayed(gate: Gate, history: Outcome[]): ConversationGate {
  const rebuilt = gate.conversation();
  for (const [baseline, candidate] of history) rebuilt.record(baseline, candidate);
  return rebuilt;
}

/** Every path to a stop; with `moveAt`, the gate is rebuilt by replay after that many rounds. */
function endings(gate: Gate, outcomes: Outcome[], moveAt?: number): Ending[] {
  const out: Ending[] = [];
  const go = (state: ConversationGate, history: Outcome[]): void => {
    for (const outcome of outcomes) {
      const here = history.length === moveAt ? replayed(gate, history) : state.clone();
      const { stop } = here.record(...outcome);
      const next = [...history, outcome];
      if (stop === null) {
        go(here, next);
        continue;
      }
      // No judged pair at all (every attempt in error): no p-value.
      const p = here.pValues() ?? { regressed: Number.NaN, fixed: Number.NaN };
      const counts: Ending['counts'] = [0, 0, 0, 0];
      for (const [b, c] of next) {
        if (b !== null) counts[b ? 0 : 1] += 1;
        if (c !== null) counts[c ? 2 : 3] += 1;
      }
      out.push({
        path: next.map((o) => o.map((x) => (x === null ? 'e' : x ? 'P' : 'F')).join('')).join(' '),
        stop,
        rounds: here.rounds,
        regressed: p.regressed,
        fixed: p.fixed,
        counts,
      });
    }
  };
  go(gate.conversation(), []);
  return out;
}

/** P(flagged) when both sides pass with probability p and an attempt errs with probability `e` (only where errors are enumerated). */
function falseAlarm(ends: Ending[], flagged: (e: Ending) => boolean, p: number): number {
  let sum = 0;
  for (const e of ends) {
    if (!flagged(e)) continue;
    const [bp, bf, cp, cf] = e.counts;
    sum += p ** (bp + cp) * (1 - p) ** (bf + cf);
  }
  return sum;
}

const RATES = Array.from({ length: 50 }, (_, i) => 0.5 + i * 0.01);

for (const [name, mode] of [
  ['sequential, 5 to 8 rounds', { kind: 'sequential', min: 5, max: 8 }],
  ['sequential, 3 to 6 rounds', { kind: 'sequential', min: 3, max: 6 }],
  ['repeat 6', { kind: 'repeat', attempts: 6 }],
] as const) {
  t.test(`${name}: moved at any round, every path ends as it would have`, async (t) => {
    const gate = createGate({ confidence: 0.95, conversations: 3, mode });
    const judged = OUTCOMES.slice(0, 4);
    const straight = endings(gate, judged);
    const flagged = (e: Ending) => holm([e.regressed], gate.stopLevel)[0]!.rejected;
    const worst = Math.max(...RATES.map((p) => falseAlarm(straight, flagged, p)));
    t.ok(worst <= gate.stopLevel, `the uninterrupted false-alarm rate (sup ${worst.toExponential(3)}) is within the stopping level`);
    for (let moveAt = 1; moveAt < gate.maxRounds; moveAt++) {
      const moved = endings(gate, judged, moveAt);
      t.same(moved, straight, `moved after round ${moveAt}: the same stop, rounds and p-values on all ${straight.length} paths`);
      const movedWorst = Math.max(...RATES.map((p) => falseAlarm(moved, flagged, p)));
      t.equal(movedWorst, worst, `moved after round ${moveAt}: the supremum over pass rates 0.50–0.99 is unchanged`);
    }
  });
}

t.test('attempts in error, left out, are replayed the same way', async (t) => {
  const gate = createGate({ confidence: 0.95, conversations: 1, mode: { kind: 'sequential', min: 3, max: 5 } });
  const straight = endings(gate, OUTCOMES);
  for (let moveAt = 1; moveAt < gate.maxRounds; moveAt++) {
    t.same(endings(gate, OUTCOMES, moveAt), straight, `moved after round ${moveAt}: ${straight.length} paths end alike`);
  }
});
