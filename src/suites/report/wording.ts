import type { ExpectationResult, TurnReport } from './run-report.js';

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
