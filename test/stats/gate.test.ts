import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { barnardPValue, createGate, holm } from '../../src/stats/index.js';
import { describeVerdict, formatP, pValueText } from '../../src/suites/report/wording.js';
import {
  boundaryShape,
  criticalValue,
  crossingPolynomial,
  crossingProbability,
  crossingTable,
  pooledZ,
} from '../../src/stats/unconditional.js';

t.test('the crossing probability by path counts equals the enumeration of every path; C is the tightest', async (t) => {
  for (const [firstLook, maxPairs] of [
    [1, 4],
    [2, 5],
    [5, 5],
  ] as const) {
    const values = new Set<number>();
    for (let n = firstLook; n <= maxPairs; n++) {
      for (let x = 1; x <= n; x++) for (let y = 0; y < x; y++) values.add(pooledZ(n, x, n, y) / boundaryShape(n, maxPairs));
    }
    for (const threshold of [...values].sort((a, b) => a - b)) {
      const polynomial = crossingPolynomial(crossingTable(threshold, firstLook, maxPairs));
      for (const p of [0.3, 0.5, 0.9]) {
        // Every sequence of 2·R outcomes (baseline, candidate per pair): crossed when some look's z/g reaches the threshold.
        let crossed = 0;
        for (let path = 0; path < 4 ** maxPairs; path++) {
          let [x, y, probability, hit] = [0, 0, 1, false];
          for (let n = 1; n <= maxPairs; n++) {
            const b = (path >> (2 * (n - 1))) & 1;
            const c = (path >> (2 * (n - 1) + 1)) & 1;
            x += b;
            y += c;
            probability *= (b ? p : 1 - p) * (c ? p : 1 - p);
            if (!hit && n >= firstLook && pooledZ(n, x, n, y) / boundaryShape(n, maxPairs) >= threshold - 1e-9) hit = true;
          }
          if (hit) crossed += probability;
        }
        const computed = polynomial.logWeight.reduce(
          (sum, log, i) => sum + Math.exp(log) * p ** polynomial.passes[i]! * (1 - p) ** (polynomial.attempts[i]! - polynomial.passes[i]!),
          0,
        );
        t.ok(Math.abs(computed - crossed) < 1e-12, `looks ${firstLook}–${maxPairs}, threshold ${threshold.toFixed(3)}, p ${p}`);
      }
    }
    for (const level of [0.05, 0.02]) {
      const critical = criticalValue(level, firstLook, maxPairs);
      const below = [...values].filter((v) => v < critical - 1e-9);
      t.ok(crossingProbability(critical, firstLook, maxPairs) <= level, `C(${level}) keeps the level`);
      if (below.length > 0) t.ok(crossingProbability(Math.max(...below), firstLook, maxPairs) > level, 'and the next value down does not');
    }
  }
  t.equal(criticalValue(0.005, 3, 3), Infinity, 'three pairs cannot reach 0.005 (3/3 against 0/3 is 1/64): the rule never rejects');
});

