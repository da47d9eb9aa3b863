import t from 'tap';
import { createGate, type Gate } from '../../src/stats/index.js';
import {
  designSuite,
  pooledDifference,
  signTail,
  suiteCrossing,
  suiteFutile,
  suiteReachable,
  suiteWindow,
  walkCritical,
  walkCrossing,
  type SuiteLook,
} from '../../src/stats/suite.js';

/**
 * The suite's test, proven by exact computation: its boundary keeps its level (a fair walk, DP),
 * its false-alarm rate at real pass rates, different in every conversation, stays under that bound
 * (DP over every pair's outcome, looks at round ends), and the whole gate — conversations and
 * suite, Holm over both, conversations kept going for the suite — never says `regressed` falsely
 * more often than 1 − confidence (every path enumerated, supremum over each conversation's rate).
 */

/** The chance that a fair ±1 walk reaches c·√d for some d in [first, last]: written apart from the design's. */
function fairCrossing(c: number, first: number, last: number): number {
  let mass = new Map<number, number>([[0, 1]]);
  let crossed = 0;
  for (let d = 1; d <= last; d++) {
    const next = new Map<number, number>();
    for (const [s, m] of mass) {
      next.set(s + 1, (next.get(s + 1) ?? 0) + m / 2);
      next.set(s - 1, (next.get(s - 1) ?? 0) + m / 2);
    }
    if (d >= first) {
      for (const [s, m] of next) {
        if (s >= c * Math.sqrt(d) - 1e-9) {
          crossed += m;
          next.delete(s);
        }
      }
    }
    mass = next;
  }
  return crossed;
}

t.test('the suite boundary keeps its level, 2 to 20 conversations, budgets up to 60', async (t) => {
  for (const conversations of [2, 3, 5, 10, 15, 20]) {
    for (const rounds of [5, 10, 20, 40, 60]) {
      const level = 0.05 * 0.3;
      const design = designSuite('sequential', level, conversations, rounds)!;
      const { first, last } = suiteWindow(conversations, rounds);
      t.same([design.first, design.last], [first, last]);
      if (!Number.isFinite(design.critical)) {
        // Not even d straight wins at the window's end are rare enough.
        t.ok(walkCrossing(Math.sqrt(last), first, last) > level, `K ${conversations}, R ${rounds}: nothing can be decided`);
        continue;
      }
      const exact = fairCrossing(design.critical, first, last);
      t.ok(exact <= level + 1e-12, `K ${conversations}, R ${rounds}: ${exact.toExponential(3)} ≤ ${level}`);
      t.ok(Math.abs(exact - walkCrossing(design.critical, first, last)) < 1e-12, 'the design’s DP agrees');
      // The next value down crosses too often: the boundary is as low as the level allows.
      const lower = design.critical * (1 - 1e-6);
      const below = Math.max(
        ...Array.from({ length: last - first + 1 }, (_, i) => first + i).flatMap((d) => {
          const s = Math.ceil(lower * Math.sqrt(d) - 1e-9);
          return s <= d && s / Math.sqrt(d) < design.critical - 1e-9 ? [s / Math.sqrt(d)] : [];
        }),
        0,
      );
      if (below > 0) t.ok(fairCrossing(below, first, last) > level, 'the next value down does not keep it');
    }
  }
  t.equal(designSuite('sequential', 0.015, 1, 60), null, 'one conversation: its own test is the suite’s');
  t.equal(walkCritical(0.015, 1, 4), Infinity, 'four discordant pairs at most: 1/16 > 0.015');
});

/**
 * The suite's false-alarm rate at given rates, one per conversation, exactly: DP over (discordant
 * pairs, walk) pair by pair, every conversation playing every round (the most looks), looks at
 * round ends, a crossing absorbed.
 */
function suiteFalseAlarm(gateDesign: { critical: number; first: number; last: number }, rates: number[], rounds: number): number {
  const { critical, first, last } = gateDesign;
  const width = 2 * last + 3;
  const offset = last + 1;
  let mass = new Float64Array((last + 2) * width);
  let next = new Float64Array((last + 2) * width);
  mass[offset] = 1;
  let crossed = 0;
  let top = 0;
  for (let round = 1; round <= rounds; round++) {
    for (const p of rates) {
      const discordant = p * (1 - p);
      next.fill(0, 0, Math.min(top + 2, last + 2) * width);
      for (let d = 0; d <= top; d++) {
        for (let s = -d; s <= d; s += 2) {
          const m = mass[d * width + offset + s]!;
          if (m === 0) continue;
          next[d * width + offset + s]! += m * (1 - 2 * discordant);
          // Beyond the window the suite looks no more: its mass cannot cross.
          if (d + 1 > last) continue;
          next[(d + 1) * width + offset + s + 1]! += m * discordant;
          next[(d + 1) * width + offset + s - 1]! += m * discordant;
        }
      }
      top = Math.min(top + 1, last);
      [mass, next] = [next, mass];
    }
    for (let d = first; d <= top; d++) {
      for (let s = 1; s <= d; s++) {
        const index = d * width + offset + s;
        if (mass[index]! > 0 && s / Math.sqrt(d) >= critical - 1e-9) {
          crossed += mass[index]!;
          mass[index] = 0;
        }
      }
    }
  }
  return crossed;
}

