/**
 * Statistics of the release gate, pure (no I/O, nothing from the rest of src/): the decision rule
 * a comparison runs round by round (`createGate`), and the numbers its report shows.
 *
 * A runner drives it so:
 *
 * ```ts
 * const gate = createGate({ confidence: 0.95, conversations: K, mode: { kind: 'sequential', min: 5, max: 20 } });
 * const states = conversations.map(() => gate.conversation()); // conversation i is the i-th handed out
 * // per conversation, per round (one baseline and one candidate attempt; null = error), while gate.goesOn(i):
 * states[i].record(baselinePassed, candidatePassed);
 * // when no conversation goes on:
 * const { conversations, suite } = await gate.finalize(); // per conversation: verdict, p-values, intervals, pass^k,
 * // detectable drop, rounds, stop; the suite's verdict over all of them, with the pooled difference
 * ```
 */
export {
  type ConversationGate,
  type ConversationVerdict,
  type SideSummary,
  type ComparisonStop,
  type Verdict,
} from './conversation-gate.js';
export { createGate, holm, type Gate, type SuiteVerdict, type Verdicts } from './gate.js';
export type { GateMode, GateOptions } from './gate-design.js';
export { newcombeDifference, passHatK, passRateCheck, wilson, type Interval, type PassRateCheck } from './intervals.js';
export { barnardPValue } from './unconditional.js';
export { cohenKappa, type Kappa } from './kappa.js';