t.test('record: pairs by order of judged attempts, errors left out, stops', async (t) => {
  const gate = createGate({ conversations: 1, mode: { kind: 'sequential', min: 3, max: 10 } });
  const c = gate.conversation();
  t.same(c.record(true, null), { stop: null });
  t.same(c.discordant, { baselineOnly: 0, candidateOnly: 0 }, 'the baseline attempt waits for a judged candidate attempt');
  t.same(c.record(null, false), { stop: null });
  t.same(c.discordant, { baselineOnly: 1, candidateOnly: 0 }, 'paired with the next judged one, rounds apart');
  c.record(true, true);
  t.equal(c.rounds, 3);
  const verdicts = (await gate.finalize()).conversations;
  t.match(verdicts[0], {
    baseline: { attempts: 2, passed: 2, errors: 1 },
    candidate: { attempts: 2, passed: 1, errors: 1 },
    discordant: { baseline_only: 1, candidate_only: 0 },
    rounds: 3,
    stop: null,
  });

  const strong = createGate({ conversations: 1, mode: { kind: 'sequential', max: 20 } });
  const s = strong.conversation();
  const stops: Array<string | null> = [];
  while (stops.length < 20 && stops.at(-1) == null) stops.push(s.record(true, false).stop);
  t.same(stops.slice(0, 4), [null, null, null, null], 'nothing stops before min_attempts (5)');
  t.equal(stops.at(-1), 'decided', `decided after ${stops.length} rounds of straight regressions`);
  t.equal(stops.length, 5, '5 of 5 against 0 of 5 decide at the first look');
  t.throws(() => s.record(true, true), /stopped/);
  const [result] = (await strong.finalize()).conversations;
  t.equal(result!.verdict, 'regressed');
  t.ok(result!.p_regressed! <= 0.05 && result!.p_fixed === 1);
  t.equal(result!.detectable_drop, null, 'only an unchanged verdict carries a detectable drop');
  t.match(
    describeVerdict(result!, 1),
    /^the candidate passes 100 points less often \(95 % interval −\d+ to −\d+\); p = 0\.0\d+: a drop this large would happen by chance [\d.]+ % of the time if nothing had changed; 0\.05 or less was needed with 1 conversation$/,
  );

  const repeat = createGate({ conversations: 2, mode: { kind: 'repeat', attempts: 3 } });
  const r = repeat.conversation();
  t.same([r.record(true, false).stop, r.record(true, false).stop, r.record(true, false).stop], [null, null, 'budget']);
  t.ok(Math.abs(r.pValues()!.regressed - 1 / 64) < 1e-12, 'repeat: Barnard’s p-value, sup p³(1 − p)³ = 1/64 (the sign test said 1/8)');
});

t.test('finalize: Holm over comparable conversations, error without a judged attempt', async (t) => {
  const gate = createGate({ conversations: 3, mode: { kind: 'repeat', attempts: 12 } });
  const regressed = gate.conversation();
  const unchanged = gate.conversation();
  const broken = gate.conversation();
  for (let i = 0; i < 12; i++) {
    regressed.record(true, i < 1);
    unchanged.record(i % 2 === 0, i % 3 === 0);
    broken.record(null, true);
  }
  const [a, b, c] = (await gate.finalize()).conversations;
  t.equal(a!.verdict, 'regressed', `p ${a!.p_regressed}`);
  t.equal(a!.p_regressed, barnardPValue(12, 12, 12, 1));
  t.equal(b!.verdict, 'unchanged');
  t.ok(b!.detectable_drop === null || b!.detectable_drop > 0);
  t.match(describeVerdict(b!, 3), /^no difference found: the candidate passed 4 of 12 against 6 of 12/);
  t.match(c, { verdict: 'error', p_regressed: null, p_fixed: null, difference: null, baseline: { attempts: 0, errors: 12 } });
  t.equal(describeVerdict(c!, 3), 'cannot be compared: the baseline has no attempt that could be judged');
  t.same(a!.baseline.pass_hat_k.length, 8);
});

t.test('a fix, and an unchanged verdict too short to catch anything', async (t) => {
  const gate = createGate({ conversations: 2, mode: { kind: 'sequential', max: 40 } });
  const fixed = gate.conversation();
  while (fixed.record(false, true).stop === null);
  const [a] = (await gate.finalize()).conversations;
  t.match(a, { verdict: 'fixed', p_regressed: 1, stop: 'decided', discordant: { baseline_only: 0, candidate_only: fixed.rounds } });
  t.match(describeVerdict(a!, 2), /^the candidate passes 100 points more often .*needed with 2 conversations$/);
  // Twenty conversations, at most 4 rounds: 4 of 4 against 0 of 4 is 1/256, above 0.6·α/20 = 0.0015:
  // nothing can be decided, so it stops at the first look (round 2).
  const small = createGate({ conversations: 20, mode: { kind: 'sequential', min: 2, max: 4 } });
  const short = small.conversation();
  t.same([short.record(true, false).stop, short.record(true, false).stop], [null, 'futile']);
  const [b] = (await small.finalize()).conversations;
  t.match(b, { verdict: 'unchanged', detectable_drop: null, rounds: 2 });
  t.match(describeVerdict(b!, 20), /the gate as designed has too few attempts to catch any drop reliably$/);
});