t.test('at real pass rates, different per conversation, the suite stays within its bound', async (t) => {
  const spreads = [[0.5], [0.9], [0.99], [0.5, 0.7, 0.9, 0.99], [0.6, 0.95]];
  for (const [conversations, rounds] of [
    [2, 20],
    [3, 60],
    [10, 20],
    [10, 40],
    [20, 10],
  ] as const) {
    const design = designSuite('sequential', 0.015, conversations, rounds)!;
    const bound = walkCrossing(design.critical, design.first, design.last);
    for (const spread of spreads) {
      const rates = Array.from({ length: conversations }, (_, i) => spread[i % spread.length]!);
      const rate = suiteFalseAlarm(design, rates, rounds);
      t.ok(
        rate <= bound + 1e-12,
        `K ${conversations}, R ${rounds}, rates ${spread.join('/')}: ${rate.toExponential(3)} ≤ ${bound.toExponential(3)}`,
      );
    }
  }
});

t.test('repeat: the exact sign test on the discordant pairs, by hand', async (t) => {
  t.ok(Math.abs(signTail(5, 5) - 1 / 32) < 1e-15);
  t.ok(Math.abs(signTail(4, 3) - 5 / 16) < 1e-15);
  t.equal(signTail(10, 0), 1);
  // 60 discordant pairs, 40 of them won by the baseline: P(Bin(60, ½) ≥ 40) (R: pbinom(39, 60, 0.5, lower = FALSE)).
  t.ok(Math.abs(signTail(60, 40) - 0.0067446468655959) < 1e-12, `${signTail(60, 40)}`);
});

t.test('the pooled difference and its interval', async (t) => {
  t.equal(pooledDifference([]), null);
  const ten = Array.from({ length: 10 }, () => ({ pairs: 40, baselineOnly: 7, candidateOnly: 3 }));
  const pooled = pooledDifference(ten)!;
  t.equal(pooled.estimate, -0.1, '40 baseline-only against… : (30 − 70)/400');
  t.ok(pooled.low < -0.1 && pooled.high > -0.1 && pooled.high < 0, `${pooled.low} to ${pooled.high}`);
  const none = pooledDifference([{ pairs: 20, baselineOnly: 0, candidateOnly: 0 }])!;
  t.ok(none.estimate === 0 && none.low < 0 && none.high > 0, 'no discordant pair is not a point');
});

t.test('a drop spread over every conversation: the suite says regressed, no conversation does', async (t) => {
  const gate = createGate({ conversations: 10, mode: { kind: 'sequential', max: 40 } });
  const states = Array.from({ length: 10 }, () => gate.conversation());
  // Every conversation, every ten rounds: 9 passes on the baseline, 8 on the candidate, arranged
  // so that no single conversation's counts come near its own boundary.
  const baseline = [true, true, true, true, true, true, true, true, true, false];
  const candidate = [true, true, false, true, true, true, true, true, false, true];
  for (let round = 0; round < 40; round++) {
    states.forEach((state, i) => {
      if (gate.goesOn(i)) state.record(baseline[round % 10]!, candidate[(round + i) % 10]!);
    });
  }
  const { conversations, suite } = await gate.finalize();
  t.same(
    conversations.map((c) => c.verdict),
    Array.from({ length: 10 }, () => 'unchanged'),
  );
  t.match(suite, { verdict: 'regressed', stop: 'decided' });
  t.ok(suite!.p_regressed <= suite!.p_needed, `p ${suite!.p_regressed} ≤ ${suite!.p_needed}`);
  t.ok(suite!.difference!.estimate! < 0 && suite!.difference!.high < 0, 'the pooled interval lies below 0');
  t.ok(
    states.some((s) => s.stop === 'futile' || s.rounds > 5),
    'conversations went on past their own futility while the suite needed them',
  );
});

