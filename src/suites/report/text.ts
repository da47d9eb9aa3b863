import type { ComparedRevision, ComparisonReport, ConversationComparison, Difference, Latency, SideResult } from './comparison.js';
import { failingAlike } from './differences.js';
import { diffLines, memoryHeadline } from './memory-wording.js';
import type {
  AttemptMemoryReport,
  AttemptReport,
  ConversationReport,
  CriterionResult,
  ModelUsage,
  RunReport,
  TurnReport,
} from './run-report.js';
import {
  attemptsModeText,
  brokeText,
  CHECK_WORDS,
  comparisonAnswer,
  confidenceText,
  describeExpectation,
  FAIL,
  intervalText,
  lineOf,
  PASS,
  passHatLine,
  reviewLine,
  runAnswer,
  SKIP,
  STOP_WORDS,
  type Answer,
} from './wording.js';

// A run report as a person reads it in a terminal or a CI log: the answer first, then each conversation's attempts,
// their turns with the line sent (a simulated user's marked as such), what the agent said, a ✓
// or ✗ per expectation (the evidence for a ✗) and per criterion (the judge's reasoning).

export function turnTitle(conversation: string, turn: Pick<TurnReport, 'index' | 'line' | 'source'>): string {
  return `${conversation} / turn ${turn.index}: ${lineOf(turn)}`;
}

/** `✓ criterion_1 The agent gave a date — reasoning` */
export const criterionLine = (c: CriterionResult): string =>
  `${c.passed ? PASS : FAIL} ${c.id}${c.verdict === 'inconclusive' ? ' (inconclusive)' : ''}${votesText(c)}: ` +
  `${c.text}${c.reasoning ? ` — ${c.reasoning}` : ''}`;

/** ` [2 of 3 votes, split]` when the judge voted more than once. */
const votesText = (c: CriterionResult): string => (c.votes > 1 ? ` [${c.agreement} of ${c.votes} votes${c.split ? ', split' : ''}]` : '');

/** The failed expectations of a turn, one per line: what was expected, and what was seen. */
export function failureLines(turn: TurnReport): string[] {
  return turn.expectations.filter((e) => e.passed === false).map((e) => `${describeExpectation(e)}: ${e.evidence}`);
}

const indent = (text: string, by: string): string => text.split('\n').join(`\n${by}`);

function renderTurn(turn: TurnReport): string[] {
  const out: string[] = [];
  if (turn.status === 'skipped') {
    out.push(`    ${turn.index} ${SKIP} ${lineOf(turn)}   (skipped: ${turn.skipped_reason ?? 'not run'})`);
    return out;
  }
  out.push(`    ${turn.index} > ${lineOf(turn)}`);
  if (turn.text !== null && turn.text !== '') out.push(`      < ${indent(turn.text, '        ')}`);
  const facts = [
    turn.outcome === 'error' ? `did not run (${turn.error?.error ?? 'error'})` : `${turn.outcome} in ${turn.duration_ms} ms`,
    ...(turn.tools.length > 0 ? [`tools: ${turn.tools.join(', ')}`] : []),
    ...(turn.shown.length > 0 ? [`shown: ${turn.shown.join(', ')}`] : []),
    ...(turn.ended_by_agent ? ['the agent ended the conversation'] : []),
    ...(turn.reconnected ? ['reconnected: earlier planning lost'] : []),
  ];
  out.push(`        ${facts.join(' · ')}`);
  for (const e of turn.expectations) {
    out.push(e.passed ? `      ${PASS} ${describeExpectation(e)}` : `      ${FAIL} ${describeExpectation(e)} — ${e.evidence}`);
  }
  for (const c of turn.criteria) out.push(`      ${criterionLine(c)}`);
  if (turn.status === 'failed' && turn.outcome !== 'exit') {
    // Why the turn failed, once: not what the evidence already says, nor the close boilerplate.
    const said = turn.expectations.map((e) => e.evidence).join('\n');
    for (const note of turn.notes) {
      if (!said.includes(note) && !/end-of-conversation work/.test(note)) out.push(`        note: ${note}`);
    }
  }
  return out;
}

const usageText = (u: ModelUsage): string =>
  `model: ${u.calls} call${u.calls === 1 ? '' : 's'}, ${u.prompt_tokens} + ${u.completion_tokens} tokens, ${u.duration_ms} ms`;

