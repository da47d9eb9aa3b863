// `npm run bench:gate`: the release gate's decision rules, by seeded simulation of comparisons
// of 10 conversations whose attempts pass at random (Bernoulli, a seeded PRNG: the same figures
// every run on every machine). Pure computation: no gateway, no simulator.
//
// Rules compared, side by side:
// - today's: `repeat: 3`, a conversation "regressed" when the baseline passed all three attempts
//   (status passed, `pass_rate` 1) and the candidate did not;
// - the sign test (the gate before issue 35, frozen in bench/sign-test-gate.ts): the discordant
//   pairs only, Pocock boundary, futility 0.01;
// - the gate of src/stats/ with the conversations' tests alone (every attempt: Barnard's test, the
//   Wang–Tsiatis boundary on the pooled z, futility 0.04; `suiteShare: 0`);
// - the same with the suite's verdict (the default: the stratified sign test over every
//   conversation's discordant pairs holding 0.4 of α, a futile conversation kept going while a
//   regression of the suite is within reach);
// - that, with the rule before issue 43 (bench/suite-futility-before.ts: kept going while the
//   suite could decide either way), the last rows, so that the figures before and after come
//   from one run;
// each in its fixed design (`repeat: 20`) and its sequential one (`max_attempts` 20, the default,
// and 60; `min_attempts` 5).
// Figures per rule: the false-alarm rate (any conversation regressed when all 10 are identical,
// at pass rates 0.7, 0.9, 0.99), the power to flag the one conversation of ten that dropped
// from 0.9 to 0.6, the share of comparisons flagged when every conversation dropped a little
// (0.9 → 0.8, 0.9 → 0.85: the diffuse drop), and the sessions spent against the budget; then, for
// the sequential gate at max 60, the rounds a drop takes to be decided. Verdicts are Holm's over
// the p-values (what `Gate.finalize` does, without its reported numbers).
// Options: --comparisons N (default 2000), --seed S (default 1).
// Output: tables, then the last line of stdout is one JSON object.
import { createGate, holm, type GateMode } from '../src/stats/index.js';
import { SignTestConversation, signTestDesign } from './sign-test-gate.js';
import { goesOnBefore } from './suite-futility-before.js';
const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(name);
  return at < 0 ? fallback : Number(args[at + 1]);
};
const COMPARISONS = option('--comparisons', 2000);
const SEED = option('--seed', 1);
const CONVERSATIONS = 10;
const ALPHA = 0.05;
/** The diffuse drops: every conversation from 0.9 to these. */
const DIFFUSE = [0.8, 0.85];

/** mulberry32: a small seeded PRNG, uniform on [0, 1). */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** One comparison's outcome: per conversation, whether it is regressed and the rounds it ran; whether the suite as a whole is. */
interface Outcome {
  conversations: Array<{ regressed: boolean; rounds: number }>;
  suite: boolean;
}

interface Rule {
  name: string;
  /** The rule whose seeded stream it draws its attempts from (by default its own). */
  replays?: string;
  /** Rounds (attempts per side) at most. */
  budget: number;
  compare(rates: Array<[number, number]>, random: () => number): Outcome;
}

/** Anything flagged: a conversation, or the suite. */
const flagged = (outcome: Outcome): boolean => outcome.suite || outcome.conversations.some((o) => o.regressed);
const roundsOf = (outcome: Outcome): number => outcome.conversations.reduce((sum, o) => sum + o.rounds, 0);

const today: Rule = {
  name: 'today: repeat 3, baseline 3/3 and candidate not',
  budget: 3,
  compare: (rates, random) => ({
    suite: false,
    conversations: rates.map(([baseline, candidate]) => {
      let baselineAll = true;
      let candidateAll = true;
      for (let i = 0; i < 3; i++) {
        baselineAll &&= random() < baseline;
        candidateAll &&= random() < candidate;
      }
      return { regressed: baselineAll && !candidateAll, rounds: 3 };
    }),
  }),
};

