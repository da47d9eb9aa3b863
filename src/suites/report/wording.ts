import type { AttemptReview, ExpectationResult, TurnReport } from './run-report.js';

/**
 * How a report's facts are worded wherever a person reads them (the terminal, JUnit, HTML, the
 * comparison's differences): the pass / fail marks, an expectation in one phrase, a line with its source.
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

/**
 * pass^k, k = 1…8, as one line for both sides: `pass^k, k = 1…5: baseline 0.80 0.60 0.40 0.20
 * 0.00 · candidate …` (`1.00 at every k` when all are alike); null when neither side has 2 judged attempts.
 */
export function passHatLine(baseline: readonly number[], candidate: readonly number[]): string | null {
  const k = Math.max(baseline.length, candidate.length);
  if (k < 2) return null;
  const values = (v: readonly number[]): string => {
    const shown = v.map(fraction);
    if (shown.length === 0) return 'none';
    return shown.every((x) => x === shown[0]) ? `${shown[0]} at every k` : shown.join(' ');
  };
  return `pass^k, k = 1…${k}: baseline ${values(baseline)} · candidate ${values(candidate)}`;
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