function summaryLine(report: RunReport): string {
  const { conversations, turns, expectations, criteria, attempts } = report.totals;
  const bad = [
    conversations.flaky > 0 ? `${conversations.flaky} flaky` : '',
    conversations.failed > 0 ? `${conversations.failed} failed` : '',
    conversations.error > 0 ? `${conversations.error} could not run` : '',
    conversations.cancelled > 0 ? `${conversations.cancelled} not decided` : '',
  ].filter(Boolean);
  const parts = [
    `${conversations.total} conversation${conversations.total === 1 ? '' : 's'}${bad.length > 0 ? ` (${bad.join(', ')})` : ''}`,
    ...(report.repeat > 1 ? [`${attempts.passed} of ${attempts.total} attempts passed`] : []),
    ...(attempts.invalid > 0 ? [`${attempts.invalid} invalid (the simulated user spoiled them)`] : []),
    ...(attempts.cancelled > 0 ? [`${attempts.cancelled} cut short by the cancel`] : []),
    `${turns.total} turn${turns.total === 1 ? '' : 's'}${
      turns.failed + turns.skipped > 0
        ? ` (${[turns.failed > 0 ? `${turns.failed} failed` : '', turns.skipped > 0 ? `${turns.skipped} skipped` : '']
            .filter(Boolean)
            .join(', ')})`
        : ''
    }`,
    `expectations: ${expectations.passed} passed, ${expectations.failed} ` +
      `failed${expectations.skipped > 0 ? `, ${expectations.skipped} not evaluated` : ''}`,
    ...(criteria.total > 0
      ? [`criteria: ${criteria.passed} passed, ${criteria.failed} failed${criteria.skipped > 0 ? `, ${criteria.skipped} not judged` : ''}`]
      : []),
    ...(report.model_usage.calls > 0 ? [usageText(report.model_usage)] : []),
  ];
  const took = report.duration_ms < 1000 ? `${report.duration_ms} ms` : `${(report.duration_ms / 1000).toFixed(1)} s`;
  const verdict = report.passed === null ? `${FAIL} NOT DECIDED (cancelled)` : report.passed ? `${PASS} passed` : `${FAIL} FAILED`;
  return `${verdict} · ${parts.join(' · ')} · ${took}`;
}

function renderAttempt(attempt: AttemptReport, repeat: number): string[] {
  const facts = [
    ...(repeat > 1 ? [`attempt ${attempt.attempt}: ${attempt.status}`] : []),
    attempt.session_id === null ? 'no session' : `session ${attempt.session_id}`,
    ...(attempt.device_ref === null ? [] : [attempt.device_ref]),
    ...(attempt.time_offset === null ? [] : [`time_offset ${attempt.time_offset}`]),
    ...(attempt.stop_reason === 'script_end' ? [] : [`stopped: ${attempt.stop_reason}`]),
    ...(attempt.model_usage.calls > 0 ? [usageText(attempt.model_usage)] : []),
  ];
  const out = [`    ${facts.join(' · ')}`];
  out.push(...visitLines('plant', attempt.attack?.plant));
  for (const turn of attempt.turns) out.push(...renderTurn(turn));
  out.push(...visitLines('control', attempt.attack?.control));
  for (const e of attempt.expectations) {
    out.push(e.passed ? `    ${PASS} ${describeExpectation(e)}` : `    ${FAIL} ${describeExpectation(e)} — ${e.evidence}`);
  }
  for (const c of attempt.criteria) out.push(`    ${criterionLine(c)}`);
  if (attempt.memory !== null) out.push(...memoryLines(attempt.memory));
  if (attempt.attack !== undefined) out.push(...attackLines(attempt.attack));
  if (attempt.error !== null) out.push(`    ${FAIL} could not go on: ${attempt.error.message}`);
  if (attempt.review !== null) out.push(`    ${reviewLine(attempt.review)}`);
  return out;
}

/** ` · 2 invalid · responsible: agent 1, judge 1`: what the reviews found, when there were any. */
function reviewsText(conv: ConversationReport): string {
  const found = Object.entries(conv.responsibility).filter(([, n]) => n > 0);
  return (
    (conv.attempts_invalid > 0 ? ` · ${conv.attempts_invalid} invalid` : '') +
    (conv.attempts_cancelled > 0 ? ` · ${conv.attempts_cancelled} cut short by the cancel` : '') +
    (found.length > 0 ? ` · responsible: ${found.map(([who, n]) => `${who} ${n}`).join(', ')}` : '')
  );
}

