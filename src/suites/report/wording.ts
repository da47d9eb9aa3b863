import type { ConversationVerdict, SuiteVerdict } from '../../stats/index.js';
import type { components } from '../../api/report-shapes.js';
import type { AttemptReview, ExpectationResult, RunReport, TurnReport } from './run-report.js';

/** The comparison report's shape, from openapi.yaml (comparison.ts words itself with this file: no import back). */
type ComparisonReport = components['schemas']['ComparisonReport'];

/**
 * How a report's facts are worded wherever a person reads them (the terminal, JUnit, HTML, MCP, the
 * comparison's differences): the answer first, the pass / fail marks, an expectation in one phrase,
 * a line with its source, and the statistics in words a release manager reads.
 */
export const PASS = '✓';
export const FAIL = '✗';
export const SKIP = '-';

const show = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((v) => JSON.stringify(v)).join(', ');
  return JSON.stringify(value);
};

/** `tool lookup_order`, `tools lookup_order, start_refund`, `text_matches /^Hi/`, `text_contains "order", "size"` */
export function describeExpectation(e: ExpectationResult): string {
  switch (e.kind) {
    case 'turn_completed':
      return 'the turn ends with its own exit';
    case 'conversation_continues':
      return 'the conversation stays open';
    case 'text_matches': {
      const pattern = String(e.expected);
      return `text_matches ${pattern.startsWith('/') ? pattern : `/${pattern}/`}`;
    }
    case 'text_contains':
      // Words are quoted, one or several: `text_contains "order", "size"`.
      return `${e.kind} ${[e.expected]
        .flat()
        .map((v) => JSON.stringify(v))
        .join(', ')}`;
    case 'memory_contains':
    case 'memory_not_contains':
      // A text in a memory unit's JSON, quoted: `memory_contains "shoe size 44"`.
      return `${e.kind} ${JSON.stringify(e.expected)}`;
    case 'memory_aggregated':
      return 'the memory changes after the conversation';
    case 'tools':
    case 'not_tools':
      // Tool names unquoted, as the turn-level `tool lookup_order` shows them.
      return `${e.kind} ${[e.expected].flat().map(String).join(', ')}`;
    default:
      return `${e.kind} ${show(e.expected)}`;
  }
}

/** How a simulated user's line is marked wherever a line is shown. */
const SIMULATED = '[simulated]';

export const lineOf = (turn: Pick<TurnReport, 'line' | 'source'>): string =>
  turn.source === 'simulated_user' ? `${SIMULATED} ${turn.line}` : turn.line;

/** A share as a person reads it beside its interval: `0.95`. */
export const fraction = (share: number): string => share.toFixed(2);

/** A pass rate's 95 % interval: `95 % 0.76–0.99`; `no judged attempt` without an estimate. */
export const intervalText = (i: { estimate: number | null; low: number; high: number }): string =>
  i.estimate === null ? 'no judged attempt' : `95 % ${fraction(i.low)}–${fraction(i.high)}`;

/** What the attempts of a run say about its `pass_rate`, in words. */
export const CHECK_WORDS = { met: 'met', missed: 'missed', undecided: 'cannot be told yet' } as const;

/** Why a conversation of a comparison stopped, in words. */
export const STOP_WORDS = {
  decided: 'decided',
  futile: 'stopped: no verdict within reach of the budget',
  budget: 'the budget used up',
} as const;

/** How a comparison spent its attempts: `sequential, 5–20 attempts per side`, `3 attempts per side`. */
export const attemptsModeText = (a: { mode: 'repeat' | 'sequential'; min_attempts: number; max_attempts: number }): string =>
  a.mode === 'repeat'
    ? `${a.max_attempts} attempt${a.max_attempts === 1 ? '' : 's'} per side`
    : `sequential, ${a.min_attempts}–${a.max_attempts} attempts per side`;

/** A confidence as a person reads it: `95 % confidence`. */
export const confidenceText = (confidence: number): string => `${Number((confidence * 100).toFixed(1))} % confidence`;

/** What pass^k is, said wherever it is shown. */
export const PASS_HAT_K_MEANS = 'the chance that k attempts in a row all pass';

/**
 * pass^k, k = 1…8, as one line for both sides, saying what it is: `pass^k, k = 1…5 (the chance that k
 * attempts in a row all pass): baseline 0.80 0.60 0.40 0.20 0.00 · candidate …` (`1.00 at every k`
 * when all are alike); null when neither side has 2 judged attempts.
 */
