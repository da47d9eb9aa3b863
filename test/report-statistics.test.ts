/**
 * The gate's statistics as the text report (terminal, CI log, MCP) and JUnit show them, from
 * reports built by hand and decided by the real gate (test/support/report-fixtures.ts): the
 * verdict's sentence, each side's pass rate with its 95 % interval, pass^k, rounds and sessions;
 * a run's pass-rate interval and its pass_rate check.
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import t from 'tap';
import { comparisonReportHtml, runReportHtml } from '../src/suites/report/html/render.js';
import { junitXml } from '../src/suites/report/junit.js';
import { renderComparison, renderReport } from '../src/suites/report/text.js';
import type { Json } from './support/http.js';
import { comparisonFixture, runFixture, type Plan } from './support/report-fixtures.js';

const [T, F] = [true, false];
const PLANS: Plan[] = [
  { name: 'order status', baseline: [T], candidate: [F] },
  { name: 'refund', baseline: [F], candidate: [T] },
  { name: 'size help', baseline: [T, T, T, F], candidate: [T, T, F, T] },
  { name: 'greeting', baseline: [T, null], candidate: [T] },
  { name: 'nothing judged', baseline: [null], candidate: [T] },
];

const linesAfter = (text: string, head: RegExp, n: number): string[] => {
  const lines = text.split('\n');
  const at = lines.findIndex((line) => head.test(line));
  return at < 0 ? [] : lines.slice(at + 1, at + 1 + n).map((line) => line.trim());
};

t.test('the comparison as text: the sentence, the intervals, pass^k, rounds and sessions', async (t) => {
  const report = await comparisonFixture(PLANS);
  t.match(report.totals, { regressed: 1, fixed: 1, unchanged: 2, error: 1, fails_on_both_sides: 1 }, 'the gate decided as planned');
  const byName = Object.fromEntries(report.conversations.map((c) => [c.name, c]));
  const text = renderComparison(report, 'gate');

  t.equal(
    text.split('\n')[0],
    '✗ do not promote coach.3: order status regressed; nothing judged could not be compared',
    'the answer first, in words',
  );
  t.match(
    text.split('\n')[1],
    /^gate — agent:coach \(revision 2, Published\) → agent:coach\.3 \(revision 3, Preview\) · seed 42 · 95 % confidence · sequential, 5–20 attempts per side$/,
    'the header says the confidence and the mode',
  );
  t.match(text, /✗ order status · REGRESSED · baseline passed 7\/7 · candidate failed 0\/7 · replies diverged at turn 1\n/);
  t.same(
    linesAfter(text, /✗ order status · REGRESSED/, 3),
    [
      byName['order status']!.statistics.summary,
      'baseline 7/7 (95 % 0.65–1.00) · candidate 0/7 (95 % 0.00–0.35) · 7 rounds, decided · 14 of 40 sessions',
      'pass^k, k = 1…7 (the chance that k attempts in a row all pass): baseline 1.00 at every k · candidate 0.00 at every k',
    ],
    'the verdict in a sentence, each side with its interval, rounds and sessions, pass^k',
  );
  t.match(byName['order status']!.statistics.summary, /^the candidate passes 100 points less often \(95 % interval −100 to −\d+\); p = /);
  t.match(linesAfter(text, /✓ refund · fixed/, 1)[0], /^the candidate passes 100 points more often/);
  t.match(
    linesAfter(text, /! size help · unchanged · fails on both sides · baseline flaky 6\/8 · candidate flaky 6\/8/, 5),
    [
      /^no difference found: the candidate passed 6 of 8 against 6 of 8 .*: the gate as designed, this early stop included, catches/,
      'baseline 6/8 (95 % 0.41–0.93) · candidate 6/8 (95 % 0.41–0.93) · ' +
        '8 rounds, stopped: no verdict within reach of the budget · 16 of 40 sessions',
      'pass^k, k = 1…8 (the chance that k attempts in a row all pass): ' +
        'baseline 0.75 0.54 0.36 0.21 0.11 0.04 0.00 0.00 · candidate 0.75 0.54 0.36 0.21 0.11 0.04 0.00 0.00',
      'fails on both sides — not a regression, but neither revision meets its pass_rate: baseline flaky 6/8, candidate flaky 6/8',
      'fails alike: tool lookup_order at turn 1 — baseline 6/8 (tools called: none), candidate 6/8 (tools called: none)',
    ],
    'an unchanged conversation stopped as futile, failing on both sides (4 of 5 under pass_rate 1): marked !, with what fails alike',
  );
  t.equal(byName['size help']!.fails_on_both_sides, true);
  t.same(
    report.conversations.filter((c) => c.fails_on_both_sides).map((c) => c.name),
    ['size help'],
    'a regression, a fix, a pass on both sides and a conversation not compared are not "fails on both sides"',
  );
  const greeting = byName.greeting!;
  t.match(
    linesAfter(text, /✓ greeting · unchanged/, 2)[1],
    new RegExp(
      `^baseline ${greeting.baseline.attempts_passed}/${greeting.baseline.attempts_passed} \\(95 % 0\\.\\d\\d–1\\.00\\) ` +
        `\\+ ${greeting.baseline.attempts_error} in error · candidate`,
    ),
    'the attempts in error counted apart, outside the interval',
  );
  const nothing = byName['nothing judged']!;
  const n = nothing.candidate.attempts_total;
  t.match(
    linesAfter(text, /✗ nothing judged · could not compare/, 2),
    [
      /^cannot be compared: the baseline has no attempt that could be judged$/,
      new RegExp(
        `^baseline 0/0 \\(no judged attempt\\) \\+ ${n} in error · ` +
          `candidate ${n}/${n} \\(95 % 0\\.\\d\\d–1\\.00\\) · ${nothing.statistics.rounds} rounds`,
      ),
    ],
    'a side without a judged attempt',
  );
  t.match(
    text,
    new RegExp(
      `\\n  ✗ REGRESSED · 1 regressed, 1 fixed, 2 unchanged, 1 could not compare · 1 fails on both sides · ` +
        `${report.sessions.spent} of ${report.sessions.budget} sessions spent · `,
    ),
    'the total says the sessions spent of the budget',
  );
  t.equal(report.sessions.budget, 5 * 40);

  const fixed = renderComparison(await comparisonFixture([PLANS[0]!, PLANS[2]!], { mode: { kind: 'repeat', attempts: 3 } }), 'gate');
  t.match(fixed.split('\n')[1], / · 95 % confidence · 3 attempts per side$/, 'repeat: exactly N attempts per side');
  const sure = renderComparison(await comparisonFixture([PLANS[0]!], { confidence: 0.99 }), 'gate');
  t.match(sure.split('\n')[1], / · 99 % confidence · /);
});

t.test("a run's conversation line: its pass rate's interval and the pass_rate check", async (t) => {
  const run = runFixture(
    [
      { name: 'greeting', outcomes: Array<boolean>(20).fill(true) },
      { name: 'flaky', outcomes: [T, F, T, T] },
      { name: 'bad', outcomes: Array<boolean>(8).fill(false) },
      { name: 'once', outcomes: [T] },
    ],
    0.8,
  );
  t.match(
    run.conversations.map((c) => c.pass_rate_check),
    ['met', 'undecided', 'missed', 'undecided'],
  );
  const text = renderReport(run, 'run');
  t.match(text, /\n {2}✓ greeting · passed · 20\/20 attempts passed \(95 % 0\.84–1\.00\) · pass_rate 80%: met\n/);
  t.match(text, /\n {2}✗ flaky · flaky · 3\/4 attempts passed \(95 % 0\.30–0\.95\) · pass_rate 80%: cannot be told yet\n/);
  t.match(text, /\n {2}✗ bad · failed · 0\/8 attempts passed \(95 % 0\.00–0\.32\) · pass_rate 80%: missed\n/);
  t.match(text, /\n {2}✓ once · passed\n/, 'one attempt tells nothing of a rate: no interval');
});

t.test('JUnit: each comparison case carries the sentence and the intervals', async (t) => {
  const report = await comparisonFixture(PLANS);
  const byName = Object.fromEntries(report.conversations.map((c) => [c.name, c]));
  const xml = junitXml([{ name: 'gate', file: 'gate.yaml', report: report.runs.candidate, comparison: report }]);
  t.equal(XMLValidator.validate(xml), true);
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => ['testsuite', 'testcase', 'property'].includes(name),
  });
  const suite = parser.parse(xml).testsuites.testsuite[0];
  const cases = suite.testcase as Json[];
  const caseOf = (name: string) => cases.find((c) => c.name === `${name} / compared with agent:coach`);

  const regression = caseOf('order status');
  t.equal(regression.failure.type, 'regression');
  t.equal(regression.failure.message, `regressed: tool lookup_order — ${byName['order status']!.statistics.summary}`);
  const detail = (regression.failure['#text'] as string).split('\n');
  t.equal(detail[0], `regressed: ${byName['order status']!.statistics.summary}`, 'the sentence first');
  t.equal(detail[1], 'baseline 7/7 (95 % 0.65–1.00) · candidate 0/7 (95 % 0.00–0.35) · 7 rounds, decided · 14 of 40 sessions');
  t.equal(
    detail[2],
    'pass^k, k = 1…7 (the chance that k attempts in a row all pass): baseline 1.00 at every k · candidate 0.00 at every k',
  );
  t.match(detail[3], /^tool lookup_order at turn 1 — baseline 7\/7/, 'then what differs, as before');

  t.notOk(caseOf('refund').failure, 'a fix is no failure');
  t.match(caseOf('refund')['system-out'], /^fixed: the candidate passes 100 points more often/);
  t.match(
    caseOf('size help')['system-out'],
    /^fails on both sides — not a regression, but neither revision meets its pass_rate: baseline flaky 6\/8, candidate flaky 6\/8\n/,
    'failing on both sides: passing, and said first',
  );
  t.match(caseOf('size help')['system-out'], /\nunchanged: no difference found: .*\nbaseline 6\/8 \(95 % 0\.41–0\.93\)/);
  t.match(
    caseOf('size help')['system-out'],
    /\nfails alike: tool lookup_order at turn 1 — baseline 6\/8 \(tools called: none\), candidate 6\/8/,
  );
  t.notOk(caseOf('size help').failure ?? caseOf('size help').error, 'no failure: the gate lets it pass');
  const error = caseOf('nothing judged');
  t.equal(error.error.type, 'not_compared');
  t.match(
    error.error['#text'],
    /^error: cannot be compared: the baseline has no attempt that could be judged\nbaseline 0\/0 \(no judged attempt\)/,
  );
  t.same(
    cases.map((c) => c.name),
    PLANS.map((p) => `${p.name} / compared with agent:coach`),
    "one testcase per conversation: the candidate's own turns are not cases of a comparison",
  );
  t.same(
    cases.filter((c) => c.failure).map((c) => c.name),
    ['order status / compared with agent:coach'],
    'one failure: the regression, though the candidate failed attempts of three conversations',
  );
  t.match(suite, { tests: '5', failures: '1', errors: '1', skipped: '0' }, 'the counts follow the verdicts');

  const properties = Object.fromEntries((suite.properties.property as Json[]).map((p) => [p.name, p.value]));
  t.match(properties, {
    baseline: 'agent:coach',
    confidence: '0.95',
    fails_on_both_sides: '1',
    sessions_spent: String(report.sessions.spent),
    sessions_budget: String(report.sessions.budget),
  });
});

t.test('the comparison as HTML, read without a browser: a conversation failing on both sides marked and counted', async (t) => {
  const report = await comparisonFixture(PLANS);
  const page = comparisonReportHtml(report);
  const sizeHelp = page.slice(page.indexOf('id="cmp-2"'), page.indexOf('id="cmp-3"'));
  t.match(sizeHelp, /<span class="badge unchanged">unchanged<\/span> <span class="badge both-fail">fails on both sides<\/span>/);
  t.match(sizeHelp, /Fails on both sides: not a regression, but neither revision meets its pass_rate — 1 check failing alike/);
  t.match(sizeHelp, /6\/8 passed/, 'what fails alike, with its tallies');
  t.equal(page.split('class="badge both-fail"').length - 1, 2, 'in the overview and in its section, nowhere else');
  t.match(page, /<dt>Fails on both sides<\/dt>\s*<dd><b>1 conversation<\/b>/, 'counted in the summary');
  t.match(page, /unchanged, both fail<\/text>/, 'and in the plot');
  const passing = comparisonReportHtml(await comparisonFixture([PLANS[0]!, PLANS[1]!]));
  t.notMatch(passing, /both-fail"|Fails on both sides/, 'not said where nothing fails on both sides');
});

t.test('the answer first, in words: the text, the HTML headline and the JUnit say it alike', async (t) => {
  const answerOf = async (plans: Plan[]) => {
    const report = await comparisonFixture(plans);
    const xml = junitXml([{ name: 'gate', file: 'gate.yaml', report: report.runs.candidate, comparison: report }]);
    const html = /<p class="answer (\w+)">([^<]*)<\/p>/.exec(comparisonReportHtml(report));
    const junit = /<system-out>([^<]*)<\/system-out>\n {2}<\/testsuite>/.exec(xml)?.[1];
    return { text: renderComparison(report, 'gate').split('\n')[0], html: html?.slice(1), junit };
  };
  const [regression, fix, bothFail, passing, notJudged] = PLANS;
  t.same(
    await answerOf([regression!, fix!]),
    {
      text: '✗ do not promote coach.3: order status regressed',
      html: ['failed', 'do not promote coach.3: order status regressed'],
      junit: 'do not promote coach.3: order status regressed',
    },
    'a regression: do not promote, naming it',
  );
  t.same(
    (await answerOf([fix!, bothFail!, passing!])).text,
    '✓ coach.3 may be promoted: no conversation was found worse than on coach (refund is better; size help fails on both sides)',
    'no regression: may be promoted, with the fix and what fails on both sides said',
  );
  t.same(
    await answerOf([passing!, notJudged!]),
    {
      text:
        '✗ could not compare coach.3 with coach: nothing judged had no attempt that could be judged on a side; ' +
        'run the comparison again before promoting',
      html: [
        'error',
        'could not compare coach.3 with coach: nothing judged had no attempt that could be judged on a side; ' +
          'run the comparison again before promoting',
      ],
      junit:
        'could not compare coach.3 with coach: nothing judged had no attempt that could be judged on a side; ' +
        'run the comparison again before promoting',
    },
    'a conversation not compared and no regression: no answer yet',
  );
  const many = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ ...regression!, name }));
  t.equal((await answerOf(many)).text, '✗ do not promote coach.3: a, b, c and 2 more regressed', 'a long list cut short');

  const run = (plans: Array<{ name: string; outcomes: Array<boolean | null> }>, passRate = 1) => {
    const report = runFixture(plans, passRate);
    return {
      text: renderReport(report, 'run').split('\n')[0],
      html: /<p class="answer (\w+)">([^<]*)<\/p>/.exec(runReportHtml(report))?.[2],
    };
  };
  t.same(run([{ name: 'greeting', outcomes: [T] }]), {
    text: '✓ coach passes: its conversation passed',
    html: 'coach passes: its conversation passed',
  });
  t.equal(
    run(
      [
        { name: 'greeting', outcomes: [T, T] },
        { name: 'flaky', outcomes: [T, F, T, T] },
      ],
      0.7,
    ).text,
    '✓ coach passes: all 2 conversations passed',
  );
  t.equal(
    run([
      { name: 'greeting', outcomes: [T] },
      { name: 'flaky', outcomes: [T, F] },
      { name: 'bad', outcomes: [F] },
      { name: 'down', outcomes: [null] },
    ]).text,
    '✗ coach fails: flaky passed too rarely and bad failed; down could not run',
  );
  t.equal(run([{ name: 'down', outcomes: [null] }]).text, '✗ could not test coach: down could not run');
});

t.test('pass^k and the p-value explained where shown, in the HTML too', async (t) => {
  const page = comparisonReportHtml(await comparisonFixture(PLANS));
  t.match(page, /<span class="passk" title="the chance that k attempts in a row all pass"/);
  t.match(page, /<span class="means"\s*>the chance that k attempts in a row all pass<\/span/, 'said on the page, not only in a tooltip');
  t.match(
    page,
    /<p class="sentence">the candidate passes 100 points less often \(95 % interval −100 to −\d+\); p = [\d.]+: a drop this large would happen by chance [\d.]+ % of the time if nothing had changed; 0\.013 or less was needed with 5 conversations<\/p>/,
  );
});
