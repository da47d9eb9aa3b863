import t from 'tap';
import { createGate, holm, type ConversationGate, type Gate } from '../../src/stats/index.js';

/**
 * The false-alarm rate of the whole decision rule, computed exactly: every path of the rounds,
 * not a sample. The gate itself decides each step (its `record`, stops, p-values); the test only
 * adds up probabilities. Paths are merged by (x, y), the passes of each side among the pairs: a
 * live conversation's future depends on nothing else (its boundary, its futility and its budget
 * read the counts and the round; the largest statistic so far matters only once it crossed, and
 * then the conversation has stopped). With no errors, a round's four outcomes have probabilities
 * p², p(1 − p), (1 − p)p, (1 − p)² when both revisions pass with probability p. The pooled z is
 * odd under swapping passes and failures, so P_p(regressed) = P_{1−p}(fixed) = P_{1−p}(regressed):
 * the rates 0.50–0.99 cover 0.01–0.99.
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
  /** At a stop: flagged as regressed. */
  flagged: boolean;
  rounds: number;
}

/** Walks the gate over every path (merged by x, y) and returns the steps per round. `flag(c)` is asked at each stop. */
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
        const { baseline: x, candidate: y } = copy.paired;
        const key = `${x},${y}`;
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

/** A sequential stop is a regression exactly when it crossed the boundary the baseline's way. */
const crossedDown = (c: ConversationGate): boolean => c.stop === 'decided' && c.paired.baseline > c.paired.candidate;

const PASS_RATES = Array.from({ length: 50 }, (_, i) => (50 + i) / 100);

t.test('a sequential stop is flagged at α/K exactly when its sequential p-value says so', async (t) => {
  const gate = createGate({ conversations: 3, mode: { kind: 'sequential', max: 16 } });
  let checked = 0;
  const disagreements: string[] = [];
  walk(gate, (c) => {
    if (c.pValues()!.regressed <= gate.stopLevel !== crossedDown(c)) disagreements.push(`${c.stop} at ${JSON.stringify(c.paired)}`);
    checked++;
    return false;
  });
  t.same(disagreements, [], `${checked} stops`);
  t.ok(checked > 100);
});

t.test('sequential, K = 1…20 conversations, budgets up to 60: P(any regressed) ≤ α at every pass rate', async (t) => {
  for (const conversations of [1, 2, 3, 5, 10, 20]) {
    let worst = { rate: 0, p: 0, budget: 0 };
    for (const max of [5, 6, 10, 20, 40, 60]) {
      const gate = createGate({ confidence: 0.95, conversations, mode: { kind: 'sequential', max } });
      const rounds = walk(gate, crossedDown);
      for (const p of PASS_RATES) {
        // Under the global null Holm rejects something exactly when the smallest p-value is ≤ α/K,
        // so with independent conversations FWER = 1 − Π(1 − P(p_i ≤ α/K)).
        const single = evaluate(rounds, p, p).flagged;
        const fwer = 1 - (1 - single) ** conversations;
        if (fwer > worst.rate) worst = { rate: fwer, p, budget: max };
      }
    }
    t.ok(worst.rate <= 0.05, `${conversations} conversation(s): worst ${worst.rate.toFixed(5)} ≤ 0.05`, worst);
    if (conversations <= 10) t.ok(worst.rate > 0.005, 'and not vacuous: the rule does reject somewhere', worst);
  }
});

t.test('one conversation, every pass rate 0.01–0.99: P(regressed) ≤ α, and not far below', async (t) => {
  const gate = createGate({ confidence: 0.95, conversations: 1, mode: { kind: 'sequential', max: 30 } });
  const rounds = walk(gate, crossedDown);
  const worst = Math.max(...Array.from({ length: 99 }, (_, i) => evaluate(rounds, (i + 1) / 100, (i + 1) / 100).flagged));
  t.ok(worst <= 0.05 && worst > 0.03, `worst over 0.01–0.99: ${worst.toFixed(5)}`);
});

t.test('repeat: N, one look at the end: P(regressed) ≤ α for N = 1…20 and K = 1, 3, 10', async (t) => {
  for (const conversations of [1, 3, 10]) {
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

t.test('5 of 5 against 0 of 5 among up to three conversations is regressed', async (t) => {
  for (const conversations of [1, 2, 3]) {
    for (const mode of [{ kind: 'repeat', attempts: 5 } as const, { kind: 'sequential', min: 5, max: 5 } as const]) {
      const gate = createGate({ conversations, mode });
      const states = Array.from({ length: conversations }, () => gate.conversation());
      for (let i = 0; i < 5; i++) for (const [index, state] of states.entries()) state.record(true, index > 0);
      const [verdict] = (await gate.finalize()).conversations;
      t.equal(verdict!.verdict, 'regressed', `${mode.kind}, K = ${conversations}: p = ${verdict!.p_regressed}`);
    }
  }
  // Barnard's p-value of 5/5 against 0/5: only that outcome is as extreme, sup_p p⁵(1 − p)⁵ = 1/1024.
  const gate = createGate({ conversations: 3, mode: { kind: 'repeat', attempts: 5 } });
  const state = gate.conversation();
  for (let i = 0; i < 5; i++) state.record(true, false);
  t.ok(Math.abs(state.pValues()!.regressed - 1 / 1024) < 1e-12);
  t.ok(holm([state.pValues()!.regressed, 1, 1], 0.05)[0]!.rejected, 'Holm at 0.05/3 = 0.0167');
});

t.test('max_attempts 60, ten conversations: power and sessions, exactly', async (t) => {
  // The conversations' own rule alone (no suite test) meets 0.85; the default gives the suite
  // 0.4 of α and a conversation 0.823 (docs/decisions.md: the trade-off).
  const withSuite = createGate({ conversations: 10, mode: { kind: 'sequential', max: 60 } });
  t.equal(withSuite.power(0.9, 0.6).toFixed(3), '0.823', 'with the suite’s share of α taken');
  const gate = createGate({ conversations: 10, mode: { kind: 'sequential', max: 60 }, suiteShare: 0 });
  const rounds = walk(gate, crossedDown);
  const drop = evaluate(rounds, 0.9, 0.6);
  t.equal(drop.flagged.toFixed(4), gate.power(0.9, 0.6).toFixed(4), 'the walk and the design’s power agree');
  t.ok(drop.flagged >= 0.85, `power for 0.9 → 0.6: ${drop.flagged.toFixed(4)} ≥ 0.85`);
  const same = evaluate(rounds, 0.9, 0.9);
  t.ok(same.expectedRounds <= 30, `identical at 0.9: ${same.expectedRounds.toFixed(2)} of 60 rounds, at most half`);
  const strong = evaluate(rounds, 0.95, 0.3);
  t.ok(
    strong.flagged > 0.99 && strong.expectedRounds < 20,
    `0.95 → 0.3: ${strong.flagged.toFixed(4)} in ${strong.expectedRounds.toFixed(2)} rounds`,
  );
});
