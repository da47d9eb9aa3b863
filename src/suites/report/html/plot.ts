import type {
  ComparisonReport,
  ConversationComparison,
  ConversationDecision,
  DecidedSide,
  RateInterval,
  Side,
  SideResult,
} from '../comparison.js';
import { attemptsModeText, confidenceText, fraction } from '../wording.js';
import { html, type Html } from './kit.js';
import { convId } from './parts.js';

/**
 * The plot a comparison report opens with: per conversation one row, each side's pass rate as a
 * mark (baseline a circle, candidate a diamond) with its 95 % interval as a line on a 0–100 %
 * axis; regressed rows red, fixed rows green. Inline SVG drawn here, no script; every name from the
 * report goes through the kit's escape like any other text; the colours are the style sheet's.
 * The runs page draws the same plot while a comparison runs (`livePlot`), each row as the gate
 * stops its conversation.
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

/** One side of a row: its passes of the attempts judged, and the pass rate's interval. */
interface PlotSide {
  passed: number;
  judged: number;
  interval: RateInterval;
}

/** One conversation's row: its sides (null until the gate stopped it, live), its tone (the row's class) and verdict's word. */
interface PlotRow {
  name: string;
  index: number;
  tone: string;
  word: string;
  sides: Record<Side, PlotSide> | null;
  /** What the axis says where a live row has no marks yet. */
  pending: string;
}

function sideMarks(side: Side, { passed, judged, interval }: PlotSide, cy: number): Html {
  const { estimate, low, high } = interval;
  if (estimate === null) {
    return html`<g class="${`series ${side}`}"
      ><text class="none" x="${at(AXIS_LEFT + 6)}" y="${at(cy + 4)}">${side}: no attempt could be judged</text></g
    >`;
  }
  const tip = `${side} ${passed}/${judged} passed: ${Math.round(estimate * 100)} % (95 % interval ${fraction(low)}–${fraction(high)})`;
  const [l, h] = [x(low), x(high)];
  return html`<g class="${`series ${side}`}"
    ><title>${tip}</title><line class="ci" x1="${at(l)}" y1="${at(cy)}" x2="${at(h)}" y2="${at(cy)}"></line
    ><line class="cap" x1="${at(l)}" y1="${at(cy - 4)}" x2="${at(l)}" y2="${at(cy + 4)}"></line
    ><line class="cap" x1="${at(h)}" y1="${at(cy - 4)}" x2="${at(h)}" y2="${at(cy + 4)}"></line>${mark(side, x(estimate), cy)}</g
  >`;
}

function row(r: PlotRow, i: number, key: string): Html {
  const top = HEAD + i * ROW;
  return html`<g class="${`row ${r.tone}`}" data-index="${r.index}">
    <a href="${`#${convId(`${key}cmp`, r.index)}`}"
      ><text class="name" x="${NAME_END}" y="${top + 21}" text-anchor="end"><title>${r.name}</title>${cut(r.name)}</text></a
    >
    ${
      r.sides === null
        ? html`<text class="none" x="${at(AXIS_LEFT + 6)}" y="${at(top + 21)}">${r.pending}</text>`
        : html`${sideMarks('baseline', r.sides.baseline, top + 11)}${sideMarks('candidate', r.sides.candidate, top + 23)}`
    }
    <text class="verdict" x="${VERDICT_AT}" y="${top + 21}">${r.word}</text>
  </g>`;
}

/** A report's side: its passes, the attempts judged (neither in error, invalid nor cancelled), the gate's interval. */
const reportSide = (s: SideResult): PlotSide => ({
  passed: s.attempts_passed,
  judged: s.attempts_total - s.attempts_error - s.attempts_invalid - s.attempts_cancelled,
  interval: s.pass_rate_interval,
});

const reportRow = (c: ConversationComparison): PlotRow => ({
  name: c.name,
  index: c.index,
  tone: c.verdict,
  word: `${VERDICT_WORD[c.verdict]}${c.fails_on_both_sides ? ', both fail' : ''}`,
  sides: { baseline: reportSide(c.baseline), candidate: reportSide(c.candidate) },
  pending: '',
});

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
const bands = (rows: PlotRow[]): Html =>
  html`<g class="bands">
    ${rows.map((r, i) => html`<rect class="${`band ${r.tone}`}" x="0" y="${HEAD + i * ROW}" width="${WIDTH}" height="${ROW}"></rect>`)}
  </g>`;

function axis(height: number): Html {
  const ticks = [0, 0.25, 0.5, 0.75, 1].map(
    (share) =>
      html`<line class="grid" x1="${at(x(share))}" y1="${HEAD - 6}" x2="${at(x(share))}" y2="${height - 4}"></line
        ><text class="tick" x="${at(x(share))}" y="${HEAD - 12}" text-anchor="middle">${`${share * 100} %`}</text>`,
  );
  return html`<g class="axis">${ticks}</g>`;
}

function legend(agents: Record<Side, string>): Html {
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
    ${item('baseline', AXIS_LEFT + 12, `baseline ${agents.baseline}`)}
    ${item('candidate', AXIS_LEFT + 332, `candidate ${agents.candidate}`)}
  </g>`;
}