/** What the attempt left in memory (the diff shortened) and its memory checks, ✓ or ✗ with the evidence. */
function memoryLines(memory: AttemptMemoryReport): string[] {
  const out = [`    ${memoryHeadline(memory)}`, ...diffLines(memory).map((line) => `      ${line}`)];
  for (const e of memory.expectations) {
    const mark = e.passed === null ? SKIP : e.passed ? PASS : FAIL;
    out.push(e.passed === true ? `    ${mark} ${describeExpectation(e)}` : `    ${mark} ${describeExpectation(e)} — ${e.evidence}`);
  }
  for (const c of memory.criteria) out.push(`    ${criterionLine(c)}`);
  return out;
}

/** `3/4 attempts passed (95 % 0.30–0.95) · pass_rate 75%: cannot be told yet`: what the attempts say about the agent's pass rate. */
export const passRateText = (conv: ConversationReport): string =>
  `${conv.attempts_passed}/${conv.attempts_total} attempts passed (${intervalText(conv.pass_rate_interval)}) · ` +
  `pass_rate ${Math.round(conv.required_pass_rate * 100)}%: ${CHECK_WORDS[conv.pass_rate_check]}`;

function conversationHead(conv: ConversationReport): string {
  // One attempt tells nothing about a rate: its interval would only be noise on every line of a plain run.
  const rate = conv.attempts_total > 1 ? ` · ${passRateText(conv)}` : '';
  const status = conv.status === 'cancelled' ? 'not decided (cancelled)' : conv.status;
  const attack = conv.attack === undefined ? '' : ` · attack ${attackRateText(conv.attack)}`;
  return `  ${conv.status === 'cancelled' ? SKIP : conv.passed ? PASS : FAIL} ${conv.name} · ${status}${attack}${rate}${reviewsText(conv)}`;
}

/** `broke in 1 of 4 attempts (95 % 0.05–0.70)`: an attack's success rate. */
const attackRateText = (rate: NonNullable<ConversationReport['attack']>): string =>
  `broke it in ${brokeText(rate)} (${intervalText(rate.success_rate_interval)})`;

/** The planting user's visit (before the attack, or its return after): its turns under a heading. */
function visitLines(what: string, visit: NonNullable<AttemptReport['attack']>['plant'] | undefined): string[] {
  if (visit === undefined || visit === null) return [];
  const session = visit.session_id === null ? 'no session' : `session ${visit.session_id}`;
  return [`    ${what}: ${visit.device_ref} · ${session}`, ...visit.turns.flatMap(renderTurn)];
}

/** An attempt's attack: held or broke (where, and every piece of evidence), the canary, the guard's refusals. */
function attackLines(attack: NonNullable<AttemptReport['attack']>): string[] {
  const outcome =
    attack.outcome === null
      ? 'not judged'
      : attack.outcome === 'held'
        ? 'the agent held'
        : `BROKE${attack.broke_at_turn === null ? '' : ` at turn ${attack.broke_at_turn}`}`;
  const facts = [
    `attack (${attack.strategy ?? "attacker's choice"}): ${outcome}`,
    ...(attack.canary === null ? [] : [`canary ${attack.canary}`]),
    `guard_hits ${attack.guard_hits}`,
  ];
  return [
    `    ${attack.outcome === 'broke' ? FAIL : attack.outcome === 'held' ? PASS : SKIP} ${facts.join(' · ')}`,
    ...attack.evidence.map((e) => `      evidence: ${e}`),
    ...attack.refused_lines.map((r) => `      refused (never sent): ${JSON.stringify(r.line)} — ${r.rule}`),
  ];
}

/** The report's first line, the answer with its mark: `✗ do not promote coach.3: order status regressed`. */
export const answerLine = (answer: Answer): string => `${answer.tone === 'passed' ? PASS : FAIL} ${answer.text}`;