/** The gate of src/stats with the conversations' tests alone (`suiteShare: 0`, the rule before the suite's verdict). */
function gateRule(name: string, mode: GateMode): Rule {
  const budget = createGate({ confidence: 1 - ALPHA, conversations: CONVERSATIONS, mode, suiteShare: 0 }).maxRounds;
  return {
    name,
    budget,
    compare: (rates, random) => {
      const gate = createGate({ confidence: 1 - ALPHA, conversations: CONVERSATIONS, mode, suiteShare: 0 });
      const states = rates.map(([baseline, candidate]) => {
        const state = gate.conversation();
        while (state.record(random() < baseline, random() < candidate).stop === null);
        return state;
      });
      // Holm's first step is α/K, where a sequential conversation stops as decided: with none
      // decided the regression way nothing is rejected, and the others' p-values (a DP each) are
      // not needed.
      const decided = states.map((s) => s.stop === 'decided' && s.paired.baseline > s.paired.candidate);
      if (gate.mode === 'sequential' && !decided.some(Boolean)) {
        return { suite: false, conversations: states.map((s) => ({ regressed: false, rounds: s.rounds })) };
      }
      const verdicts = holm(
        states.map((state) => state.pValues()!.regressed),
        ALPHA,
      );
      return { suite: false, conversations: states.map((state, i) => ({ regressed: verdicts[i]!.rejected, rounds: state.rounds })) };
    },
  };
}

/**
 * The gate of src/stats as a comparison runs it (the default suite share of α): every
 * conversation plays while `goesOn` says so (`before`: while the rule before issue 43 did), all
 * of them round by round; `regressed` when a conversation or the suite as a whole is.
 */
function suiteGateRule(name: string, mode: GateMode, before?: { replays: string }): Rule {
  const budget = createGate({ confidence: 1 - ALPHA, conversations: CONVERSATIONS, mode }).maxRounds;
  return {
    name,
    budget,
    replays: before?.replays,
    compare: (rates, random) => {
      const gate = createGate({ confidence: 1 - ALPHA, conversations: CONVERSATIONS, mode });
      const states = rates.map(() => gate.conversation());
      // Every attempt drawn before the first round: the rule before, on the same stream, plays the
      // same attempts as far as it goes, so the two differ by their stops alone.
      const attempts = rates.map(([baseline, candidate]) =>
        Array.from({ length: gate.maxRounds }, () => [random() < baseline, random() < candidate] as const),
      );
      for (let round = 0; round < gate.maxRounds; round++) {
        const open = states.map((_, i) => (before ? goesOnBefore(gate, CONVERSATIONS, i) : gate.goesOn(i)));
        if (!open.some(Boolean)) break;
        states.forEach((state, i) => {
          if (open[i]) state.record(...attempts[i]![state.rounds]!);
        });
      }
      // Holm's first step is each one's Bonferroni level, where a conversation stops as decided and
      // the suite's boundary is crossed: with neither the regression way, nothing is rejected.
      const decided = states.some((s) => s.stop === 'decided' && s.paired.baseline > s.paired.candidate);
      if (gate.mode === 'sequential' && !decided && gate.suiteCrossed() !== 'regressed') {
        return { suite: false, conversations: states.map((s) => ({ regressed: false, rounds: s.rounds })) };
      }
      const verdicts = gate.decide();
      return {
        suite: verdicts.suite === 'regressed',
        conversations: states.map((s, i) => ({ regressed: verdicts.conversations[i] === 'regressed', rounds: s.rounds })),
      };
    },
  };
}

function signTestRule(name: string, mode: GateMode): Rule {
  const design = signTestDesign(ALPHA, CONVERSATIONS, mode);
  return {
    name,
    budget: design.maxRounds,
    compare: (rates, random) => {
      const states = rates.map(([baseline, candidate]) => {
        const state = new SignTestConversation(design);
        while (state.record(random() < baseline, random() < candidate).stop === null);
        return state;
      });
      const verdicts = holm(
        states.map((state) => state.pRegressed()),
        ALPHA,
      );
      return { suite: false, conversations: states.map((state, i) => ({ regressed: verdicts[i]!.rejected, rounds: state.rounds })) };
    },
  };
}