/** The plot's frame around its rows: the axis, the legend, and the suite's row when there is one. */
function plotSvg(rows: PlotRow[], agents: Record<Side, string>, label: string, key: string, report: ComparisonReport | null = null): Html {
  const suite = report?.suite ?? null;
  const suiteTop = HEAD + rows.length * ROW + SUITE_GAP;
  const height = (suite === null ? HEAD + rows.length * ROW : suiteTop + ROW) + 10;
  return html`<svg class="plot" viewBox="${`0 0 ${WIDTH} ${height}`}" role="group" aria-label="${label}">
    ${bands(rows)}${axis(suite === null ? height : suiteTop - SUITE_GAP + 4)}${legend(agents)}${rows.map((r, i) => row(r, i, key))}${
      suite === null ? '' : suiteRow(report!, suiteTop)
    }
  </svg>`;
}

/** The pass-rate plot, with a caption saying what its marks mean. */
export function passRatePlot(report: ComparisonReport, key: string): Html {
  const t = report.totals;
  const label =
    `Pass rates with their 95 % intervals, baseline ${report.baseline.agent} against candidate ${report.candidate.agent}: ` +
    `${t.regressed} regressed, ${t.fixed} fixed, ${t.unchanged} unchanged` +
    `${t.error > 0 ? `, ${t.error} could not be compared` : ''}` +
    `${t.fails_on_both_sides > 0 ? `; ${t.fails_on_both_sides} failing on both sides` : ''}` +
    `${report.suite === null ? '' : `; the suite as a whole ${VERDICT_WORD[report.suite.verdict]}`}`;
  const agents = { baseline: report.baseline.agent, candidate: report.candidate.agent };
  return html`<section class="card plot-card">
    ${plotSvg(report.conversations.map(reportRow), agents, label, key, report)}
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

/** What the live plot reads of a running comparison, as `GET /v1/runs/{id}` shows it. */
export interface LiveComparison {
  /** The candidate's engine key. */
  agent: string;
  baseline: string | null;
  progress: {
    conversations: Array<{
      conversation: string;
      conversation_index: number;
      rounds: number;
      budget: number;
      state: string;
      decision: ConversationDecision | null;
    }>;
  };
}

const liveSide = (s: DecidedSide): PlotSide => ({
  passed: s.passed,
  judged: s.judged,
  interval: s.pass_rate_interval,
});

/** A conversation's live row: its intervals and verdict once the gate stopped it, how far it got before. */
function liveRow(c: LiveComparison['progress']['conversations'][number]): PlotRow {
  const d = c.decision;
  const base = { name: c.conversation, index: c.conversation_index, pending: '' };
  if (d === null) {
    const cancelled = c.state === 'cancelled';
    return {
      ...base,
      tone: cancelled ? 'undecided' : 'running',
      word: cancelled ? VERDICT_WORD.undecided : c.state === 'running' ? 'deciding…' : 'stopped',
      sides: null,
      pending: `${c.state === 'running' ? 'deciding' : c.state}: ${c.rounds} of ${c.budget} rounds`,
    };
  }
  const sides = { baseline: liveSide(d.baseline), candidate: liveSide(d.candidate) };
  return d.verdict === null
    ? { ...base, tone: 'stopped', word: 'stopped', sides }
    : { ...base, tone: d.verdict, word: VERDICT_WORD[d.verdict], sides };
}

/**
 * The plot of a comparison that runs: a row per conversation, its intervals and verdict drawn when
 * the gate stops it (final: it runs no more rounds), "deciding" before. A conversation that
 * crossed its boundary has its verdict; one stopped otherwise gets its verdict with the report.
 * The runs page draws it (public/runs/run.js imports it in the browser, where knip does not look).
 *
 * @public
 */
export function livePlot(run: LiveComparison): Html {
  const rows = run.progress.conversations.map(liveRow);
  const stopped = rows.filter((r) => r.sides !== null).length;
  const count = (tone: string) => rows.filter((r) => r.tone === tone).length;
  const agents = { baseline: run.baseline ?? '', candidate: run.agent };
  const label =
    `Pass rates with their 95 % intervals so far, baseline ${agents.baseline} against candidate ${agents.candidate}: ` +
    `${stopped} of ${rows.length} conversations stopped, ${count('regressed')} regressed, ${count('fixed')} fixed`;
  return html`<section class="card plot-card live">
    ${plotSvg(rows, agents, label, '')}
    <p class="plot-caption">
      Each conversation's row is drawn when the gate stops it: each side's pass rate over its judged attempts (the mark) with its 95 %
      interval (the line), final, since it runs no more rounds. A conversation whose test crossed its boundary is
      <b class="regressed">regressed</b> or <b class="fixed">fixed</b> at once, and the report keeps that verdict; one stopped otherwise
      gets its verdict with the report, from every conversation's test together.
    </p>
  </section>`;
}
