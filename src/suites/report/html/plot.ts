import type { ComparisonReport, ConversationComparison, Side, SideResult } from '../comparison.js';
import { attemptsModeText, confidenceText, fraction } from '../wording.js';
import { html, type Html } from './kit.js';
import { convId } from './parts.js';

/**
 * The plot a comparison report opens with: per conversation one row, each side's pass rate as a
 * mark (baseline a circle, candidate a diamond) with its 95 % interval as a line on a 0–100 %
 * axis; regressed rows red, fixed rows green. Inline SVG drawn here, no script; every name from the
 * report goes through the kit's escape like any other text; the colours are the style sheet's.
 */

const WIDTH = 1100;
/** the names end here, right-aligned */
const NAME_END = 282;
/** the axis: 0 % at AXIS_LEFT, 100 % at AXIS_RIGHT */
const AXIS_LEFT = 304;
const AXIS_RIGHT = 900;
/** the verdict's word starts here */
const VERDICT_AT = 924;
const HEAD = 58;
const ROW = 34;
/** a name longer than this is cut (the whole of it in the row's tooltip) */
const NAME_MAX = 32;

const x = (share: number): number => AXIS_LEFT + Math.min(1, Math.max(0, share)) * (AXIS_RIGHT - AXIS_LEFT);
const at = (n: number): string => n.toFixed(1);
const cut = (name: string): string => (name.length <= NAME_MAX ? name : `${name.slice(0, NAME_MAX - 1)}…`);
const VERDICT_WORD: Record<ConversationComparison['verdict'], string> = {
  regressed: 'regressed',
  fixed: 'fixed',
  unchanged: 'unchanged',
  error: 'could not compare',
  undecided: 'not decided',
};

/** A side's mark: a circle for the baseline, a diamond for the candidate, so that they differ without colour too. */
function mark(side: Side, cx: number, cy: number): Html {
  if (side === 'baseline') return html`<circle class="dot" cx="${at(cx)}" cy="${at(cy)}" r="5.5"></circle>`;
  const r = 6.5;
  const points = [
    [cx, cy - r],
    [cx + r, cy],
    [cx, cy + r],
    [cx - r, cy],
  ]
    .map(([px, py]) => `${at(px!)},${at(py!)}`)
    .join(' ');
  return html`<polygon class="dot" points="${points}"></polygon>`;
}

function sideMarks(side: Side, s: SideResult, cy: number): Html {
  const judged = s.attempts_total - s.attempts_error;
  const { estimate, low, high } = s.pass_rate_interval;
  if (estimate === null) {
    return html`<g class="${`series ${side}`}"
      ><text class="none" x="${at(AXIS_LEFT + 6)}" y="${at(cy + 4)}">${side}: no attempt could be judged</text></g
    >`;
  }
  const tip =
    `${side} ${s.attempts_passed}/${judged} passed: ${Math.round(estimate * 100)} % ` +
    `(95 % interval ${fraction(low)}–${fraction(high)})`;
  const [l, h] = [x(low), x(high)];
  return html`<g class="${`series ${side}`}"
    ><title>${tip}</title><line class="ci" x1="${at(l)}" y1="${at(cy)}" x2="${at(h)}" y2="${at(cy)}"></line
    ><line class="cap" x1="${at(l)}" y1="${at(cy - 4)}" x2="${at(l)}" y2="${at(cy + 4)}"></line
    ><line class="cap" x1="${at(h)}" y1="${at(cy - 4)}" x2="${at(h)}" y2="${at(cy + 4)}"></line>${mark(side, x(estimate), cy)}</g
  >`;
}

