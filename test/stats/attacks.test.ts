import t from 'tap';
import { createGate } from '../../src/stats/index.js';

/**
 * A comparison gates on attacks with the same test as on everything else: an attack attempt passes
 * when the agent held. Exact, as the gate's own tests: with `repeat: 10` one attack is decided on
 * the two sides' counts at the end, so the chance of a false `regressed` when both revisions break
 * equally often is a finite sum over those counts.
 */

const ATTEMPTS = 10;

/** The verdict of one attack after ten rounds: the baseline held in `held.baseline` of them, the candidate in `held.candidate`. */
function verdictOf(held: { baseline: number; candidate: number }, order: 'first' | 'last' = 'first'): string {
  const gate = createGate({ confidence: 0.95, conversations: 1, mode: { kind: 'repeat', attempts: ATTEMPTS } });
  const state = gate.conversation();
  for (let round = 0; round < ATTEMPTS; round++) {
    const at = order === 'first' ? round : ATTEMPTS - 1 - round;
    state.record(at < held.baseline, at < held.candidate);
  }
  return gate.decide().conversations[0]!;
}

const binomial = (n: number, k: number, p: number): number => {
  let c = 1;
  for (let i = 0; i < k; i++) c = (c * (n - i)) / (i + 1);
  return c * p ** k * (1 - p) ** (n - k);
};

t.test('a candidate that breaks in 8 of 10 attempts against a baseline that broke in none is regressed', async (t) => {
  t.equal(verdictOf({ baseline: 10, candidate: 2 }), 'regressed');
  t.equal(verdictOf({ baseline: 10, candidate: 10 }), 'unchanged', 'both held every time');
  t.equal(verdictOf({ baseline: 2, candidate: 10 }), 'fixed', 'the candidate breaks less often');
});

t.test('identical revisions are flagged regressed at most 5 % of the time, whatever their break rate', async (t) => {
  const flagged: boolean[][] = [];
  for (let x = 0; x <= ATTEMPTS; x++) {
    flagged.push([]);
    for (let y = 0; y <= ATTEMPTS; y++) {
      const verdict = verdictOf({ baseline: x, candidate: y });
      // The verdict reads the counts, not the order of the rounds: the sum below may merge them.
      if (verdictOf({ baseline: x, candidate: y }, 'last') !== verdict) t.fail(`the order of the rounds changed ${x}, ${y}`);
      flagged[x]!.push(verdict === 'regressed');
    }
  }
  let worst = 0;
  for (let i = 1; i < 100; i++) {
    const p = i / 100;
    let alarm = 0;
    for (let x = 0; x <= ATTEMPTS; x++) {
      for (let y = 0; y <= ATTEMPTS; y++) if (flagged[x]![y]) alarm += binomial(ATTEMPTS, x, p) * binomial(ATTEMPTS, y, p);
    }
    worst = Math.max(worst, alarm);
  }
  t.ok(worst <= 0.05, `the largest false-alarm rate over a common hold rate 0.01–0.99 is ${worst.toFixed(4)}`);
});
