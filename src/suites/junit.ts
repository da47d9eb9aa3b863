import type { RunReport } from './report.js';
import { failureLines, turnTitle } from './transcript.js';

/**
 * JUnit XML for CI: one <testsuite> per suite file, one <testcase> per turn
 * (classname = the suite, name = "conversation / turn N: line"), a <failure> for a failed
 * expectation, an <error> for a turn the gateway could not run, <skipped> for a turn never sent.
 */
export interface JUnitSuite {
  name: string;
  file: string;
  /** the run's report, or why the suite did not run at all */
  report?: RunReport;
  error?: { error: string; message: string };
}

// Characters XML 1.0 cannot carry at all, escaped or not: replaced by U+FFFD.
const NOT_XML = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

export const xmlText = (value: string): string =>
  value.replace(NOT_XML, '\uFFFD').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export const xmlAttr = (value: string): string =>
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

function renderSuite(suite: JUnitSuite): { xml: string; counts: Counts } {
  const counts: Counts = { tests: 0, failures: 0, errors: 0, skipped: 0, ms: suite.report?.duration_ms ?? 0 };
  const cases: string[] = [];
  const classname = suite.name;
  if (suite.report === undefined) {
    counts.tests = 1;
    counts.errors = 1;
    const error = suite.error ?? { error: 'error', message: 'The suite did not run.' };
    cases.push(
      `    <testcase${attrs({ classname, name: 'run', time: seconds(0) })}>\n` +
        `      <error${attrs({ message: error.message, type: error.error })}>${xmlText(error.message)}</error>\n` +
        `    </testcase>`,
    );
  } else {
    for (const conv of suite.report.conversations) {
      for (const turn of conv.turns) {
        counts.tests += 1;
        const open = `    <testcase${attrs({ classname, name: turnTitle(conv.name, turn), time: seconds(turn.duration_ms) })}>`;
        const body: string[] = [];
        if (turn.status === 'skipped') {
          counts.skipped += 1;
          body.push(`      <skipped${attrs({ message: turn.skipped_reason ?? 'not run' })}/>`);
        } else if (turn.status === 'failed') {
          const lines = failureLines(turn);
          const detail = [...lines, ...(turn.text ? [`agent: ${turn.text}`] : []), ...turn.notes.map((n) => `note: ${n}`)].join('\n');
          if (turn.outcome === 'error') {
            counts.errors += 1;
            const error = turn.error ?? { error: 'error', message: lines[0] ?? 'The turn did not run.' };
            body.push(`      <error${attrs({ message: error.message, type: error.error })}>${xmlText(detail)}</error>`);
          } else {
            counts.failures += 1;
            body.push(`      <failure${attrs({ message: lines.join('; '), type: 'expectation' })}>${xmlText(detail)}</failure>`);
          }
        }
        if (turn.text !== null) {
          body.push(`      <system-out>${xmlText(`> ${turn.line}\n< ${turn.text}`)}</system-out>`);
        }
        cases.push(body.length === 0 ? `${open.slice(0, -1)}/>` : `${open}\n${body.join('\n')}\n    </testcase>`);
      }
    }
  }
  const report = suite.report;
  const properties = report
    ? [
        `    <properties>`,
        ...Object.entries({
          file: suite.file,
          agent: report.agent,
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
  return { xml: [open, ...properties, ...cases, '  </testsuite>'].join('\n'), counts };
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
