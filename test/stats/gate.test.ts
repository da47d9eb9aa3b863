import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { createGate, describeVerdict, fairTail, formatP, holm } from '../../src/stats/index.js';
import { criticalValue, crossingProbability, sequentialPValue } from '../../src/stats/sequential.js';

t.test('the boundary: F_N(c) by DP equals the enumeration of every fair-coin path, c is the largest', async (t) => {
  for (const horizon of [1, 4, 9, 12]) {
    for (const level of [0.05, 0.005]) {
      const critical = criticalValue(level, horizon);
      const tails = new Set<number>();
      for (let m = 1; m <= horizon; m++) for (let s = 1; s <= m; s++) tails.add(fairTail(m, s));
      for (const c of [...tails]) {
        // Enumerate all 2^N paths: a path crosses when some prefix's nominal p-value is ≤ c.
        let crossed = 0;
        for (let path = 0; path < 2 ** horizon; path++) {
          let s = 0;
          for (let m = 1; m <= horizon; m++) {
            s += (path >> (m - 1)) & 1;
            if (fairTail(m, s) <= c) {
              crossed++;
              break;
            }
          }
        }
        t.equal(crossingProbability(c, horizon), crossed / 2 ** horizon, `N ${horizon}, c ${c}`);
        if (c <= critical) t.ok(crossingProbability(c, horizon) <= level);
        else t.ok(crossingProbability(c, horizon) > level, `c = ${critical} is the largest for ${level}, N ${horizon}`);
      }
    }
  }
  t.equal(criticalValue(0.005, 3), 0, 'three pairs cannot reach 0.005: the rule never rejects');
  t.equal(sequentialPValue(1, 30), 1);
  t.ok(sequentialPValue(criticalValue(0.005, 30), 30) <= 0.005);
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
  const verdicts = await gate.finalize([c]);
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
  t.ok(stops.length <= 8);
  t.throws(() => s.record(true, true), /stopped/);
  const [result] = await strong.finalize([s]);
  t.equal(result!.verdict, 'regressed');
  t.ok(result!.p_regressed! <= 0.05 && result!.p_fixed === 1);
  t.equal(result!.detectable_drop, null, 'only an unchanged verdict carries a detectable drop');
  t.match(
    describeVerdict(result!, 1),
    /^the candidate passes 100 points less often \(95 % interval −\d+ to −\d+\); p = 0\.0\d+, at or below/,
  );

  const repeat = createGate({ conversations: 2, mode: { kind: 'repeat', attempts: 3 } });
  const r = repeat.conversation();
  t.same([r.record(true, false).stop, r.record(true, false).stop, r.record(true, false).stop], [null, null, 'budget']);
  t.equal(r.pValues()!.regressed, 1 / 8, 'repeat: the fixed-design p-value');
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
  const [a, b, c] = await gate.finalize([regressed, unchanged, broken]);
  t.equal(a!.verdict, 'regressed', `p ${a!.p_regressed}`);
  t.equal(a!.p_regressed, fairTail(11, 11));
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
  const [a] = await gate.finalize([fixed, gate.conversation()]);
  t.match(a, { verdict: 'fixed', p_regressed: 1, stop: 'decided', discordant: { baseline_only: 0, candidate_only: fixed.rounds } });
  t.match(describeVerdict(a!, 2), /^the candidate passes 100 points more often .*needed with 2 conversations$/);
  // max 10: N = 5 pairs, and 1/32 never reaches α/2 = 0.025: nothing can be decided, so it stops at round 5.
  const small = createGate({ conversations: 2, mode: { kind: 'sequential', max: 10 } });
  const short = small.conversation();
  const stops = Array.from({ length: 5 }, (_, i) => short.record(true, i === 0).stop);
  t.same(stops, [null, null, null, null, 'futile']);
  const [b] = await small.finalize([short]);
  t.match(b, { verdict: 'unchanged', detectable_drop: null, rounds: 5 });
  t.match(describeVerdict(b!, 2), /these attempts were too few to catch any drop reliably$/);
});

t.test('a budget under twice min_attempts: the first look uses every pair it has', async (t) => {
  // max 6: ⌈6/2⌉ = 3 pairs would cap the walk below the first look (round 5), where 3 of 3 one way
  // is 1/8 at best; the boundary spans min_attempts' 5 pairs instead, and 5 of 5 (1/32) decide.
  const gate = createGate({ conversations: 1, mode: { kind: 'sequential', max: 6 } });
  const c = gate.conversation();
  const stops = Array.from({ length: 5 }, () => c.record(false, true).stop);
  t.same(stops, [null, null, null, null, 'decided']);
  const [verdict] = await gate.finalize([c]);
  t.match(verdict, { verdict: 'fixed', rounds: 5, discordant: { baseline_only: 0, candidate_only: 5 } });
  t.ok(verdict!.p_fixed! <= 0.05, `p ${verdict!.p_fixed}`);
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

t.test('the detectable drop shrinks as rounds grow', async (t) => {
  const gate = createGate({ conversations: 10, mode: { kind: 'sequential', max: 60 } });
  const drops = await Promise.all([10, 20, 30, 40, 60].map((rounds) => gate.detectableDrop(0.9, rounds)));
  t.equal(drops[0], null, 'ten rounds cannot catch any drop from 0.9 at 0.005');
  const found = drops.slice(1).map((d) => d!);
  t.ok(
    found.every((d, i) => i === 0 || d <= found[i - 1]!),
    `monotone: ${found.join(', ')}`,
  );
  t.equal(found.at(-1), 0.3, 'R = 60: 0.9 → 0.6 is just caught 80 % of the time');
  t.ok(gate.power(0.9, 0.6) >= 0.8 && gate.power(0.9, 0.61) < 0.8);
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
  const verdicts = await gate.finalize(states);
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
});

t.test('src/stats imports nothing from the rest of src/ (and no package)', async (t) => {
  const folder = new URL('../../src/stats/', import.meta.url);
  for (const file of readdirSync(folder)) {
    const source = readFileSync(new URL(file, folder), 'utf8');
    for (const [, specifier] of source.matchAll(/from '([^']+)'/g)) t.match(specifier, /^\.\/[\w-]+\.js$/, `${file}: ${specifier}`);
  }
});
