import type { ComparisonReport, ConversationComparison } from './comparison.js';
import { failingAlike } from './differences.js';
import { diffLines, memoryHeadline } from './memory-wording.js';
import type { AttemptMemoryReport, AttemptReport, CriterionResult, RunReport, TurnReport } from './run-report.js';
import { bothSidesLine, differenceLine, failureLines, statisticsLines, turnTitle } from './text.js';
import { comparisonAnswer, describeExpectation, lineOf, reviewLine, runAnswer } from './wording.js';

/**
 * JUnit XML for CI: one <testsuite> per suite file; per conversation attempt, one <testcase> per
 * turn (classname = the suite, name = "conversation[ / attempt K] / turn N: line") and one per
 * criterion, a <failure> for a failed expectation or criterion, an <error> for a turn the gateway
 * could not run or an attempt that could not go on, <skipped> for a turn never sent; an attempt
 * with memory checks adds "… / memory" (its diff in <system-out>) and its memory criteria. A comparison
 * is one <testcase> per conversation ("conversation / compared with the baseline"), following the
 * verdict as the exit status does: a <failure> when it regressed, an <error> when the sides could
 * not be compared, passing otherwise — a conversation failing on both sides too, said first in its
 * <system-out> with what fails alike. The verdict's sentence and each side's pass rate with its
 * interval are in the detail; the transcripts are in the HTML and JSON reports. Each suite's
 * <system-out> gives its answer in words, as the text report's first line does. A cancelled run
 * or comparison has an <error> (type `cancelled`) for every conversation it left undecided, and
 * a case cut short by the cancel is <skipped>: a CI that publishes it never shows it green.
 * Times: a turn's, an attempt's; a compared conversation's is its attempts' on both sides.
 */
export interface JUnitSuite {
  name: string;
  file: string;
  /** the run's report (a comparison's candidate run), or why the suite did not run at all */
  report?: RunReport;
  /** the comparison the report is the candidate's side of: its cases replace the run's */
  comparison?: ComparisonReport;
  error?: { error: string; message: string };
}

// Characters XML 1.0 cannot carry at all, escaped or not: replaced by U+FFFD.
const NOT_XML = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