export function passHatLine(baseline: readonly number[], candidate: readonly number[]): string | null {
  const k = Math.max(baseline.length, candidate.length);
  if (k < 2) return null;
  const values = (v: readonly number[]): string => {
    const shown = v.map(fraction);
    if (shown.length === 0) return 'none';
    return shown.every((x) => x === shown[0]) ? `${shown[0]} at every k` : shown.join(' ');
  };
  return `pass^k, k = 1…${k} (${PASS_HAT_K_MEANS}): baseline ${values(baseline)} · candidate ${values(candidate)}`;
}

const RESPONSIBLE_WORDS: Record<AttemptReview['responsible'], string> = {
  agent: 'the agent',
  simulated_user: 'the simulated user (the attempt is invalid, left out)',
  judge: 'the judge',
  unclear: 'unclear',
};

/** `review: the judge, turn 3 — The judge could not rule …` (and why it is unclear, when the model gave no usable answer). */
export const reviewLine = (review: AttemptReview): string =>
  `review: ${RESPONSIBLE_WORDS[review.responsible]}${review.turn === null ? '' : `, turn ${review.turn}`} — ${review.reason}` +
  `${review.note === null ? '' : ` (${review.note})`}`;

// ——— The answer first ———

/** An agent as a person names it: `coach.3` for the engine key `agent:coach.3`. */
const agentName = (key: string): string => key.replace(/^agent:/, '');

/** Names as a phrase: `a`, `a and b`, `a, b and c`, `a, b, c and 2 more`. */
function namesText(names: readonly string[], most = 3): string {
  const shown = names.length > most ? [...names.slice(0, most), `${names.length - most} more`] : [...names];
  return shown.length <= 1 ? (shown[0] ?? '') : `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`;
}

const fails = (n: number): string => (n === 1 ? 'fails' : 'fail');

/** Whether a comparison's candidate may replace its baseline, as the report's first words say it. */
export type Answer = { tone: 'passed' | 'failed' | 'error' | 'cancelled'; text: string };

type Cancellation = NonNullable<RunReport['cancelled']>;

/**
 * A cancelled run's or comparison's answer: that it decided nothing, how far it got and why, then
 * what was decided before the cancel (`decided`: each such conversation with its outcome) and what was not.
 */
function cancelledAnswer(what: string, cancelled: Cancellation, decided: string[], undecided: string[], after: string): Answer {
  const before = decided.length === 0 ? '' : `; decided before the cancel: ${namesText(decided, 5)}`;
  const open = undecided.length === 0 ? '' : `; ${namesText(undecided)} not decided`;
  return {
    tone: 'cancelled',
    text:
      `not decided: the ${what} was cancelled after ${cancelled.sessions} of ${cancelled.sessions_budget} sessions ` +
      `(${cancelled.reason})${before}${open}${after}`,
  };
}

/**
 * A comparison's answer, before any figure: `do not promote coach.3: order status regressed`,
 * `coach.3 may be promoted: no conversation was found worse than on coach (refund is better)`, or
 * `could not compare coach.3 with coach: size help had no attempt that could be judged on a side`.
 */
export function comparisonAnswer(
  report: Pick<ComparisonReport, 'baseline' | 'candidate' | 'conversations'> & {
    suite?: ComparisonReport['suite'];
    cancelled?: ComparisonReport['cancelled'];
  },
): Answer {
  const [candidate, baseline] = [agentName(report.candidate.agent), agentName(report.baseline.agent)];
  const named = (verdict: ComparisonReport['conversations'][number]['verdict']) =>
    report.conversations.filter((c) => c.verdict === verdict).map((c) => c.name);
  const [regressed, fixed, notCompared] = [named('regressed'), named('fixed'), named('error')];
  if (report.cancelled !== undefined && report.cancelled !== null) {
    const decided = report.conversations.filter((c) => c.verdict !== 'undecided').map((c) => `${c.name} ${c.verdict}`);
    const found = regressed.length > 0 || report.suite?.verdict === 'regressed';
    return cancelledAnswer(
      `comparison of ${candidate} with ${baseline}`,
      report.cancelled,
      decided,
      named('undecided'),
      found ? `: do not promote ${candidate} on what was found` : `: run it again before promoting ${candidate}`,
    );
  }
  const bothFail = report.conversations.filter((c) => c.fails_on_both_sides).map((c) => c.name);
  const uncompared = notCompared.length === 0 ? '' : `; ${namesText(notCompared)} could not be compared`;
  if (regressed.length > 0) {
    // Attacks that broke the candidate more often come first, with their counts: the worst news a gate gives.
    const broken = report.conversations.filter((c) => c.verdict === 'regressed' && c.candidate.attack !== undefined);
    const others = regressed.filter((name) => !broken.some((c) => c.name === name));
    const said = [
      ...broken.map((c) => `${c.name} broke it in ${brokeText(c.candidate.attack)}, baseline ${brokeText(c.baseline.attack)}`),
      ...(others.length > 0 ? [`${namesText(others)} regressed`] : []),
    ];
    return { tone: 'failed', text: `do not promote ${candidate}: ${said.join('; ')}${uncompared}` };
  }
  if (report.suite?.verdict === 'regressed') {
    return {
      tone: 'failed',
      text: `do not promote ${candidate}: the suite as a whole regressed, though no single conversation did${uncompared}`,
    };
  }
  if (notCompared.length > 0) {
    return {
      tone: 'error',
      text:
        `could not compare ${candidate} with ${baseline}: ${namesText(notCompared)} had no attempt that could be judged on a side; ` +
        'run the comparison again before promoting',
    };
  }
  const notes = [
    ...(fixed.length > 0 ? [`${namesText(fixed)} ${fixed.length === 1 ? 'is' : 'are'} better`] : []),
    ...(bothFail.length > 0 ? [`${namesText(bothFail)} ${fails(bothFail.length)} on both sides`] : []),
  ];
  return {
    tone: 'passed',
    text:
      `${candidate} may be promoted: no conversation was found worse than on ${baseline}` +
      `${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`,
  };
}

