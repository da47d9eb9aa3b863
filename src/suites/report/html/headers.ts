import type { ComparisonReport } from '../comparison.js';
import type { RunReport } from '../run-report.js';
import { comparisonAnswer, runAnswer } from '../wording.js';
import { duration, html, timestamp, type Html } from './kit.js';
import { header, revisionText } from './parts.js';

/**
 * The top of a report, answer first: what ran, the verdict and the sentence the text report opens
 * with. The HTML report file and the runs page open a report with the same header.
 */

export function runHeader(report: RunReport): Html {
  const [status, label] =
    report.passed === null ? ['cancelled', '✗ not decided: cancelled'] : report.passed ? ['passed', '✓ passed'] : ['failed', '✗ failed'];
  return header(
    'Suite run report',
    status,
    label,
    report.name ?? 'Suite run',
    [
      html`<b>${report.agent}</b> · ${revisionText(report.revision)}`,
      `started ${timestamp(report.started_at)}`,
      `took ${duration(report.duration_ms)}`,
    ],
    runAnswer(report),
  );
}

export function comparisonHeader(report: ComparisonReport): Html {
  const t = report.totals;
  const [status, label] =
    report.regressed === null
      ? ['cancelled', '✗ not decided: cancelled']
      : report.regressed
        ? ['failed', '✗ regressed']
        : t.error > 0
          ? ['error', '! incomplete']
          : ['passed', t.fixed > 0 ? '✓ no regressions, fixes' : '✓ no regressions'];
  return header(
    'Comparison report',
    status,
    label,
    report.name ?? 'Baseline versus candidate',
    [
      html`baseline <b>${report.baseline.agent}</b> · ${revisionText(report.baseline.revision)}<span class="arrow">→</span>candidate
        <b>${report.candidate.agent}</b> · ${revisionText(report.candidate.revision)}`,
      `started ${timestamp(report.started_at)}`,
      `took ${duration(report.duration_ms)}`,
    ],
    comparisonAnswer(report),
  );
}
