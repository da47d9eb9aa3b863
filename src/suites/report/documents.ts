/**
 * The JUnit and HTML reports of a run that ended, as `agent-test-gateway follow` writes them and
 * `GET /v1/runs/{id}` answers them (`Accept: application/xml`, `text/html`): one assembly for both,
 * so the file a CI job wrote and the one the runs page downloads are the same.
 */

import type { ComparisonReport } from './comparison.js';
import { comparisonReportHtml, runReportHtml } from './html/render.js';
import { junitXml, type JUnitSuite } from './junit.js';
import type { RunReport } from './run-report.js';

export { REPORT_CSP } from './html/page.js';

/** A run's report by its kind. */
export type EndedReport = { kind: 'run'; report: RunReport } | { kind: 'comparison'; report: ComparisonReport };

/** How a run ended: with its report, or with an error (shown as a suite that could not run). */
export type RunEnding = EndedReport | { kind: EndedReport['kind']; error: { error: string; message: string } };

/** The JUnit suite of a run's report, named by the run's id (a followed run has no suite file here). */
export const junitSuiteOf = (id: string, ended: EndedReport): JUnitSuite =>
  ended.kind === 'run'
    ? { name: id, file: id, report: ended.report }
    : { name: id, file: id, report: ended.report.runs.candidate, comparison: ended.report };

/** JUnit XML of a run that ended: its report's cases, or one <error> when it ended with an error. */
export const runJUnit = (id: string, ending: RunEnding): string =>
  junitXml(['error' in ending ? { name: id, file: id, error: ending.error } : junitSuiteOf(id, ending)]);

/** The self-contained HTML report of a run that ended, or its red "could not run" section. */
export function runHtml(id: string, ending: RunEnding): string {
  if ('error' in ending) {
    const notRun = { name: id, file: id, error: ending.error };
    return ending.kind === 'run' ? runReportHtml(notRun) : comparisonReportHtml(notRun);
  }
  return ending.kind === 'run' ? runReportHtml(ending.report) : comparisonReportHtml(ending.report);
}
