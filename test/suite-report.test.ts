/**
 * The suite's own verdict as every report shows it (JSON, text, HTML, JUnit), from a comparison
 * built by hand and decided by the real gate: ten conversations, each a little worse on the
 * candidate (9 of 10 against 8 of 10 every ten rounds), none of them enough on its own.
 */

import { XMLParser } from 'fast-xml-parser';
import t from 'tap';
import { comparisonReportHtml } from '../src/suites/report/html/render.js';
import { junitXml } from '../src/suites/report/junit.js';
import { renderComparison } from '../src/suites/report/text.js';
import { comparisonFixture, type Plan } from './support/report-fixtures.js';

const [T, F] = [true, false];
const BASELINE = [T, T, T, T, T, T, T, T, T, F];
const CANDIDATE = [T, T, F, T, T, T, T, T, F, T];
const rotate = <V>(values: V[], by: number): V[] => [...values.slice(by), ...values.slice(0, by)];
const PLANS: Plan[] = Array.from({ length: 10 }, (_, i) => ({
  name: `conversation ${i + 1}`,
  baseline: BASELINE,
  candidate: rotate(CANDIDATE, i),
}));

t.test('a drop spread over the suite: every report says the suite regressed where no conversation did', async (t) => {
  const report = await comparisonFixture(PLANS, { mode: { kind: 'sequential', min: 5, max: 40 }, suiteShare: 0.4 });
  t.match(report.totals, { regressed: 0, unchanged: 10 });
  t.match(report.suite, { verdict: 'regressed', stop: 'decided' });
  t.equal(report.regressed, true);
  const suite = report.suite!;
  t.match(
    suite.summary,
    /^no single conversation is worse, but the suite as a whole is: −\d+ points \(95 % interval −\d+ to −\d+\); p < 0\.0001: a drop this large would happen by chance less than 0\.01 % of the time if nothing had changed; 0\.02 or less was needed for the suite as a whole$/,
  );

  const text = renderComparison(report, 'gate');
  const lines = text.split('\n');
  t.equal(lines[0], '✗ do not promote coach.3: the suite as a whole regressed, though no single conversation did', 'the answer first');
  const at = lines.findIndex((line) => line.startsWith('  ✗ the suite as a whole · REGRESSED · '));
  t.ok(at > 0, 'the suite’s line, after the conversations');
  t.match(
    lines[at],
    new RegExp(
      `${suite.pairs} pairs: ${suite.discordant.baseline_only} only the baseline passed, ` +
        `${suite.discordant.candidate_only} only the candidate$`,
    ),
  );
  t.equal(lines[at + 1], `      ${suite.summary}`);
  t.match(lines[at + 2], /^ {2}✗ REGRESSED · 0 regressed, 0 fixed, 10 unchanged/, 'then the totals');

  const page = comparisonReportHtml(report);
  t.match(page, /<g class="suite-row regressed">/, 'the plot’s own row for the suite');
  t.match(page, /the suite as a whole<\/text>/);
  const low = Math.round(-suite.difference!.low * 100);
  t.match(page, new RegExp(`candidate − baseline over all conversations: −\\d+ points \\(95 % interval −${low} to −\\d+\\)`));
  t.match(page, /aria-label="[^"]*; the suite as a whole regressed"/);

  const xml = junitXml([{ name: 'gate', file: 'gate.yaml', report: report.runs.candidate, comparison: report }]);
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => ['testsuite', 'testcase'].includes(name),
  });
  const parsed = parser.parse(xml) as {
    testsuites: { testsuite: Array<{ failures: string; testcase: Array<{ name: string; failure?: { message: string } }> }> };
  };
  const [testsuite] = parsed.testsuites.testsuite;
  const suiteCase = testsuite!.testcase.at(-1)!;
  t.equal(suiteCase.name, 'the suite as a whole / compared with agent:coach');
  t.match(suiteCase.failure?.message, /^regressed: no single conversation is worse, but the suite as a whole is/);
  t.equal(testsuite!.failures, '1', 'the one failure is the suite’s');
  t.equal(testsuite!.testcase.length, 11);
});

t.test('one conversation: no suite verdict (its own is the suite’s), nothing more in any report', async (t) => {
  const report = await comparisonFixture([PLANS[0]!], { suiteShare: 0.4 });
  t.equal(report.suite, null);
  t.notMatch(renderComparison(report, 'gate'), /the suite as a whole/);
  t.notMatch(comparisonReportHtml(report), /<g class="suite-row/);
  t.notMatch(junitXml([{ name: 'gate', file: 'gate.yaml', report: report.runs.candidate, comparison: report }]), /the suite as a whole/);
});
