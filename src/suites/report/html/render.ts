import type { ComparisonReport } from '../comparison.js';
import { comparisonSections } from './comparison.js';
import { attackFacts, attackOverview, isAttack, visitHtml } from './attack.js';
import { duration, html, join, percent, plural, timestamp, usage, type Html } from './kit.js';
import {
  attemptBody,
  attemptMeta,
  attemptsText,
  badge,
  conversationLabel,
  convId,
  countTiles,
  overviewTable,
  countText,
  fact,
  firstProblem,
  footer,
  header,
  memoryText,
  page,
  rate,
  revisionText,
  type DifferingKeys,
} from './parts.js';
import type { AttemptReport, ConversationReport, RunReport } from '../run-report.js';
import { comparisonAnswer, runAnswer } from '../wording.js';

/**
 * A run report and a comparison report as one self-contained HTML file, for a person to open from
 * a CI artifact: the summary first, then each conversation — passing ones collapsed, the others
 * open — with its pass rate's 95 % interval, whether the attempts show `pass_rate` met, and its
 * attempts as chat transcripts and a ✓ or ✗ per expectation and criterion. A comparison opens
 * with a plot of each side's pass rate and interval per conversation (inline SVG). A
 * comparison puts baseline and candidate side by side, turn by turn, with the differing checks
 * in a table and the turn where the replies diverge marked. No script, no request: inline CSS
 * under a Content-Security-Policy that forbids everything else; every value from a report escaped.
 */

const NONE: DifferingKeys = new Set();

// ——— The run report ———

/** `5/10 passed · 1 could not run · 2 cut short by the cancel` */
const attemptCounts = (a: RunReport['totals']['attempts']): string =>
  [
    `${a.passed}/${a.total} passed`,
    ...(a.error > 0 ? [`${a.error} could not run`] : []),
    ...(a.cancelled > 0 ? [`${a.cancelled} cut short by the cancel`] : []),
  ].join(' · ');

function runSummary(report: RunReport): Html {
  const { conversations: c, attempts, turns, expectations, criteria } = report.totals;
  return html`<section class="card summary">
    ${countTiles(c.total, [
      ['passed', c.passed, 'passed'],
      ['flaky', c.flaky, 'flaky'],
      ['failed', c.failed, 'failed'],
      ['error', c.error, 'could not run'],
      ...(c.cancelled > 0 ? [['cancelled', c.cancelled, 'not decided'] as [string, number, string]] : []),
    ])}
    <dl class="facts">
      ${fact('Revision that ran', html`<code>${report.agent}</code> · ${revisionText(report.revision)}`)}
      ${fact(
        'Attempts',
        html`${attemptCounts(attempts)} <span class="sep">·</span> repeat ×${report.repeat}, needs ${percent(report.pass_rate)}`,
      )}
      ${fact('Turns', countText(turns))} ${fact('Expectations', countText(expectations, 'failed', 'not evaluated'))}
      ${fact('Criteria', criteria.total === 0 ? html`<span class="muted">none</span>` : countText(criteria, 'failed', 'not judged'))}
      ${fact('Model usage', usage(report.model_usage))}
      ${fact('Seed · prompt version', html`<code>${report.seed}</code> · <code>${report.prompt_version}</code>`)}
      ${fact('Run', html`<code>${report.run_label}</code> · ${report.parallelism} at once`)}
      ${report.memory === null ? '' : fact('Memory', memoryText(report.memory), true)}
    </dl>
  </section>`;
}

const CHECK_LABEL: Record<ConversationReport['pass_rate_check'], string> = {
  met: 'pass rate met',
  missed: 'pass rate missed',
  undecided: 'cannot be told yet',
};

/** What the attempts say about a conversation's pass rate: its 95 % interval and whether `pass_rate` is met. */
const passRateCheck = (conv: ConversationReport, label: string): Html => {
  const i = conv.pass_rate_interval;
  const range = i.estimate === null ? 'no judged attempt' : `${label}${Math.round(i.low * 100)}–${Math.round(i.high * 100)} %`;
  return html`<span class="interval">${range}</span> ${badge(`rate-${conv.pass_rate_check}`, CHECK_LABEL[conv.pass_rate_check])}`;
};