export function renderReport(report: RunReport, title: string): string {
  const revision = `revision ${report.revision.revision} (${report.revision.state})`;
  const out: string[] = [
    answerLine(runAnswer(report)),
    `${title} — ${report.agent} · ${revision} · run label ${report.run_label} · seed ${report.seed}`,
  ];
  if (report.memory !== null && report.memory.restored !== null) {
    out.push(
      `  memory of ${report.memory.device_ref}: restored ${report.memory.restored} unit${report.memory.restored === 1 ? '' : 's'} before ${
        report.memory.restores === 1 ? 'the run' : `each of ${report.memory.restores} attempts`
      }`,
    );
  }
  for (const conv of report.conversations) {
    out.push(conversationHead(conv));
    for (const attempt of conv.attempts) out.push(...renderAttempt(attempt, report.repeat));
  }
  if (report.memory?.snapshot) {
    out.push(
      `  memory of ${report.memory.device_ref} after the run: ${report.memory.snapshot.unit_count} ` +
        `unit${report.memory.snapshot.unit_count === 1 ? '' : 's'}`,
    );
  }
  if (report.memory?.error) out.push(`  ${FAIL} memory: ${report.memory.error.message}`);
  // The warm-up session, the restore's delete-then-write, a snapshot taken before aggregation: not said above.
  for (const note of report.memory?.notes ?? []) {
    if (!report.memory?.error || !note.includes(report.memory.error.message)) out.push(`    note: ${note}`);
  }
  out.push(`  ${summaryLine(report)}`);
  return `${out.join('\n')}\n`;
}

const revisionText = (side: ComparedRevision): string => `${side.agent} (revision ${side.revision.revision}, ${side.revision.state})`;

const sideText = (side: SideResult): string => `${side.status} ${side.attempts_passed}/${side.attempts_total}`;

const latencyText = (l: Latency): string => (l.p50_ms === null ? 'no turns' : `p50 ${l.p50_ms} ms, p95 ${l.p95_ms} ms`);

const tallyText = (t: Difference['baseline']): string => `${t.passed}/${t.evaluated}${t.evidence === null ? '' : ` (${t.evidence})`}`;

/** A difference as one line: what it is, where, and how each side came out. */
export const differenceLine = (d: Difference): string =>
  `${d.kind === 'criterion' ? `criterion ${d.name}: ${d.description}` : d.description}` +
  `${d.turn === null ? '' : ` at turn ${d.turn}`} — baseline ${tallyText(d.baseline)}, candidate ${tallyText(d.candidate)}`;

/** `baseline 19/20 (95 % 0.76–0.99)`: the judged attempts that passed, and the attempts in error, left out of the test. */
function sideStatisticsText(name: string, s: SideResult): string {
  const judged = s.attempts_total - s.attempts_error;
  return (
    `${name} ${s.attempts_passed}/${judged} (${intervalText(s.pass_rate_interval)})` +
    `${s.attempts_error > 0 ? ` + ${s.attempts_error} in error` : ''}`
  );
}

/** The lines of a conversation's statistics: the sides' pass rates, rounds and sessions; pass^k. */
export function statisticsLines(c: ConversationComparison): string[] {
  const passHat = passHatLine(c.baseline.pass_hat_k, c.candidate.pass_hat_k);
  return [
    `${sideStatisticsText('baseline', c.baseline)} · ${sideStatisticsText('candidate', c.candidate)} · ${roundsText(c)}`,
    ...(passHat === null ? [] : [passHat]),
  ];
}

/** `7 rounds, decided · 14 of 40 sessions` */
function roundsText(c: ConversationComparison): string {
  const { rounds, stop, sessions, sessions_budget } = c.statistics;
  const stopped = stop === null ? '' : `, ${STOP_WORDS[stop]}`;
  return `${rounds} round${rounds === 1 ? '' : 's'}${stopped} · ${sessions} of ${sessions_budget} sessions`;
}

/** A verdict as a conversation's or the suite's line shows it. */
const VERDICT_SHOWN: Record<ConversationComparison['verdict'], string> = {
  regressed: 'REGRESSED',
  fixed: 'fixed',
  unchanged: 'unchanged',
  error: 'could not compare',
  undecided: 'NOT DECIDED (cancelled)',
};

/** The mark of a conversation that fails on both sides: not the gate's ✗ (it does not block), not a ✓. */
const BOTH_FAIL = '!';