const rules: Rule[] = [
  today,
  signTestRule('sign test: repeat 20', { kind: 'repeat', attempts: 20 }),
  gateRule('every attempt: repeat 20', { kind: 'repeat', attempts: 20 }),
  signTestRule('sign test: sequential, max 20', { kind: 'sequential', min: 5, max: 20 }),
  gateRule('every attempt: sequential, max 20', { kind: 'sequential', min: 5, max: 20 }),
  suiteGateRule('every attempt + suite: sequential, max 20', { kind: 'sequential', min: 5, max: 20 }),
  signTestRule('sign test: sequential, max 40', { kind: 'sequential', min: 5, max: 40 }),
  gateRule('every attempt: sequential, max 40', { kind: 'sequential', min: 5, max: 40 }),
  suiteGateRule('every attempt + suite: sequential, max 40', { kind: 'sequential', min: 5, max: 40 }),
  signTestRule('sign test: sequential, max 60', { kind: 'sequential', min: 5, max: 60 }),
  gateRule('every attempt: sequential, max 60', { kind: 'sequential', min: 5, max: 60 }),
  suiteGateRule('every attempt + suite: sequential, max 60', { kind: 'sequential', min: 5, max: 60 }),
  ...[20, 40, 60].map((max) =>
    suiteGateRule(
      `every attempt + suite, before issue 43: sequential, max ${max}`,
      { kind: 'sequential', min: 5, max },
      { replays: `every attempt + suite: sequential, max ${max}` },
    ),
  ),
];

interface Figures {
  rule: string;
  budget_rounds: number;
  false_alarms: Record<string, number>;
  spent_identical: Record<string, number>;
  power_0_9_to_0_6: number;
  innocent_flagged_per_comparison: number;
  spent_with_drop: number;
  /** Comparisons with any conversation flagged when all ten dropped from 0.9 to this rate, and the budget spent. */
  diffuse: Record<string, { flagged: number; spent: number }>;
}

const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
const results: Figures[] = [];
for (const [index, rule] of rules.entries()) {
  const stream = rule.replays === undefined ? index : rules.findIndex((r) => r.name === rule.replays);
  if (stream < 0) throw new Error(`${rule.name}: no rule ${rule.replays} to replay`);
  const random = prng(SEED * 1000 + stream);
  const falseAlarms: Record<string, number> = {};
  const spent: Record<string, number> = {};
  for (const p of [0.7, 0.9, 0.99]) {
    let alarms = 0;
    let rounds = 0;
    for (let c = 0; c < COMPARISONS; c++) {
      const outcome = rule.compare(
        Array.from({ length: CONVERSATIONS }, () => [p, p]),
        random,
      );
      if (flagged(outcome)) alarms++;
      rounds += roundsOf(outcome);
    }
    falseAlarms[p] = alarms / COMPARISONS;
    spent[p] = rounds / (COMPARISONS * CONVERSATIONS * rule.budget);
  }
  let found = 0;
  let innocent = 0;
  let rounds = 0;
  for (let c = 0; c < COMPARISONS; c++) {
    const rates: Array<[number, number]> = Array.from({ length: CONVERSATIONS }, (_, i) => (i === 0 ? [0.9, 0.6] : [0.9, 0.9]));
    const outcome = rule.compare(rates, random);
    if (outcome.conversations[0]!.regressed) found++;
    innocent += outcome.conversations.slice(1).filter((o) => o.regressed).length;
    rounds += roundsOf(outcome);
  }
  const diffuse: Figures['diffuse'] = {};
  for (const to of DIFFUSE) {
    let caught = 0;
    let spentRounds = 0;
    for (let c = 0; c < COMPARISONS; c++) {
      const outcome = rule.compare(
        Array.from({ length: CONVERSATIONS }, () => [0.9, to]),
        random,
      );
      if (flagged(outcome)) caught++;
      spentRounds += roundsOf(outcome);
    }
    diffuse[to] = { flagged: caught / COMPARISONS, spent: spentRounds / (COMPARISONS * CONVERSATIONS * rule.budget) };
  }
  results.push({
    rule: rule.name,
    budget_rounds: rule.budget,
    false_alarms: falseAlarms,
    spent_identical: spent,
    power_0_9_to_0_6: found / COMPARISONS,
    innocent_flagged_per_comparison: innocent / COMPARISONS,
    spent_with_drop: rounds / (COMPARISONS * CONVERSATIONS * rule.budget),
    diffuse,
  });
}