t.test('conversations stop only when neither they nor the suite need more rounds', async (t) => {
  const gate = createGate({ conversations: 3, mode: { kind: 'sequential', max: 60 } });
  const states = [gate.conversation(), gate.conversation(), gate.conversation()];
  // All three alike on both sides: each is futile early; the suite needs them until it is too.
  let round = 0;
  while (states.some((_, i) => gate.goesOn(i)) && round < 60) {
    states.forEach((s, i) => {
      if (gate.goesOn(i)) s.record(round % 4 !== 0, round % 4 !== 0);
    });
    round++;
  }
  t.ok(
    states.every((s) => s.stop === 'futile'),
    'every one futile',
  );
  t.ok(round < 60, `stopped after ${round} rounds: the suite was out of reach too`);
  t.notOk(gate.goesOn(0));
  // A decided conversation never goes on.
  const decided = createGate({ conversations: 2, mode: { kind: 'sequential', max: 20 } });
  const a = decided.conversation();
  decided.conversation();
  while (a.record(true, false).stop === null);
  t.equal(a.stop, 'decided');
  t.notOk(decided.goesOn(0));
  t.ok(decided.goesOn(1));
});

t.test('the suite is out of reach exactly when no path of the pairs to come crosses its boundary the regression way', async (t) => {
  // Every path of up to `toCome` more discordant pairs (fewer: the rest concordant), by brute force.
  const crossesSomeWay = (design: NonNullable<ReturnType<typeof designSuite>>, d: number, walk: number, toCome: number): boolean => {
    if (toCome === 0 || d >= design.last) return false;
    return [1, -1].some((step) => {
      const look: SuiteLook = { round: 0, pairs: d + 1, baselineOnly: (d + 1 + walk + step) / 2, candidateOnly: (d + 1 - walk - step) / 2 };
      return suiteCrossing(design, look) === 'regressed' || crossesSomeWay(design, d + 1, walk + step, toCome - 1);
    });
  };
  let checked = 0;
  let unreachable = 0;
  for (const [conversations, rounds, level] of [
    [3, 4, 0.2],
    [2, 6, 0.1],
    [4, 5, 0.05],
  ] as const) {
    const design = designSuite('sequential', level, conversations, rounds)!;
    t.ok(Number.isFinite(design.critical), `K ${conversations}, R ${rounds}: a boundary to reach`);
    for (let d = 0; d <= design.last; d++) {
      for (let walk = -d; walk <= d; walk += 2) {
        const look: SuiteLook = { round: 0, pairs: d, baselineOnly: (d + walk) / 2, candidateOnly: (d - walk) / 2 };
        // A look that crossed has stopped the suite already.
        if (suiteCrossing(design, look) !== null) continue;
        for (let toCome = 0; toCome <= conversations * rounds - d; toCome++) {
          const reachable = suiteReachable(design, look, toCome);
          t.equal(reachable, crossesSomeWay(design, d, walk, toCome), `d ${d}, S ${walk}, ${toCome} to come`);
          checked++;
          if (!reachable) {
            unreachable++;
            // Out of reach is futile at any threshold, futility on the odds off included.
            t.ok(suiteFutile(design, look, toCome, 0) && suiteFutile(design, look, toCome, 0.05), 'futile');
          }
        }
      }
    }
  }
  t.ok(unreachable > 0 && unreachable < checked, `${unreachable} of ${checked} looks out of reach`);
});

t.test('a futile conversation plays on for a regression of the suite, not for a fix', async (t) => {
  // Ten conversations, 60 rounds: a look a third of the way, 36 pairs of 180 discordant.
  const design = designSuite('sequential', 0.02, 10, 60)!;
  const look = (baselineOnly: number, candidateOnly: number): SuiteLook => ({ round: 20, pairs: 200, baselineOnly, candidateOnly });
  const toCome = 10 * 40;
  t.notOk(suiteFutile(design, look(24, 12), toCome, 0.05), 'the baseline ahead: a regression within reach, it plays on');
  t.ok(suiteFutile(design, look(12, 24), toCome, 0.05), 'the candidate ahead as much: a fix within reach, it stops');
  t.ok(suiteReachable(design, look(12, 24), toCome), 'though a regression is not out of every path');
  const early: SuiteLook = { round: 10, pairs: 100, baselineOnly: 10, candidateOnly: 10 };
  t.notOk(suiteFutile(design, early, 10 * 50, 0.05), 'level, early: a regression still likely enough');
});

type Outcome = [boolean, boolean];
const OUTCOMES: Outcome[] = [
  [true, true],
  [true, false],
  [false, true],
  [false, false],
];

/**
 * Every path of a comparison driven as the runner drives it (each round, every conversation that
 * goes on plays one), to its end: the chance of any `regressed` (a conversation or the suite) as
 * a polynomial in each conversation's rate, kept as path counts by each conversation's passes and
 * attempts.
 */