function row(c: ConversationComparison, i: number, key: string): Html {
  const top = HEAD + i * ROW;
  return html`<g class="${`row ${c.verdict}`}">
    <a href="${`#${convId(`${key}cmp`, c.index)}`}"
      ><text class="name" x="${NAME_END}" y="${top + 21}" text-anchor="end"><title>${c.name}</title>${cut(c.name)}</text></a
    >
    ${sideMarks('baseline', c.baseline, top + 11)}${sideMarks('candidate', c.candidate, top + 23)}
    <text class="verdict" x="${VERDICT_AT}" y="${top + 21}">${VERDICT_WORD[c.verdict]}${c.fails_on_both_sides ? ', both fail' : ''}</text>
  </g>`;
}

/** Room above the suite's row for its own axis (its ticks are points of difference, not pass rates). */
const SUITE_GAP = 30;

/**
 * The suite's own row, under the conversations': the pooled difference candidate − baseline (a
 * square) with its 95 % interval, on an axis of points centred on 0, symmetric and wide enough
 * for the interval.
 */
function suiteRow(report: ComparisonReport, top: number): Html {
  const suite = report.suite!;
  const d = suite.difference;
  const range = d === null ? 0.25 : Math.min(1, Math.max(0.25, Math.ceil(Math.max(-d.low, d.high) * 4) / 4));
  const dx = (v: number) => AXIS_LEFT + ((Math.min(range, Math.max(-range, v)) + range) / (2 * range)) * (AXIS_RIGHT - AXIS_LEFT);
  const points = (v: number) => `${v > 0 ? '+' : v < 0 ? '−' : ''}${Math.round(Math.abs(v) * 100)}`;
  const ticks = [-range, -range / 2, 0, range / 2, range].map(
    (v) =>
      html`<line class="${v === 0 ? 'grid zero' : 'grid'}" x1="${at(dx(v))}" y1="${top - 8}" x2="${at(dx(v))}" y2="${top + ROW - 2}"></line
        ><text class="tick" x="${at(dx(v))}" y="${top - 12}" text-anchor="middle">${v === 0 ? '0 points' : points(v)}</text>`,
  );
  const cy = top + 17;
  const interval =
    d === null
      ? html`<text class="none" x="${at(AXIS_LEFT + 6)}" y="${at(cy + 4)}">no pair of attempts could be judged</text>`
      : html`<g class="pooled"
          ><title>
            ${
              `candidate − baseline over all conversations: ${points(d.estimate!)} points ` +
              `(95 % interval ${points(d.low)} to ${points(d.high)})`
            }</title
          ><line class="ci" x1="${at(dx(d.low))}" y1="${at(cy)}" x2="${at(dx(d.high))}" y2="${at(cy)}"></line
          ><rect class="dot" x="${at(dx(d.estimate!) - 5)}" y="${at(cy - 5)}" width="10" height="10"></rect
        ></g>`;
  return html`<g class="${`suite-row ${suite.verdict}`}">
    <rect class="${`suite-band ${suite.verdict}`}" x="0" y="${top - SUITE_GAP + 4}" width="${WIDTH}" height="${ROW + SUITE_GAP - 4}"></rect>
    ${ticks}
    <text class="name" x="${NAME_END}" y="${top + 21}" text-anchor="end">the suite as a whole</text>
    ${interval}
    <text class="verdict" x="${VERDICT_AT}" y="${top + 21}">${VERDICT_WORD[suite.verdict]}</text>
  </g>`;
}

/** The rows' backgrounds, under the axis' grid: red for a regression, green for a fix. */
const bands = (report: ComparisonReport): Html =>
  html`<g class="bands">
    ${report.conversations.map(
      (c, i) => html`<rect class="${`band ${c.verdict}`}" x="0" y="${HEAD + i * ROW}" width="${WIDTH}" height="${ROW}"></rect>`,
    )}
  </g>`;

function axis(height: number): Html {
  const ticks = [0, 0.25, 0.5, 0.75, 1].map(
    (share) =>
      html`<line class="grid" x1="${at(x(share))}" y1="${HEAD - 6}" x2="${at(x(share))}" y2="${height - 4}"></line
        ><text class="tick" x="${at(x(share))}" y="${HEAD - 12}" text-anchor="middle">${`${share * 100} %`}</text>`,
  );
  return html`<g class="axis">${ticks}</g>`;
}

function legend(report: ComparisonReport): Html {
  const item = (side: Side, left: number, label: string) =>
    html`<g class="${`series ${side}`}"
      ><line class="ci" x1="${left - 12}" y1="18" x2="${left + 12}" y2="18"></line>${mark(side, left, 18)}<text
        class="legend"
        x="${left + 20}"
        y="22"
        >${label}</text
      ></g
    >`;
  return html`<g class="legend-row">
    ${item('baseline', AXIS_LEFT + 12, `baseline ${report.baseline.agent}`)}
    ${item('candidate', AXIS_LEFT + 332, `candidate ${report.candidate.agent}`)}
  </g>`;
}

/** The pass-rate plot, with a caption saying what its marks mean. */
export function passRatePlot(report: ComparisonReport, key: string): Html {
  const suiteTop = HEAD + report.conversations.length * ROW + SUITE_GAP;
  const height = (report.suite === null ? HEAD + report.conversations.length * ROW : suiteTop + ROW) + 10;
  const t = report.totals;
  const label =
    `Pass rates with their 95 % intervals, baseline ${report.baseline.agent} against candidate ${report.candidate.agent}: ` +
    `${t.regressed} regressed, ${t.fixed} fixed, ${t.unchanged} unchanged` +
    `${t.error > 0 ? `, ${t.error} could not be compared` : ''}` +
    `${t.fails_on_both_sides > 0 ? `; ${t.fails_on_both_sides} failing on both sides` : ''}` +
    `${report.suite === null ? '' : `; the suite as a whole ${VERDICT_WORD[report.suite.verdict]}`}`;
  return html`<section class="card plot-card">
    <svg class="plot" viewBox="${`0 0 ${WIDTH} ${height}`}" role="img" aria-label="${label}">
      ${bands(report)}${axis(report.suite === null ? height : suiteTop - SUITE_GAP + 4)}${legend(report)}${report.conversations.map(
        (c, i) => row(c, i, key),
      )}${report.suite === null ? '' : suiteRow(report, suiteTop)}
    </svg>
    <p class="plot-caption">
      Each side's pass rate over its judged attempts (the mark) with its 95 % interval (the line). A row is
      <b class="regressed">regressed</b> or <b class="fixed">fixed</b> only when the test says so with ${confidenceText(report.confidence)}
      over all ${report.conversations.length} conversations, not where the intervals merely
      differ.${
        report.suite === null
          ? ''
          : " The last row is the suite as a whole: the difference candidate − baseline over every conversation's pairs " +
            '(the square) with its 95 % interval, in points.'
      }
      Attempts: ${attemptsModeText(report.attempts)}; ${report.sessions.spent} of ${report.sessions.budget} sessions spent.
    </p>
  </section>`;
}