console.log(`${COMPARISONS} comparisons of ${CONVERSATIONS} conversations per figure, seed ${SEED}, α = ${ALPHA}`);
console.log('');
const row = (cells: Array<string | number>): void => console.log(`| ${cells.join(' | ')} |`);
const header = (cells: string[]): void => {
  row(cells);
  row(cells.map(() => '---'));
};
header([
  'rule',
  'budget (rounds)',
  'false alarms at 0.7 / 0.9 / 0.99',
  'power 0.9 → 0.6',
  'innocent flagged',
  'budget spent, identical 0.7 / 0.9 / 0.99',
  'spent, one drop',
  ...DIFFUSE.map((to) => `all ten 0.9 → ${to}: flagged (spent)`),
]);
for (const r of results) {
  const alarms = [0.7, 0.9, 0.99].map((p) => pct(r.false_alarms[p]!)).join(' / ');
  const spent = [0.7, 0.9, 0.99].map((p) => pct(r.spent_identical[p]!)).join(' / ');
  row([
    r.rule,
    r.budget_rounds,
    alarms,
    pct(r.power_0_9_to_0_6),
    r.innocent_flagged_per_comparison.toFixed(2),
    spent,
    pct(r.spent_with_drop),
    ...DIFFUSE.map((to) => `${pct(r.diffuse[to]!.flagged)} (${pct(r.diffuse[to]!.spent)})`),
  ]);
}

// Rounds a drop takes to be decided: one conversation among ten (its stopping level 0.6 × α/10 beside the suite's test), max 60.
const drops: Array<[number, number]> = [
  [0.95, 0.85],
  [0.95, 0.8],
  [0.95, 0.7],
  [0.95, 0.5],
  [0.95, 0.3],
  [0.9, 0.8],
  [0.9, 0.7],
  [0.9, 0.6],
  [0.8, 0.6],
  [0.7, 0.5],
];
const gate = createGate({ confidence: 1 - ALPHA, conversations: CONVERSATIONS, mode: { kind: 'sequential', min: 5, max: 60 } });
const random = prng(SEED * 1000 + 999);
const table = drops.map(([baseline, candidate]) => {
  const rounds: number[] = [];
  let flagged = 0;
  for (let c = 0; c < COMPARISONS; c++) {
    const state = gate.conversation();
    while (state.record(random() < baseline, random() < candidate).stop === null);
    // Decided the regression way is exactly a sequential p-value ≤ α/K (test/stats/false-alarms.test.ts).
    if (state.stop === 'decided' && state.paired.baseline > state.paired.candidate) {
      flagged++;
      rounds.push(state.rounds);
    }
  }
  rounds.sort((a, b) => a - b);
  return {
    baseline,
    candidate,
    power: flagged / COMPARISONS,
    exact_power: gate.power(baseline, candidate),
    median_rounds_when_flagged: rounds.length > 0 ? rounds[rounds.length >> 1]! : null,
  };
});
console.log('');
console.log(`Sequential gate, max 60 rounds, one conversation among 10 (stopping level ${gate.stopLevel.toFixed(4)}):`);
console.log('');
header(['baseline → candidate', 'flagged', 'exact power (futility included)', 'median rounds when flagged']);
for (const drop of table) {
  row([`${drop.baseline} → ${drop.candidate}`, pct(drop.power), pct(drop.exact_power), drop.median_rounds_when_flagged ?? '–']);
}
// A comparison's end at the largest budget: the verdicts of 20 unchanged conversations that ran
// all 200 rounds, each with its own baseline rate, so 20 detectable-drop searches. Timed, so the
// one figure here that depends on the machine: the total, and the longest the event loop waited
// for a turn meanwhile (a live conversation's turn would wait as long).
async function finalizeStall(): Promise<{ conversations: number; max_rounds: number; total_ms: number; longest_loop_wait_ms: number }> {
  const conversations = 20;
  const max = 200;
  const big = createGate({ conversations, mode: { kind: 'sequential', max }, futility: 0 });
  for (let i = 0; i < conversations; i++) {
    const state = big.conversation();
    // Nearly alike, so unchanged; the baseline passes a rate of its own per conversation, the
    // candidate fails 4 rounds more, so each statistic is above 0 and its own: 20 sequential
    // p-values to compute (with both sides alike every p-value is 1, and costs nothing).
    while (state.stop === null) {
      const passed = state.rounds % (i + 5) !== 0;
      state.record(passed, passed && state.rounds % 50 !== 7);
    }
  }
  let longest = 0;
  let last = performance.now();
  let searching = true;
  const turn = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (searching) setImmediate(turn);
  };
  setImmediate(turn);
  const started = performance.now();
  await big.finalize();
  const total = performance.now() - started;
  searching = false;
  await new Promise((resolve) => setImmediate(resolve));
  return { conversations, max_rounds: max, total_ms: Math.round(total), longest_loop_wait_ms: Math.round(longest * 10) / 10 };
}
const stall = await finalizeStall();
console.log('');
console.log(
  `The end of a comparison, ${stall.conversations} unchanged conversations of ${stall.max_rounds} rounds (timed, on this machine): ` +
    `verdicts in ${stall.total_ms} ms, the event loop waited at most ${stall.longest_loop_wait_ms} ms for a turn.`,
);