function runOverview(report: RunReport, key: string): Html {
  const functional = report.conversations.filter((conv) => !isAttack(conv));
  if (functional.length === 0) return html``;
  const rows = functional.map(
    (conv) =>
      html`<tr>
        <td>${badge(conv.status, conversationLabel(conv.status))}</td>
        <td><a href="${`#${convId(`${key}conv`, conv.index)}`}">${conv.name}</a></td>
        <td class="num">${rate(conv.attempts_passed, conv.attempts_total)}</td>
        <td class="rate-cell">${passRateCheck(conv, '')}</td>
        <td class="muted">${firstProblem(conv)}</td>
      </tr>`,
  );
  return overviewTable(
    [['Status', '120px'], ['Conversation', '22%'], ['Attempts passed', '150px'], ['Pass rate, 95 % interval', '290px'], ['First problem']],
    rows,
  );
}

function attemptHtml(attempt: AttemptReport, open: boolean): Html {
  const { attack } = attempt;
  return html`<details class="attempt" ${open ? 'open' : ''}>
    <summary><span class="label">Attempt ${attempt.attempt}</span>${badge(attempt.status)}${attemptMeta(attempt)}</summary>
    <div class="attempt-body">
      ${attack === undefined ? '' : html`${attackFacts(attack)} ${visitHtml('plant', attack.plant)}`} ${attemptBody(attempt, NONE)}
      ${attack === undefined ? '' : visitHtml('control visit', attack.control)}
    </div>
  </details>`;
}

function runConversation(conv: ConversationReport, key: string): Html {
  const single = conv.attempts.length === 1;
  return html`<details
    class="${`card conv ${conv.status}`}"
    id="${convId(`${key}conv`, conv.index)}"
    ${conv.status === 'passed' ? '' : 'open'}
  >
    <summary>
      ${badge(conv.status, conversationLabel(conv.status))}<span class="name">${conv.name}</span>
      <span class="stats"
        ><span>${attemptsText(conv)} · needs ${percent(conv.required_pass_rate)}</span>
        <span>${passRateCheck(conv, 'pass rate 95 % interval ')}</span>
        ${conv.model_usage.calls === 0 ? '' : html`<span>model ${usage(conv.model_usage)}</span>`}</span
      >
    </summary>
    <div class="conv-body">${conv.attempts.map((a) => attemptHtml(a, single || a.status !== 'passed'))}</div>
  </details>`;
}

/** Element ids stay apart when a page holds several reports: the second report's start with `s2-`. */
const keyOf = (n: number): string => (n === 0 ? '' : `s${n + 1}-`);

function runReportSection(report: RunReport, n: number): Html {
  const [status, label] =
    report.passed === null ? ['cancelled', '✗ not decided: cancelled'] : report.passed ? ['passed', '✓ passed'] : ['failed', '✗ failed'];
  const key = keyOf(n);
  return html`${header(
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
  )}
  ${runSummary(report)} ${runOverview(report, key)} ${attackOverview(report, key)}
  ${report.conversations.every(isAttack) ? '' : html`<h2>Transcripts</h2>`}
  ${report.conversations.filter((conv) => !isAttack(conv)).map((conv) => runConversation(conv, key))}
  ${report.conversations.some(isAttack) ? html`<h2>Attack transcripts</h2>` : ''}
  ${report.conversations.filter(isAttack).map((conv) => runConversation(conv, key))}
  ${footer([...report.notes, ...(report.memory?.notes ?? [])], `run ${report.run_id}`)}`;
}

// ——— A suite that could not run ———

/** A suite that never ran (a suite problem, a refusal such as revision_not_found, a gateway not reached): the error and why. */
export interface NotRunSuite {
  name: string;
  file: string;
  error: { error: string; message: string };
  /** what it was to run against: `coach.9`, `coach → coach.9` */
  against?: string;
}

const isNotRun = (entry: object): entry is NotRunSuite => !('totals' in entry);

/** A red section: the suite, the error's code and its message; never a blank page or a green title. */
function notRunSection(kind: string, suite: NotRunSuite): Html {
  return html`${header(kind, 'failed', '✗ could not run', suite.name, [
      html`<code>${suite.file}</code>`,
      suite.against === undefined ? null : html`against <b>${suite.against}</b>`,
    ])}
    <section class="card summary not-run">
      <dl class="facts">
        ${fact('Could not run', html`<code class="error-code">${suite.error.error}</code>`)}
        ${fact('Suite', html`${suite.name} · <code>${suite.file}</code>`)}
        ${fact('What failed', join(suite.error.message.split('\n'), html`<br />`), true)}
      </dl>
    </section>`;
}

/** The page's title when a suite could not run: `✗ could not run · basic`, or how many of several. */
function notRunTitle(entries: object[], notRun: NotRunSuite[], failedVerdict: string | undefined): string {
  const verdict = failedVerdict ?? '✗ could not run';
  if (entries.length === 1) return `${verdict} · ${notRun[0]!.name}${notRun[0]!.against === undefined ? '' : ` · ${notRun[0]!.against}`}`;
  return `${verdict} · ${notRun.length} of ${plural(entries.length, 'suite')} could not run`;
}

/** Run reports (openapi: RunReport), one per suite, as one self-contained HTML page; a suite that could not run says why, in red. */
export function runReportHtml(...entries: Array<RunReport | NotRunSuite>): string {
  const reports = entries.filter((e): e is RunReport => !isNotRun(e));
  const notRun = entries.filter(isNotRun);
  const failed = reports.filter((r) => r.passed === false).length;
  const cancelled = reports.filter((r) => r.passed === null).length;
  // A cancelled run decided nothing: its page never reads as passed.
  const verdict = failed > 0 ? '✗ FAILED' : cancelled > 0 ? '✗ NOT DECIDED: cancelled' : '✓ passed';
  const title =
    notRun.length > 0
      ? notRunTitle(entries, notRun, failed + cancelled === 0 ? undefined : verdict)
      : reports.length === 1
        ? `${verdict} · ${reports[0]!.name ?? 'Suite run'} · ${reports[0]!.agent}`
        : `${verdict} · ${reports.length - failed - cancelled} of ${plural(reports.length, 'suite')} passed`;
  return page(title, html`${entries.map((e, n) => (isNotRun(e) ? notRunSection('Suite run report', e) : runReportSection(e, n)))}`);
}

function comparisonSection(report: ComparisonReport, n: number): Html {
  const t = report.totals;
  const [status, label] =
    report.regressed === null
      ? ['cancelled', '✗ not decided: cancelled']
      : report.regressed
        ? ['failed', '✗ regressed']
        : t.error > 0
          ? ['error', '! incomplete']
          : ['passed', t.fixed > 0 ? '✓ no regressions, fixes' : '✓ no regressions'];
  return html`${header(
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
  )}
  ${comparisonSections(report, keyOf(n))} ${footer(report.notes, `comparison ${report.comparison_id}`)}`;
}

/**
 * Comparison reports (openapi: ComparisonReport), one per suite, as one self-contained HTML page,
 * baseline and candidate side by side; a suite that could not be compared says why, in red.
 */
export function comparisonReportHtml(...entries: Array<ComparisonReport | NotRunSuite>): string {
  const reports = entries.filter((e): e is ComparisonReport => !isNotRun(e));
  const notRun = entries.filter(isNotRun);
  const regressions = reports.reduce((n, r) => n + r.totals.regressed, 0);
  const cancelled = reports.filter((r) => r.cancelled !== null).length;
  // A cancelled comparison decided nothing: its page never reads as a pass, whatever it found before the cancel.
  const headline =
    cancelled > 0
      ? `✗ NOT DECIDED: cancelled${regressions > 0 ? `, ${plural(regressions, 'regression')} found before` : ''}`
      : regressions > 0
        ? `✗ ${plural(regressions, 'regression')}`
        : '✓ no regressions';
  const [first] = reports;
  const title =
    notRun.length > 0
      ? notRunTitle(entries, notRun, regressions > 0 || cancelled > 0 ? headline : undefined)
      : reports.length === 1
        ? `${headline} · ${first!.name ?? 'Baseline versus candidate'} · ${first!.candidate.agent} vs ${first!.baseline.agent}`
        : `${headline} · ${plural(reports.length, 'suite')}`;
  return page(title, html`${entries.map((e, n) => (isNotRun(e) ? notRunSection('Comparison report', e) : comparisonSection(e, n)))}`, true);
}