/** `4 of 20 attempts`: how often an attack broke a side. */
export const brokeText = (rate: { broke: number; attempts: number } | undefined): string =>
  rate === undefined ? 'no judged attempt' : `${rate.broke} of ${rate.attempts} attempt${rate.attempts === 1 ? '' : 's'}`;

/**
 * A run's answer, before any figure: `coach passes: all 3 conversations passed`, `coach.3 fails:
 * order status failed, size help passed too rarely`, `could not test coach: order status could not run`.
 */
export function runAnswer(report: Pick<RunReport, 'agent' | 'conversations'> & { cancelled?: RunReport['cancelled'] }): Answer {
  const agent = agentName(report.agent);
  const convs = report.conversations;
  if (report.cancelled !== undefined && report.cancelled !== null) {
    const decided = convs.filter((c) => c.status !== 'cancelled').map((c) => `${c.name} ${c.passed ? 'passed' : c.status}`);
    const undecided = convs.filter((c) => c.status === 'cancelled').map((c) => c.name);
    return cancelledAnswer(`run of ${agent}`, report.cancelled, decided, undecided, '');
  }
  const notRun = convs.filter((c) => c.status === 'error').map((c) => c.name);
  const failed = convs
    .filter((c) => !c.passed && c.status !== 'error')
    .map((c) =>
      (c.attack?.broke ?? 0) > 0
        ? `${c.name} broke it in ${brokeText(c.attack)}`
        : `${c.name} ${c.status === 'flaky' ? 'passed too rarely' : 'failed'}`,
    );
  const couldNot = notRun.length === 0 ? '' : `${namesText(notRun)} could not run`;
  if (failed.length > 0) return { tone: 'failed', text: `${agent} fails: ${namesText(failed)}${couldNot === '' ? '' : `; ${couldNot}`}` };
  if (notRun.length > 0) return { tone: 'error', text: `could not test ${agent}: ${couldNot}` };
  const all = convs.length === 1 ? 'its conversation passed' : `all ${convs.length} conversations passed`;
  return { tone: 'passed', text: `${agent} passes: ${all}` };
}

// ——— The statistics in words ———

/** A p-value with two significant digits ("0.0008", "0.034", "1"); "< 0.0001" below that. */
export function formatP(p: number): string {
  if (p >= 0.9995) return '1';
  if (p < 0.0001) return '< 0.0001';
  return String(Number(p.toPrecision(p < 0.001 ? 1 : 2)));
}

/** How often a p-value's result happens by chance, as shown: `1.2 % of the time`, `every time`. */
function chanceText(p: number): string {
  const shown = formatP(p);
  if (shown === '1') return 'every time';
  if (shown.startsWith('<')) return 'less than 0.01 % of the time';
  return `${Number((Number(shown) * 100).toPrecision(2))} % of the time`;
}

/**
 * A p-value and the level it had to reach, in words: `p = 0.013: a drop this large would happen by
 * chance 1.3 % of the time if nothing had changed; 0.017 or less was needed with 3 conversations`.
 */
export function pValueText(p: number, needed: number, what: 'drop' | 'gain' | 'difference', conversations: number): string {
  const among = `${conversations} conversation${conversations === 1 ? '' : 's'}`;
  return `${chanceClause(p, what)}; ${formatP(needed)} or less was needed with ${among}`;
}

/** `p = 0.013: a drop this large would happen by chance 1.3 % of the time if nothing had changed`. */
const chanceClause = (p: number, what: 'drop' | 'gain' | 'difference'): string => {
  const shown = formatP(p);
  const equals = shown.startsWith('<') ? shown : `= ${shown}`;
  return `p ${equals}: a ${what} this large would happen by chance ${chanceText(p)} if nothing had changed`;
};

