import type { ConversationExpect, Expectations } from '../spec/format.js';
import { compilePattern } from '../spec/text-matches.js';
import type { ExpectationKind, ExpectationResult, TurnReport } from '../report/run-report.js';

/** What a turn showed, as the expectations read it. */
export interface Observed {
  outcome: string;
  text: string;
  tools: string[];
  shown: string[];
  endedByAgent: boolean;
  durationMs: number;
}

const MAX_QUOTE = 200;
export const quote = (text: string): string => JSON.stringify(text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE)}…` : text);
const list = (items: string[]): string => (items.length === 0 ? 'none' : items.join(', '));

/** What one check found. */
type Finding = { passed: boolean; evidence: string; actual: unknown };

type Check = (expected: never, seen: Observed) => Finding;

const CHECKS: Record<keyof Expectations, Check> = {
  text_matches: (pattern: string, seen) => {
    const passed = compilePattern(pattern).test(seen.text);
    return {
      passed,
      evidence:
        `the text ${quote(seen.text)} ${passed ? 'matches' : 'does not match'} ` + `${pattern.startsWith('/') ? pattern : `/${pattern}/`}`,
      actual: seen.text,
    };
  },
  text_contains: (words: string[], seen) => {
    const text = seen.text.toLowerCase();
    const missing = words.filter((w) => !text.includes(w.toLowerCase()));
    return {
      passed: missing.length === 0,
      evidence:
        missing.length === 0
          ? `the text contains ${words.map(quote).join(', ')}`
          : `the text ${quote(seen.text)} lacks ${missing.map(quote).join(', ')}`,
      actual: seen.text,
    };
  },
  tool: (name: string, seen) => {
    const passed = seen.tools.includes(name);
    return { passed, evidence: `tools called: ${list(seen.tools)}`, actual: seen.tools };
  },
  not_tool: (name: string, seen) => {
    const passed = !seen.tools.includes(name);
    return { passed, evidence: `tools called: ${list(seen.tools)}`, actual: seen.tools };
  },
  shown: (ref: string, seen) => {
    const passed = seen.shown.includes(ref);
    return { passed, evidence: `shown: ${list(seen.shown)}`, actual: seen.shown };
  },
  not_shown: (ref: string, seen) => {
    const passed = !seen.shown.includes(ref);
    return { passed, evidence: `shown: ${list(seen.shown)}`, actual: seen.shown };
  },
  ended_by_agent: (expected: boolean, seen) => ({
    passed: seen.endedByAgent === expected,
    evidence: seen.endedByAgent ? 'the agent ended the conversation' : 'the agent did not end the conversation',
    actual: seen.endedByAgent,
  }),
  exit_within_ms: (limit: number, seen) => {
    const exited = seen.outcome === 'exit';
    const passed = exited && seen.durationMs <= limit;
    return {
      passed,
      evidence: exited
        ? `the turn ended with its exit after ${seen.durationMs} ms${passed ? '' : `, over ${limit} ms`}`
        : `the turn ended with outcome ${seen.outcome} after ${seen.durationMs} ms, not with its own exit`,
      actual: { outcome: seen.outcome, duration_ms: seen.durationMs },
    };
  },
};

/** The declared expectations of a turn, in the order of the checks above. */
const declared = (expect: Expectations): Array<[keyof Expectations, unknown]> =>
  (Object.keys(CHECKS) as Array<keyof Expectations>).filter((k) => expect[k] !== undefined).map((k) => [k, expect[k]]);

/** A turn that ended with its own exit: every expectation is checked against what it showed. */
export function evaluate(expect: Expectations, seen: Observed): ExpectationResult[] {
  return declared(expect).map(([kind, expected]): ExpectationResult => ({
    kind,
    expected,
    ...(CHECKS[kind] as (e: unknown, s: Observed) => Finding)(expected, seen),
  }));
}

/** A turn that did not end with its own exit (or did not run): it fails, and so does every expectation. */
export function failTurn(expect: Expectations, outcome: string, why: string, actual: unknown): ExpectationResult[] {
  return [
    { kind: 'turn_completed', expected: 'exit', passed: false, evidence: why, actual },
    ...declared(expect).map(([kind, expected]) => ({
      kind,
      expected,
      passed: false,
      evidence: `not met: the turn did not end with its own exit (outcome ${outcome})`,
      actual: null,
    })),
  ];
}

/** A turn never sent: its expectations are listed, unevaluated. */
export function skipTurn(expect: Expectations): ExpectationResult[] {
  return declared(expect).map(([kind, expected]) => ({
    kind,
    expected,
    passed: null,
    evidence: 'not evaluated: the turn was skipped',
    actual: null,
  }));
}

export function conversationEndedEarly(remaining: number): ExpectationResult {
  return {
    kind: 'conversation_continues' satisfies ExpectationKind,
    expected: `the conversation stays open for the ${remaining} turn${remaining === 1 ? '' : 's'} after this one`,
    passed: false,
    evidence: 'the agent ended the conversation here',
    actual: true,
  };
}

type ConversationCheck = (expected: never, turns: TurnReport[]) => Finding;

const everyOne = (turns: TurnReport[], key: 'tools' | 'shown'): string[] => [...new Set(turns.flatMap((t) => t[key]))];

const CONVERSATION_CHECKS: Record<keyof ConversationExpect, ConversationCheck> = {
  tools: (names: string[], turns) => {
    const called = everyOne(turns, 'tools');
    const missing = names.filter((n) => !called.includes(n));
    const evidence =
      missing.length === 0 ? `tools called: ${list(called)}` : `never called ${missing.join(', ')}; tools called: ${list(called)}`;
    return { passed: missing.length === 0, evidence, actual: called };
  },
  not_tools: (names: string[], turns) => {
    const called = everyOne(turns, 'tools');
    const hit = names.filter((n) => called.includes(n));
    return { passed: hit.length === 0, evidence: `tools called: ${list(called)}`, actual: called };
  },
  shown: (refs: string[], turns) => {
    const shown = everyOne(turns, 'shown');
    const missing = refs.filter((r) => !shown.includes(r));
    const evidence = missing.length === 0 ? `shown: ${list(shown)}` : `never shown ${missing.join(', ')}; shown: ${list(shown)}`;
    return { passed: missing.length === 0, evidence, actual: shown };
  },
  not_shown: (refs: string[], turns) => {
    const shown = everyOne(turns, 'shown');
    return { passed: refs.every((r) => !shown.includes(r)), evidence: `shown: ${list(shown)}`, actual: shown };
  },
  ended_by_agent: (expected: boolean, turns) => {
    const ended = turns.some((t) => t.ended_by_agent);
    return {
      passed: ended === expected,
      evidence: ended ? 'the agent ended the conversation' : 'the agent did not end the conversation',
      actual: ended,
    };
  },
};

/** The conversation-level checks, over every turn that ran. */
export function evaluateConversation(expect: ConversationExpect, turns: TurnReport[]): ExpectationResult[] {
  const ran = turns.filter((t) => t.status !== 'skipped');
  return (Object.keys(CONVERSATION_CHECKS) as Array<keyof typeof CONVERSATION_CHECKS>)
    .filter((k) => expect[k] !== undefined)
    .map((kind): ExpectationResult => ({
      kind,
      expected: expect[kind],
      ...(CONVERSATION_CHECKS[kind] as (e: unknown, t: TurnReport[]) => Finding)(expect[kind], ran),
    }));
}
