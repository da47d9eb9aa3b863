import type { ConversationVerdict, SuiteVerdict } from './gate.js';

/**
 * A conversation's verdict in one sentence a person can act on, e.g. "the candidate passes 30
 * points less often (95 % interval −52 to −8); p = 0.0008, at or below the 0.005 needed with 10
 * conversations".
 */
export function describeVerdict(result: ConversationVerdict, conversations: number): string {
  const { verdict, difference, p_regressed, p_fixed, p_needed } = result;
  if (verdict === 'error' || !difference || p_regressed === null || p_fixed === null || p_needed === null) {
    const side = result.baseline.attempts === 0 ? 'the baseline' : 'the candidate';
    return `cannot be compared: ${side} has no attempt that could be judged`;
  }
  const interval = `(95 % interval ${signed(difference.low)} to ${signed(difference.high)})`;
  const among = `with ${conversations} conversation${conversations === 1 ? '' : 's'}`;
  const points = Math.round(Math.abs(difference.estimate!) * 100);
  if (verdict === 'regressed' || verdict === 'fixed') {
    const p = verdict === 'regressed' ? p_regressed : p_fixed;
    const how = verdict === 'regressed' ? 'less' : 'more';
    return (
      `the candidate passes ${points} points ${how} often ${interval}; ` +
      `p = ${formatP(p)}, at or below the ${formatP(p_needed)} needed ${among}`
    );
  }
  const { candidate, baseline } = result;
  const rates = `${candidate.passed} of ${candidate.attempts} against ${baseline.passed} of ${baseline.attempts}`;
  const p = formatP(Math.min(p_regressed, p_fixed));
  return `no difference found: the candidate passed ${rates} ${interval}, p = ${p}; ${protection(result)}`;
}

/**
 * The suite's verdict in one sentence, said against the conversations' (`regressedConversations`
 * of them regressed), e.g. "no single conversation is worse, but the suite as a whole is: −9
 * points (95 % interval −14 to −4); p = 0.0004, at or below the 0.02 needed".
 */
export function describeSuite(suite: SuiteVerdict, regressedConversations: number): string {
  const { verdict, difference } = suite;
  if (verdict === 'error' || difference === null) return 'cannot be compared: no pair of attempts could be judged';
  const pooled = `${signed(difference.estimate!)} points (95 % interval ${signed(difference.low)} to ${signed(difference.high)})`;
  if (verdict === 'regressed' || verdict === 'fixed') {
    const observed = verdict === 'regressed' ? suite.p_regressed : suite.p_fixed;
    const p = `${pEquals(observed)}, at or below the ${formatP(suite.p_needed)} needed`;
    if (verdict === 'fixed') return `the suite as a whole passes more often: ${pooled}; ${p}`;
    const lead =
      regressedConversations === 0 ? 'no single conversation is worse, but the suite as a whole is' : 'the suite as a whole is worse too';
    return `${lead}: ${pooled}; ${p}`;
  }
  return `no difference over the suite as a whole: ${pooled}, ${pEquals(Math.min(suite.p_regressed, suite.p_fixed))}`;
}

/** "p = 0.034", or "p < 0.0001". */
const pEquals = (p: number): string => {
  const text = formatP(p);
  return text.startsWith('<') ? `p ${text}` : `p = ${text}`;
};

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
function signed(difference: number): string {
  const points = Math.round(difference * 100);
  if (points === 0) return '0';
  return points < 0 ? `−${-points}` : `+${points}`;
}

/** A p-value with two significant digits ("0.0008", "0.034", "1"); "< 0.0001" below that. */
export function formatP(p: number): string {
  if (p >= 0.9995) return '1';
  if (p < 0.0001) return '< 0.0001';
  return String(Number(p.toPrecision(p < 0.001 ? 1 : 2)));
}