t.test('a conversation stopped at its boundary has the side it crossed to as its verdict, whatever the others do', async (t) => {
  // A seeded walk: the same draws on every run.
  let seed = 7;
  const draw = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let crossings = 0;
  for (let trial = 0; trial < 60; trial++) {
    const conversations = 2 + (trial % 4);
    const max = 6 + (trial % 3) * 5;
    const gate = createGate({ conversations, mode: { kind: 'sequential', min: 3, max } });
    const rates = Array.from({ length: conversations }, () => [draw(), draw()] as const);
    const states = rates.map(() => gate.conversation());
    for (let round = 0; round < max; round++) {
      states.forEach((state, i) => {
        if (gate.goesOn(i) && !state.finished) state.record(draw() < rates[i]![0], draw() < rates[i]![1]);
      });
    }
    const { conversations: verdicts } = gate.decide();
    states.forEach((state, i) => {
      t.equal(state.crossed !== null, state.stop === 'decided', 'crossed exactly when stopped decided');
      if (state.crossed === null) return;
      crossings++;
      t.equal(verdicts[i], state.crossed, `trial ${trial}, conversation ${i}: the verdict is the crossing's`);
    });
  }
  t.ok(crossings > 20, `${crossings} crossings`);
});

t.test("Holm's step-down, by hand", async (t) => {
  const verdicts = (ps: number[]) => holm(ps, 0.05).map((r) => r.rejected);
  t.same(verdicts([0.01, 0.04, 0.03, 0.005]), [true, false, false, true], '0.005 ≤ .0125, 0.01 ≤ .0167, 0.03 > .025: stop');
  t.same(verdicts([0.01, 0.015, 0.024, 0.05]), [true, true, true, true], 'each at its own step: .0125, .0167, .025, .05');
  t.same(verdicts([0.01, 0.02, 0.03, 0.04]), [true, false, false, false], '0.02 > .0167: Holm stops at the second step');
  t.same(verdicts([0.013, 0.001]), [true, true], '0.001 ≤ .025, then 0.013 ≤ .05');
  t.same(verdicts([0.06, 0.001]), [false, true]);
  t.same(verdicts([0.3, 0.2]), [false, false]);
  t.same(verdicts([]), []);
  t.same(
    holm([0.03, 0.001, 0.5], 0.05).map((r) => r.threshold),
    [0.025, 0.05 / 3, 0.025],
    'thresholds: their step, and the stopping step for those never reached',
  );
});

t.test('the detectable drop shrinks as rounds grow; an unchanged verdict reports the design’s', async (t) => {
  const gate = createGate({ conversations: 10, mode: { kind: 'sequential', max: 60 } });
  const drops = await Promise.all([10, 20, 30, 40, 60].map((rounds) => gate.detectableDrop(0.9, rounds)));
  t.equal(drops[0], null, 'ten rounds cannot catch any drop from 0.9 at 0.003');
  const found = drops.slice(1).map((d) => d!);
  t.ok(
    found.every((d, i) => i === 0 || d <= found[i - 1]!),
    `monotone: ${found.join(', ')}`,
  );
  t.equal(found.at(-1), 0.3, 'R = 60: 0.9 → 0.6 is just caught 80 % of the time, early stops included');
  t.ok(gate.power(0.9, 0.6) >= 0.8 && gate.power(0.9, 0.61) < 0.8);
  // Stopped for futility after a few rounds: the drop said is the one the rule, with its early
  // stops, catches 80 % of the time over its budget, not the one its few rounds alone would have.
  const same = gate.conversation();
  for (let round = 0; same.stop === null; round++) same.record(round % 10 !== 0, round % 10 !== 0);
  const [verdict] = (await gate.finalize()).conversations;
  const baselineRate = verdict!.baseline.rate!;
  t.match(verdict, { verdict: 'unchanged', stop: 'futile', detectable_drop: await gate.detectableDrop(baselineRate, 60) });
  t.ok(same.rounds < 60, `stopped after ${same.rounds} rounds`);
  t.ok(verdict!.detectable_drop! < ((await gate.detectableDrop(baselineRate, same.rounds)) ?? 1), `${verdict!.detectable_drop}`);
  const repeat = createGate({ conversations: 1, mode: { kind: 'repeat', attempts: 20 } });
  t.ok(((await repeat.detectableDrop(0.9, 20)) ?? 1) < ((await repeat.detectableDrop(0.9, 10)) ?? 1));
});

