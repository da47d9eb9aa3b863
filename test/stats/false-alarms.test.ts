import t from 'tap';
import { createGate, holm, type ConversationGate, type Gate } from '../../src/stats/index.js';

/**
 * The false-alarm rate of the whole decision rule, computed exactly: every path of the rounds,
 * not a sample. The gate itself decides each step (its `record`, stops, p-values and Holm); the
 * test only adds up probabilities. Paths are merged by (round, S, C), the discordant pairs won by
 * each side: a live conversation's future depends on nothing else (that is the design; the
 * smallest nominal p-value so far matters only once it crossed, and then the conversation has
 * stopped). With no errors, a round's four outcomes have probabilities p², p(1 − p), (1 − p)p,
 * (1 − p)² when both revisions pass with probability p.
 */

const OUTCOMES: Array<[boolean, boolean]> = [
  [true, true],
  [true, false],
  [false, true],
  [false, false],
];

interface Step {
  from: number;
  outcome: number;
  /** Index among the next round's live states, or -1 when the conversation stops here. */
  to: number;
  /** At a stop: the regression p-value is ≤ the level asked for. */
  flagged: boolean;
  rounds: number;
}

/**
 * Walks the gate over every path (merged by S, C) and returns the steps per round. `flag(c)` is
 * asked at each stop.
 */
function walk(gate: Gate, flag: (conversation: ConversationGate) => boolean): Step[][] {
  let live: ConversationGate[] = [gate.conversation()];
  const rounds: Step[][] = [];
  while (live.length > 0) {
    const next = new Map<string, number>();
    const nextLive: ConversationGate[] = [];
    const steps: Step[] = [];
    live.forEach((state, from) => {
      OUTCOMES.forEach(([baseline, candidate], outcome) => {
        const copy = state.clone();
        const { stop } = copy.record(baseline, candidate);
        if (stop !== null) {
          steps.push({ from, outcome, to: -1, flagged: flag(copy), rounds: copy.rounds });
          return;
        }
        const { baselineOnly, candidateOnly } = copy.discordant;
        const key = `${baselineOnly},${candidateOnly}`;
        let to = next.get(key);
        if (to === undefined) {
          to = nextLive.length;
          next.set(key, to);
          nextLive.push(copy);
        }
        steps.push({ from, outcome, to, flagged: false, rounds: copy.rounds });
      });
    });
    rounds.push(steps);
    live = nextLive;
    if (rounds.length > gate.maxRounds) throw new Error('the gate ran past its budget');
  }
  return rounds;
}

/** P(flagged at the stop) and E[rounds], when both sides pass with probability `baseline` and `candidate`. */
function evaluate(rounds: Step[][], baseline: number, candidate: number): { flagged: number; expectedRounds: number } {
  const probabilities = OUTCOMES.map(([b, c]) => (b ? baseline : 1 - baseline) * (c ? candidate : 1 - candidate));
  let mass = [1];
  let flagged = 0;
  let expectedRounds = 0;
  for (const steps of rounds) {
    const next: number[] = [];
    for (const step of steps) {
      const weight = mass[step.from]! * probabilities[step.outcome]!;
      if (step.to < 0) {
        if (step.flagged) flagged += weight;
        expectedRounds += weight * step.rounds;
      } else next[step.to] = (next[step.to] ?? 0) + weight;
    }
    mass = next;
  }
  return { flagged, expectedRounds };
}

const PASS_RATES = Array.from({ length: 50 }, (_, i) => (50 + i) / 100);
const BUDGETS = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60];

t.test('one conversation, α = 0.05: P(regressed) ≤ 0.05 for p = 0.50…0.99 and R = 1…60', async (t) => {
  let worst = { rate: 0, p: 0, budget: 0 };
  for (const max of BUDGETS) {
    const gate = createGate({ confidence: 0.95, conversations: 1, mode: { kind: 'sequential', max } });
    const rounds = walk(gate, (c) => holm([c.pValues()!.regressed], 0.05)[0]!.rejected);
    for (const p of PASS_RATES) {
      const { flagged } = evaluate(rounds, p, p);
      if (flagged > worst.rate) worst = { rate: flagged, p, budget: max };
    }
  }
  t.ok(worst.rate <= 0.05, `worst false-alarm rate ${worst.rate.toFixed(5)} ≤ 0.05`, worst);
  t.ok(worst.rate > 0.005, 'and not vacuous: the rule does reject somewhere', worst);
});

t.test('ten conversations, α = 0.05 with Holm: P(any regressed) ≤ 0.05', async (t) => {
  let worst = { rate: 0, p: 0, budget: 0 };
  for (const max of [5, 10, 20, 30, 40, 60]) {
    const gate = createGate({ confidence: 0.95, conversations: 10, mode: { kind: 'sequential', max } });
    t.ok(Math.abs(gate.stopLevel - 0.005) < 1e-15);
    // Under the global null Holm rejects something exactly when the smallest p-value is ≤ α/10,
    // so with independent conversations FWER = 1 − Π(1 − P(p_i ≤ α/10)).
    const rounds = walk(gate, (c) => c.pValues()!.regressed <= 0.05 / 10);
    for (const p of PASS_RATES) {
      const single = evaluate(rounds, p, p).flagged;
      const fwer = 1 - (1 - single) ** 10;
      if (fwer > worst.rate) worst = { rate: fwer, p, budget: max };
    }
  }
  t.ok(worst.rate <= 0.05, `worst family-wise false-alarm rate ${worst.rate.toFixed(5)} ≤ 0.05`, worst);
});

t.test('repeat: N, one look at the end: P(regressed) ≤ α for N = 1…20, one and ten conversations', async (t) => {
  for (const conversations of [1, 10]) {
    let worst = { rate: 0, p: 0, attempts: 0 };
    for (let attempts = 1; attempts <= 20; attempts++) {
      const gate = createGate({ conversations, mode: { kind: 'repeat', attempts } });
      const rounds = walk(gate, (c) => c.pValues()!.regressed <= 0.05 / conversations);
      t.equal(rounds.length, attempts, 'exactly N rounds on every path');
      for (const p of PASS_RATES) {
        const single = evaluate(rounds, p, p).flagged;
        const fwer = 1 - (1 - single) ** conversations;
        if (fwer > worst.rate) worst = { rate: fwer, p, attempts };
      }
    }
    t.ok(worst.rate <= 0.05, `${conversations} conversation(s): worst ${worst.rate.toFixed(5)} ≤ 0.05`, worst);
  }
});

t.test('a strong regression (0.95 → 0.3) stops early: expected rounds well below the budget', async (t) => {
  const gate = createGate({ conversations: 10, mode: { kind: 'sequential', max: 60 } });
  const rounds = walk(gate, (c) => c.pValues()!.regressed <= gate.stopLevel);
  const { flagged, expectedRounds } = evaluate(rounds, 0.95, 0.3);
  t.ok(flagged > 0.99, `flagged with probability ${flagged.toFixed(4)}`);
  t.ok(expectedRounds < 20, `expected rounds ${expectedRounds.toFixed(2)} of 60`);
  // And identical revisions spend at most half the budget on average (futility).
  const same = evaluate(rounds, 0.9, 0.9);
  t.ok(same.expectedRounds <= 30, `identical at 0.9: expected rounds ${same.expectedRounds.toFixed(2)} of 60`);
});