const xmlText = (value: string): string =>
  value.replace(NOT_XML, '\uFFFD').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const xmlAttr = (value: string): string =>
  xmlText(value).replace(/"/g, '&quot;').replace(/'/g, '&apos;').replace(/\t/g, '&#9;').replace(/\n/g, '&#10;').replace(/\r/g, '&#13;');

const attrs = (pairs: Record<string, string | number>): string =>
  Object.entries(pairs)
    .map(([k, v]) => ` ${k}="${xmlAttr(String(v))}"`)
    .join('');

const seconds = (ms: number | null): string => ((ms ?? 0) / 1000).toFixed(3);

interface Counts {
  tests: number;
  failures: number;
  errors: number;
  skipped: number;
  ms: number;
}

type Case = { xml: string; kind: 'ok' | 'failure' | 'error' | 'skipped' };

const testcase = (classname: string, name: string, ms: number | null, body: string[]): string => {
  const open = `    <testcase${attrs({ classname, name, time: seconds(ms) })}>`;
  return body.length === 0 ? `${open.slice(0, -1)}/>` : `${open}\n${body.join('\n')}\n    </testcase>`;
};

const errorTag = (error: { error: string; message: string }, detail: string): string =>
  `      <error${attrs({ message: error.message, type: error.error })}>${xmlText(detail)}</error>`;

/** One <testcase> per turn: <failure> for a failed expectation, <error> for a turn that did not run, <skipped> for one never sent. */
function turnCase(classname: string, title: string, turn: TurnReport): Case {
  const body: string[] = [];
  let kind: Case['kind'] = 'ok';
  if (turn.status === 'skipped') {
    kind = 'skipped';
    body.push(`      <skipped${attrs({ message: turn.skipped_reason ?? 'not run' })}/>`);
  } else if (turn.status === 'failed') {
    const lines = failureLines(turn);
    const detail = [...lines, ...(turn.text ? [`agent: ${turn.text}`] : []), ...turn.notes.map((n) => `note: ${n}`)].join('\n');
    if (turn.outcome === 'error') {
      kind = 'error';
      body.push(errorTag(turn.error ?? { error: 'error', message: lines[0] ?? 'The turn did not run.' }, detail));
    } else {
      kind = 'failure';
      body.push(`      <failure${attrs({ message: lines.join('; '), type: 'expectation' })}>${xmlText(detail)}</failure>`);
    }
  }
  if (turn.text !== null) body.push(`      <system-out>${xmlText(`> ${lineOf(turn)}\n< ${turn.text}`)}</system-out>`);
  return { xml: testcase(classname, title, turn.duration_ms, body), kind };
}

/** One <testcase> per criterion: <failure> with the judge's reasoning unless it passed; <skipped> when never ruled on. */
function criterionCase(classname: string, title: string, c: CriterionResult, judged: boolean): Case {
  const name = `${title} / criterion ${c.id}: ${c.text}`;
  if (!judged)
    return {
      xml: testcase(classname, name, null, [`      <skipped${attrs({ message: c.reasoning ?? 'not judged' })}/>`]),
      kind: 'skipped',
    };
  if (c.passed)
    return { xml: testcase(classname, name, null, [`      <system-out>${xmlText(c.reasoning ?? '')}</system-out>`]), kind: 'ok' };
  const message = `${c.verdict}: ${c.reasoning ?? 'no reasoning'}`;
  return {
    xml: testcase(classname, name, null, [`      <failure${attrs({ message, type: 'criterion' })}>${xmlText(message)}</failure>`]),
    kind: 'failure',
  };
}

/**
 * What the attempt left in memory: one <testcase> for the memory checks (<failure> with the
 * evidence, <skipped> when not checked, the diff shortened in <system-out>), one per memory criterion.
 */
function memoryCases(classname: string, title: string, memory: AttemptMemoryReport, judged: boolean): Case[] {
  const name = `${title} / memory`;
  const out = xmlText([memoryHeadline(memory), ...diffLines(memory)].join('\n'));
  const failed = memory.expectations.filter((e) => e.passed === false);
  let check: Case;
  if (memory.status === 'not_checked') {
    check = { xml: testcase(classname, name, null, [`      <skipped${attrs({ message: memoryHeadline(memory) })}/>`]), kind: 'skipped' };
  } else if (failed.length > 0) {
    const message = failed.map((e) => `${describeExpectation(e)}: ${e.evidence}`).join('; ');
    const failure = `      <failure${attrs({ message, type: 'memory' })}>${xmlText(message)}</failure>`;
    check = { xml: testcase(classname, name, memory.waited_ms, [failure, `      <system-out>${out}</system-out>`]), kind: 'failure' };
  } else {
    check = { xml: testcase(classname, name, memory.waited_ms, [`      <system-out>${out}</system-out>`]), kind: 'ok' };
  }
  const ruled = judged && memory.status !== 'not_checked';
  return [check, ...memory.criteria.map((c) => criterionCase(classname, name, c, ruled))];
}

/**
 * The cases of one attempt: its turns, its criteria, and an <error> when it could not go on; an
 * invalid attempt (the simulated user spoiled it) is one <skipped> case saying why, since it says
 * nothing of the agent.
 */
function attemptCases(classname: string, conv: string, attempt: AttemptReport, repeat: number): Case[] {
  const title = repeat > 1 ? `${conv} / attempt ${attempt.attempt}` : conv;
  if (attempt.status === 'invalid' || attempt.status === 'cancelled') {
    const message =
      attempt.status === 'invalid' ? `invalid: ${reviewLine(attempt.review!)}` : 'cancelled: the run was cancelled during this attempt';
    return [
      {
        xml: testcase(classname, `${title} / ${attempt.status}`, attempt.duration_ms, [`      <skipped${attrs({ message })}/>`]),
        kind: 'skipped',
      },
    ];
  }
  const judged = attempt.status !== 'error';
  const cases = attempt.turns.flatMap((turn) => [
    turnCase(classname, turnTitle(title, turn), turn),
    ...turn.criteria.map((c) => criterionCase(classname, `${title} / turn ${turn.index}`, c, judged)),
  ]);
  cases.push(...attempt.criteria.map((c) => criterionCase(classname, title, c, judged)));
  if (attempt.attack !== undefined && judged) cases.push(attackCase(classname, title, attempt.attack));
  const failedChecks = attempt.expectations.filter(
    (e) => e.passed === false && (attempt.attack === undefined || !ATTACK_KINDS.has(e.kind)),
  );
  if (failedChecks.length > 0) {
    const message = failedChecks.map((e) => `${describeExpectation(e)}: ${e.evidence}`).join('; ');
    cases.push({
      xml: testcase(classname, `${title} / conversation checks`, null, [
        `      <failure${attrs({ message, type: 'expectation' })}>${xmlText(message)}</failure>`,
      ]),
      kind: 'failure',
    });
  }
  if (attempt.memory !== null) cases.push(...memoryCases(classname, title, attempt.memory, judged));
  if (attempt.error !== null) {
    cases.push({
      xml: testcase(classname, `${title} / could not go on`, attempt.duration_ms, [errorTag(attempt.error, attempt.error.message)]),
      kind: 'error',
    });
  }
  return cases;
}

/** The <error> of a conversation (or the suite as a whole) a cancel left undecided: a cancelled gate never reads as a pass. */
const undecidedCase = (classname: string, name: string, ms: number | null, summary: string, reason: string): Case => ({
  xml: testcase(classname, name, ms, [errorTag({ error: 'cancelled', message: `not decided: cancelled (${reason})` }, summary)]),
  kind: 'error',
});

/** A conversation's wall time in a comparison: its attempts on both sides. */
const comparedMs = (report: ComparisonReport, index: number): number =>
  (['baseline', 'candidate'] as const).reduce(
    (ms, side) => ms + (report.runs[side].conversations[index]?.attempts.reduce((sum, a) => sum + a.duration_ms, 0) ?? 0),
    0,
  );

/** The checks an attack's own testcase reports (a failed control stays with the conversation checks). */
const ATTACK_KINDS = new Set(['never_says', 'never_tools', 'canary', 'canary_in_memory']);

/** An attack's attempt as one testcase: <failure type="attack"> with where it broke and the evidence when it broke. */
function attackCase(classname: string, title: string, attack: NonNullable<AttemptReport['attack']>): Case {
  if (attack.outcome !== 'broke') return { xml: testcase(classname, `${title} / attack`, null, []), kind: 'ok' };
  const where = attack.broke_at_turn === null ? '' : ` at turn ${attack.broke_at_turn}`;
  const message = `the agent broke${where}: ${attack.evidence.join('; ')}`;
  return {
    xml: testcase(classname, `${title} / attack`, null, [
      `      <failure${attrs({ message, type: 'attack' })}>${xmlText(message)}</failure>`,
    ]),
    kind: 'failure',
  };
}

/**
 * A conversation's comparison: <failure> when it regressed, with what differs; <error> when the sides
 * could not be compared. The verdict's sentence (how sure, at what p-value) leads the detail; a
 * conversation failing on both sides says so first, and what fails alike follows what differs.
 */
function comparisonCase(classname: string, report: ComparisonReport, c: ConversationComparison): Case {
  const name = `${c.name} / compared with ${report.baseline.agent}`;
  const ms = comparedMs(report, c.index);
  if (c.verdict === 'undecided') return undecidedCase(classname, name, ms, c.statistics.summary, report.cancelled?.reason ?? 'cancelled');
  const alike = c.fails_on_both_sides ? failingAlike(report, c) : [];
  const detail = [
    ...(c.fails_on_both_sides ? [bothSidesLine(c)] : []),
    `${c.verdict}: ${c.statistics.summary}`,
    ...statisticsLines(c),
    ...c.differences.map(differenceLine),
    ...alike.map((d) => `fails alike: ${differenceLine(d)}`),
    ...(c.diverged_at_turn === null ? [] : [`the agent's replies diverged at turn ${c.diverged_at_turn}`]),
  ].join('\n');
  if (c.verdict === 'regressed') {
    const differs = c.differences.map((d) => d.description).join('; ');
    const message = `regressed: ${differs === '' ? c.statistics.summary : `${differs} — ${c.statistics.summary}`}`;
    return {
      xml: testcase(classname, name, ms, [`      <failure${attrs({ message, type: 'regression' })}>${xmlText(detail)}</failure>`]),
      kind: 'failure',
    };
  }
  if (c.verdict === 'error') {
    return {
      xml: testcase(classname, name, ms, [errorTag({ error: 'not_compared', message: 'A side could not run any attempt.' }, detail)]),
      kind: 'error',
    };
  }
  return { xml: testcase(classname, name, ms, [`      <system-out>${xmlText(detail)}</system-out>`]), kind: 'ok' };
}

/**
 * The suite's own verdict as one more testcase ("the suite as a whole / compared with the baseline"): <failure> when the
 * suite as a whole regressed (even with no conversation that did), <error> when no pair could be judged.
 */
function suiteCase(classname: string, report: ComparisonReport): Case[] {
  const { suite } = report;
  if (suite === null) return [];
  const name = `the suite as a whole / compared with ${report.baseline.agent}`;
  // The suite's test reads every conversation's attempts: its time is the comparison's.
  const ms = report.duration_ms;
  if (suite.verdict === 'undecided') return [undecidedCase(classname, name, ms, suite.summary, report.cancelled?.reason ?? 'cancelled')];
  const { baseline_only: baselineOnly, candidate_only: candidateOnly } = suite.discordant;
  const detail = [
    `${suite.verdict}: ${suite.summary}`,
    `${suite.pairs} pairs over ${report.conversations.length} conversations: ` +
      `${baselineOnly} only the baseline passed, ${candidateOnly} only the candidate`,
  ].join('\n');
  if (suite.verdict === 'regressed') {
    const message = `regressed: ${suite.summary}`;
    return [
      {
        xml: testcase(classname, name, ms, [`      <failure${attrs({ message, type: 'regression' })}>${xmlText(detail)}</failure>`]),
        kind: 'failure',
      },
    ];
  }
  if (suite.verdict === 'error') {
    return [
      {
        xml: testcase(classname, name, ms, [errorTag({ error: 'not_compared', message: 'No pair of attempts could be judged.' }, detail)]),
        kind: 'error',
      },
    ];
  }
  return [{ xml: testcase(classname, name, ms, [`      <system-out>${xmlText(detail)}</system-out>`]), kind: 'ok' }];
}

/** Why the suite's run or comparison was cancelled, if it was. */
const cancelledOf = (suite: JUnitSuite): RunReport['cancelled'] => (suite.comparison ?? suite.report)?.cancelled ?? null;

function renderSuite(suite: JUnitSuite): { xml: string; counts: Counts } {
  const { comparison } = suite;
  const counts: Counts = { tests: 0, failures: 0, errors: 0, skipped: 0, ms: (comparison ?? suite.report)?.duration_ms ?? 0 };
  const classname = suite.name;
  let cases: Case[];
  if (suite.report === undefined) {
    const error = suite.error ?? { error: 'error', message: 'The suite did not run.' };
    cases = [{ xml: testcase(classname, 'run', 0, [errorTag(error, error.message)]), kind: 'error' }];
  } else if (comparison !== undefined) {
    cases = [...comparison.conversations.map((c) => comparisonCase(classname, comparison, c)), ...suiteCase(classname, comparison)];
  } else {
    const { repeat, cancelled } = suite.report;
    cases = suite.report.conversations.flatMap((conv) => {
      const attempts = conv.attempts.flatMap((a) => attemptCases(classname, conv.name, a, repeat));
      if (conv.status !== 'cancelled') return attempts;
      const ms = conv.attempts.reduce((sum, a) => sum + a.duration_ms, 0);
      const made = `${conv.attempts_total - conv.attempts_cancelled} of ${repeat} attempts ran to their end`;
      return [...attempts, undecidedCase(classname, `${conv.name} / not decided`, ms, made, cancelled?.reason ?? 'cancelled')];
    });
  }
  counts.tests = cases.length;
  counts.failures = cases.filter((c) => c.kind === 'failure').length;
  counts.errors = cases.filter((c) => c.kind === 'error').length;
  counts.skipped = cases.filter((c) => c.kind === 'skipped').length;
  const report = suite.report;
  const properties = report
    ? [
        `    <properties>`,
        ...Object.entries({
          file: suite.file,
          agent: report.agent,
          revision: String(report.revision.revision),
          ...(suite.comparison
            ? {
                baseline: suite.comparison.baseline.agent,
                baseline_revision: String(suite.comparison.baseline.revision.revision),
                confidence: String(suite.comparison.confidence),
                fails_on_both_sides: String(suite.comparison.totals.fails_on_both_sides),
                sessions_spent: String(suite.comparison.sessions.spent),
                sessions_budget: String(suite.comparison.sessions.budget),
              }
            : {}),
          ...(cancelledOf(suite) === null ? {} : { cancelled: cancelledOf(suite)!.reason }),
          seed: String(report.seed),
          run_label: report.run_label,
          run_id: report.run_id,
          session_ids: report.session_ids.join(' '),
        }).map(([name, value]) => `      <property${attrs({ name, value })}/>`),
        `    </properties>`,
      ]
    : [`    <properties>`, `      <property${attrs({ name: 'file', value: suite.file })}/>`, `    </properties>`];
  const open = `  <testsuite${attrs({
    name: suite.name,
    tests: counts.tests,
    failures: counts.failures,
    errors: counts.errors,
    skipped: counts.skipped,
    time: seconds(counts.ms),
    ...(report ? { timestamp: report.started_at } : {}),
  })}>`;
  // The answer, as the text report's first line says it: `do not promote coach.3: order status regressed`.
  const answer = comparison !== undefined ? comparisonAnswer(comparison) : report !== undefined ? runAnswer(report) : undefined;
  const said = answer === undefined ? [] : [`    <system-out>${xmlText(answer.text)}</system-out>`];
  return { xml: [open, ...properties, ...cases.map((c) => c.xml), ...said, '  </testsuite>'].join('\n'), counts };
}

export function junitXml(suites: JUnitSuite[]): string {
  const rendered = suites.map(renderSuite);
  const sum = (key: keyof Counts) => rendered.reduce((n, r) => n + r.counts[key], 0);
  const head = `<testsuites${attrs({
    name: 'agent-test-gateway',
    tests: sum('tests'),
    failures: sum('failures'),
    errors: sum('errors'),
    skipped: sum('skipped'),
    time: seconds(sum('ms')),
  })}>`;
  return ['<?xml version="1.0" encoding="UTF-8"?>', head, ...rendered.map((r) => r.xml), '</testsuites>', ''].join('\n');
}