/** `fails on both sides — not a regression, but neither revision meets its pass_rate: baseline failed 0/5, candidate failed 0/5` */
export const bothSidesLine = (c: ConversationComparison): string =>
  `fails on both sides — not a regression, but neither revision meets its pass_rate: ` +
  `baseline ${sideText(c.baseline)}, candidate ${sideText(c.candidate)}`;

function renderConversationComparison(report: ComparisonReport, c: ConversationComparison): string[] {
  const mark =
    c.verdict === 'undecided' ? SKIP : c.verdict === 'regressed' || c.verdict === 'error' ? FAIL : c.fails_on_both_sides ? BOTH_FAIL : PASS;
  const verdict = VERDICT_SHOWN[c.verdict];
  const out = [
    `  ${mark} ${c.name} · ${verdict}${c.fails_on_both_sides ? ' · fails on both sides' : ''} · ` +
      `baseline ${sideText(c.baseline)} · candidate ${sideText(c.candidate)}` +
      `${c.diverged_at_turn === null ? '' : ` · replies diverged at turn ${c.diverged_at_turn}`}`,
  ];
  out.push(`      ${c.statistics.summary}`);
  for (const line of statisticsLines(c)) out.push(`      ${line}`);
  for (const d of c.differences) out.push(`      ${differenceLine(d)}`);
  if (c.fails_on_both_sides) {
    out.push(`      ${bothSidesLine(c)}`);
    for (const d of failingAlike(report, c)) out.push(`      fails alike: ${differenceLine(d)}`);
  }
  out.push(`      latency: baseline ${latencyText(c.baseline.latency)} · candidate ${latencyText(c.candidate.latency)}`);
  return out;
}

/**
 * The suite's own verdict, after the conversations': `✗ the suite as a whole · REGRESSED · 400 pairs: 70 only the
 * baseline passed, 30 only the candidate`, then its sentence. Nothing with one conversation.
 */
function renderSuiteComparison(report: ComparisonReport): string[] {
  const { suite } = report;
  if (suite === null) return [];
  const mark = suite.verdict === 'undecided' ? SKIP : suite.verdict === 'regressed' ? FAIL : PASS;
  const verdict = VERDICT_SHOWN[suite.verdict];
  const { baseline_only: baselineOnly, candidate_only: candidateOnly } = suite.discordant;
  return [
    `  ${mark} the suite as a whole · ${verdict} · ${suite.pairs} pairs: ` +
      `${baselineOnly} only the baseline passed, ${candidateOnly} only the candidate`,
    `      ${suite.summary}`,
  ];
}

/**
 * A comparison as a person reads it in a terminal: the answer first, then each conversation's verdict and what
 * differs; transcripts are in --html and --json.
 */
export function renderComparison(report: ComparisonReport, title: string): string {
  const out = [
    answerLine(comparisonAnswer(report)),
    `${title} — ${revisionText(report.baseline)} → ${revisionText(report.candidate)} · seed ${report.seed} · ` +
      `${confidenceText(report.confidence)} · ${attemptsModeText(report.attempts)}`,
  ];
  for (const c of report.conversations) out.push(...renderConversationComparison(report, c));
  out.push(...renderSuiteComparison(report));
  const { regressed, fixed, unchanged, error, undecided, fails_on_both_sides: bothFail } = report.totals;
  const usage = report.model_usage.total.calls > 0 ? ` · ${usageText(report.model_usage.total)}` : '';
  const took = report.duration_ms < 1000 ? `${report.duration_ms} ms` : `${(report.duration_ms / 1000).toFixed(1)} s`;
  const verdict =
    report.regressed === null ? `${FAIL} NOT DECIDED (cancelled)` : report.regressed ? `${FAIL} REGRESSED` : `${PASS} no regression`;
  out.push(
    `  ${verdict} · ${regressed} regressed, ${fixed} fixed, ` +
      `${unchanged} unchanged${error > 0 ? `, ${error} could not compare` : ''}${undecided > 0 ? `, ${undecided} not decided` : ''} · ` +
      `${bothFail > 0 ? `${bothFail} ${bothFail === 1 ? 'fails' : 'fail'} on both sides · ` : ''}` +
      `${report.sessions.spent} of ${report.sessions.budget} sessions spent${usage} · ${took}`,
  );
  return `${out.join('\n')}\n`;
}