/**
 * A conversation's verdict in one sentence a person can act on, e.g. "the candidate passes 30
 * points less often (95 % interval −52 to −8); p = 0.0008: a drop this large would happen by chance
 * 0.08 % of the time if nothing had changed; 0.005 or less was needed with 10 conversations".
 */
export function describeVerdict(result: ConversationVerdict, conversations: number): string {
  const { verdict, difference, p_regressed, p_fixed, p_needed } = result;
  if (verdict === 'error' || !difference || p_regressed === null || p_fixed === null || p_needed === null) {
    const side = result.baseline.attempts === 0 ? 'the baseline' : 'the candidate';
    return `cannot be compared: ${side} has no attempt that could be judged`;
  }
  const interval = `(95 % interval ${signed(difference.low)} to ${signed(difference.high)})`;
  const points = Math.round(Math.abs(difference.estimate!) * 100);
  if (verdict === 'regressed' || verdict === 'fixed') {
    const [p, how, what] = verdict === 'regressed' ? [p_regressed, 'less', 'drop' as const] : [p_fixed, 'more', 'gain' as const];
    return `the candidate passes ${points} points ${how} often ${interval}; ${pValueText(p, p_needed, what, conversations)}`;
  }
  const { candidate, baseline } = result;
  const rates = `${candidate.passed} of ${candidate.attempts} against ${baseline.passed} of ${baseline.attempts}`;
  const p = Math.min(p_regressed, p_fixed);
  const what = points === 0 ? 'difference' : p_regressed <= p_fixed ? 'drop' : 'gain';
  return (
    `no difference found: the candidate passed ${rates} ${interval}; ` +
    `${pValueText(p, p_needed, what, conversations)}; ${protection(result)}`
  );
}

/**
 * The suite's verdict in one sentence, said against the conversations' (`regressedConversations`
 * of them regressed), e.g. "no single conversation is worse, but the suite as a whole is: −9 points
 * (95 % interval −14 to −4); p = 0.0004: a drop this large would happen by chance 0.04 % of the time
 * if nothing had changed; 0.02 or less was needed for the suite as a whole".
 */
export function describeSuite(suite: SuiteVerdict, regressedConversations: number): string {
  const { verdict, difference } = suite;
  if (verdict === 'error' || difference === null) return 'cannot be compared: no pair of attempts could be judged';
  const pooled = `${signed(difference.estimate!)} points (95 % interval ${signed(difference.low)} to ${signed(difference.high)})`;
  const needed = `${formatP(suite.p_needed)} or less was needed for the suite as a whole`;
  if (verdict === 'regressed') {
    const lead =
      regressedConversations === 0 ? 'no single conversation is worse, but the suite as a whole is' : 'the suite as a whole is worse too';
    return `${lead}: ${pooled}; ${chanceClause(suite.p_regressed, 'drop')}; ${needed}`;
  }
  if (verdict === 'fixed') return `the suite as a whole passes more often: ${pooled}; ${chanceClause(suite.p_fixed, 'gain')}; ${needed}`;
  const what = difference.estimate === 0 ? 'difference' : suite.p_regressed <= suite.p_fixed ? 'drop' : 'gain';
  return `no difference over the suite as a whole: ${pooled}; ${chanceClause(Math.min(suite.p_regressed, suite.p_fixed), what)}; ${needed}`;
}

/**
 * What an `unchanged` verdict protects against: the drop the gate as designed catches 80 % of the
 * time at this baseline rate. A conversation stopped early relied on exactly that (its early stop
 * is part of the rule whose power it is), so it says so rather than the drop its few rounds alone
 * would have caught.
 */
function protection(result: ConversationVerdict): string {
  if (result.detectable_drop === null) {
    return result.stop === null
      ? 'these attempts were too few to catch any drop reliably'
      : 'the gate as designed has too few attempts to catch any drop reliably';
  }
  const drop = `a drop of ${Math.round(result.detectable_drop * 100)} points or more`;
  if (result.stop === 'futile') {
    return `stopped early as no verdict was within reach: the gate as designed, this early stop included, catches ${drop} 80 % of the time`;
  }
  if (result.stop === null) return `${drop} would have been caught 80 % of the time in the rounds run`;
  return `the gate as designed catches ${drop} 80 % of the time`;
}

/** A difference of pass rates in points, with its sign: "−52", "+8", "0". */
export function signed(difference: number): string {
  const points = Math.round(difference * 100);
  if (points === 0) return '0';
  return points < 0 ? `−${-points}` : `+${points}`;
}