t.test('finalize lets the event loop turn while it searches the detectable drops', async (t) => {
  // Each power in the search is a DP (up to about 30 ms at max 200): other work (a live conversation's
  // turn) must get the loop between them, not wait for every drop of the report.
  const gate = createGate({ conversations: 2, mode: { kind: 'repeat', attempts: 20 } });
  const states = [gate.conversation(), gate.conversation()];
  for (const [index, state] of states.entries()) {
    // Both sides alike, passing 0.9 and 0.8 of the rounds: unchanged, each its own search.
    for (let round = 0; state.stop === null; round++) {
      const passed = round % (10 / (index + 1)) !== 0;
      state.record(passed, passed);
    }
  }
  let turns = 0;
  let searching = true;
  const turn = () => {
    if (!searching) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  const verdicts = (await gate.finalize()).conversations;
  searching = false;
  t.same(
    verdicts.map((v) => v.verdict),
    ['unchanged', 'unchanged'],
  );
  t.ok(
    verdicts.every((v) => v.detectable_drop !== null),
    'both have a detectable drop',
  );
  // One search is a power at the largest drop, a bisection over 90 steps (7) and a check one step down.
  t.ok(turns >= 9, `the loop turned ${turns} times during the search`);
});

t.test('options are checked', async (t) => {
  t.throws(() => createGate({ conversations: 0, mode: { kind: 'repeat', attempts: 3 } }), RangeError);
  t.throws(() => createGate({ confidence: 1, conversations: 1, mode: { kind: 'repeat', attempts: 3 } }), RangeError);
  t.throws(() => createGate({ conversations: 1, mode: { kind: 'repeat', attempts: 0 } }), RangeError);
  t.throws(() => createGate({ conversations: 1, mode: { kind: 'sequential', max: 0 } }), RangeError);
  t.throws(() => createGate({ conversations: 1, mode: { kind: 'sequential', max: 10 }, futility: 1 }), RangeError);
  t.equal(createGate({ conversations: 1, mode: { kind: 'sequential', min: 9, max: 4 } }).minRounds, 4, 'min is at most max');
  t.same([formatP(0.00083), formatP(0.0345), formatP(1), formatP(0.00001)], ['0.0008', '0.035', '1', '< 0.0001']);
  t.equal(
    pValueText(0.013, 0.0167, 'drop', 3),
    'p = 0.013: a drop this large would happen by chance 1.3 % of the time if nothing had changed; ' +
      '0.017 or less was needed with 3 conversations',
    'the p-value and the level needed, in words',
  );
  t.match(pValueText(0.00083, 0.005, 'gain', 10), /^p = 0\.0008: a gain this large would happen by chance 0\.08 % of the time/);
  t.match(pValueText(1, 0.05, 'difference', 1), /^p = 1: a difference this large would happen by chance every time if nothing had changed/);
  t.match(pValueText(0.00001, 0.05, 'drop', 1), /by chance less than 0\.01 % of the time/);
});

t.test('src/stats imports nothing from the rest of src/ (and no package)', async (t) => {
  const folder = new URL('../../src/stats/', import.meta.url);
  for (const file of readdirSync(folder)) {
    const source = readFileSync(new URL(file, folder), 'utf8');
    for (const [, specifier] of source.matchAll(/from '([^']+)'/g)) t.match(specifier, /^\.\/[\w-]+\.js$/, `${file}: ${specifier}`);
  }
});