function flaggedPaths(gate: Gate, conversations: number, stops = { forAFix: 0 }): Map<string, number> {
  const flagged = new Map<string, number>();
  const counts = (passes: number[], attempts: number[]) => passes.map((p, i) => `${p}/${attempts[i]}`).join(' ');
  const go = (state: Gate, passes: number[], attempts: number[]): void => {
    const open = Array.from({ length: conversations }, (_, i) => i).filter((i) => state.goesOn(i));
    for (let i = 0; i < conversations; i++) if (!open.includes(i) && stoppedWithAFixInReach(state, conversations, i)) stops.forAFix++;
    if (open.length === 0) {
      const { conversations: verdicts, suite } = state.decide();
      if (suite === 'regressed' || verdicts.includes('regressed')) {
        const key = counts(passes, attempts);
        flagged.set(key, (flagged.get(key) ?? 0) + 1);
      }
      return;
    }
    const total = OUTCOMES.length ** open.length;
    for (let code = 0; code < total; code++) {
      const next = state.clone();
      const p = [...passes];
      const a = [...attempts];
      let rest = code;
      for (const i of open) {
        const [baseline, candidate] = OUTCOMES[rest % 4]!;
        rest = Math.floor(rest / 4);
        next.state(i).record(baseline, candidate);
        p[i]! += Number(baseline) + Number(candidate);
        a[i]! += 2;
      }
      go(next, p, a);
    }
  };
  go(gate, Array<number>(conversations).fill(0), Array<number>(conversations).fill(0));
  return flagged;
}

/**
 * Whether conversation i stopped as futile where the suite's test could still have found a fix on
 * some path (the look `Gate.goesOn` reads, mirrored): where the rule before issue 43 played on.
 */
function stoppedWithAFixInReach(gate: Gate, conversations: number, index: number): boolean {
  const conversation = gate.state(index);
  if (conversation.stop !== 'futile' || gate.mode === 'repeat' || gate.suiteLevel === null) return false;
  const design = designSuite('sequential', gate.suiteLevel, conversations, gate.maxRounds)!;
  const { look, roundsLeft } = gate.suiteLook(conversation.rounds);
  const mirrored: SuiteLook = { ...look, baselineOnly: look.candidateOnly, candidateOnly: look.baselineOnly };
  return suiteCrossing(design, mirrored) === null && suiteReachable(design, mirrored, roundsLeft);
}

/** The chance of the flagged paths when conversation i passes with rate rates[i] on both sides. */
function chance(flagged: Map<string, number>, rates: number[]): number {
  let sum = 0;
  for (const [key, count] of flagged) {
    let probability = count;
    key.split(' ').forEach((part, i) => {
      const [passes, attempts] = part.split('/').map(Number) as [number, number];
      probability *= rates[i]! ** passes * (1 - rates[i]!) ** (attempts - passes);
    });
    sum += probability;
  }
  return sum;
}

t.test('the whole gate, exactly: any false regressed ≤ 1 − confidence, 1 to 3 conversations', async (t) => {
  // The suite keeps a futile conversation playing for a regression only: the enumeration holds
  // paths where one stopped though the suite could still have found a fix.
  const stops = { forAFix: 0 };
  const grid = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];
  const cases = [
    { conversations: 1, mode: { kind: 'sequential', min: 2, max: 6 } as const },
    { conversations: 2, mode: { kind: 'sequential', min: 2, max: 4 } as const },
    { conversations: 3, mode: { kind: 'sequential', min: 2, max: 3 } as const },
    { conversations: 2, mode: { kind: 'repeat', attempts: 3 } as const },
    { conversations: 3, mode: { kind: 'repeat', attempts: 2 } as const },
  ];
  for (const confidence of [0.5, 0.8]) {
    for (const { conversations, mode } of cases) {
      const gate = createGate({ confidence, conversations, mode });
      for (let i = 0; i < conversations; i++) gate.conversation();
      const flagged = flaggedPaths(gate, conversations, stops);
      let worst = { rate: 0, rates: [] as number[] };
      const each = (prefix: number[]): void => {
        if (prefix.length === conversations) {
          const rate = chance(flagged, prefix);
          if (rate > worst.rate) worst = { rate, rates: prefix };
          return;
        }
        for (const p of grid) each([...prefix, p]);
      };
      each([]);
      const alpha = 1 - confidence;
      t.ok(
        worst.rate <= alpha + 1e-12,
        `confidence ${confidence}, ${conversations} conversation(s), ${mode.kind}: ` +
          `worst ${worst.rate.toFixed(5)} ≤ ${alpha.toFixed(2)} at ${worst.rates.join('/')}`,
      );
    }
  }
  t.ok(stops.forAFix > 0, `${stops.forAFix} stops with a fix of the suite still in reach`);
});