const byName = (name: string): Figures => results.find((r) => r.rule === name)!;
const seq60 = byName('every attempt + suite: sequential, max 60');
const seq40 = byName('every attempt + suite: sequential, max 40');
const before60 = byName('every attempt + suite, before issue 43: sequential, max 60');
// Issue 43's figures (ten conversations, max_attempts 60), before and after: sessions of 1,200 when nothing changed at 0.9.
const item8 = (r: Figures) =>
  `${Math.round(r.spent_identical[0.9]! * 1200)} of 1,200 sessions (${pct(r.spent_identical[0.9]!)}) when nothing changed at 0.9; ` +
  `0.9 → 0.6 in one conversation flagged in ${pct(r.power_0_9_to_0_6)}; all ten 0.9 → 0.8 in ${pct(r.diffuse[0.8]!.flagged)}; ` +
  `false alarms ${[0.7, 0.9, 0.99].map((p) => pct(r.false_alarms[p]!)).join(' / ')}`;
console.log('');
console.log(`max 60, the suite kept going before issue 43: ${item8(before60)}`);
console.log(`max 60, now (a regression of the suite within reach): ${item8(seq60)}`);
const targets = { false_alarms_max: 0.05, power_min: 0.85, spent_identical_max: 0.5, diffuse_0_8_at_40_min: 0.9 };
const met = {
  // Every statistical rule (not the old repeat-3 one, first).
  false_alarms: results.slice(1).every((r) => Object.values(r.false_alarms).every((x) => x <= targets.false_alarms_max)),
  power: seq60.power_0_9_to_0_6 >= targets.power_min,
  spent_identical: seq60.spent_identical[0.9]! <= targets.spent_identical_max,
  diffuse_0_8_at_40: seq40.diffuse[0.8]!.flagged >= targets.diffuse_0_8_at_40_min,
};
console.log('');
console.log(`Targets met: ${JSON.stringify(met)}`);
console.log(JSON.stringify({ comparisons: COMPARISONS, seed: SEED, targets, met, rules: results, drops: table, finalize: stall }));
