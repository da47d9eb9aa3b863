import { readFileSync } from 'node:fs';
import { escapeHtml, html, join, duration, plural, usage, type Fragment, type Html } from './kit.js';
import type {
  AttemptReport,
  AttemptReview,
  ConversationReport,
  Count,
  CriterionResult,
  ExpectationResult,
  MemoryReport,
  RevisionReport,
  TurnReport,
} from '../run-report.js';
import { describeExpectation, FAIL, PASS, reviewLine, SKIP, type Answer } from '../wording.js';
import { memoryDiffHtml } from './memory.js';

/**
 * The pieces both HTML reports are made of: the page around them, badges, counts, and an attempt
 * as a chat transcript — the user's line and the agent's reply as bubbles, tools and shown elements
 * as chips, a ✓ or ✗ per expectation with its evidence and per criterion with the judge's reasoning.
 */

/**
 * The reports' one style sheet, public/report/report.css at the package root (four levels above
 * both src/suites/report/html/ and dist/suites/report/html/), read on the first page written and
 * inlined: the page makes no request.
 */
const STYLE_SHEET = new URL('../../../../public/report/report.css', import.meta.url);
let style: string | undefined;
const styleSheet = (): string => (style ??= readFileSync(STYLE_SHEET, 'utf8'));

/** The policy: inline styles and data: images, nothing else — no script, no request of any kind. */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** The whole page: the policy first, so that nothing from the report comes before it. */
export function page(title: string, body: Html, wide = false): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${CSP}">`,
    '<meta name="referrer" content="no-referrer">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="generator" content="agent-test-gateway">',
    '<link rel="icon" href="data:,">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${styleSheet()}</style>`,
    '</head>',
    '<body>',
    `<div class="${wide ? 'page wide' : 'page'}">`,
    body.markup,
    '</div>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** A status as a coloured pill; its class is the status itself (passed, failed, flaky, error, regressed, fixed, …). */
export const badge = (status: string, label: string = status, big = false): Html =>
  html`<span class="${big ? `badge big ${status}` : `badge ${status}`}">${label}</span>`;

export const conversationLabel = (status: ConversationReport['status']): string =>
  status === 'error' ? 'could not run' : status === 'cancelled' ? 'not decided' : status;

export const revisionText = (r: RevisionReport): string => `revision ${r.revision} (${r.state})`;

/** A label over a value, for the summary's facts. */
export const fact = (label: string, value: Fragment, wide = false): Html =>
  html`<div class="${wide ? 'wide' : ''}">
    <dt>${label}</dt>
    <dd>${value}</dd>
  </div>`;

/** A number over its label; `zero` greys out a count nobody needs to look at. */
const tile = (n: number, label: string, tone: string): Html =>
  html`<div class="${`tile ${tone}${n === 0 && tone !== '' ? ' zero' : ''}`}">
    <div class="n">${n}</div>
    <div class="l">${label}</div>
  </div>`;

const headCell = (label: string, width: string | undefined): Html =>
  width === undefined ? html`<th>${label}</th>` : html`<th style="${`width:${width}`}">${label}</th>`;

/** The overview of a report's conversations: a table under its heading, a column per (label, width). */
export const overviewTable = (columns: Array<[label: string, width?: string]>, rows: Html[]): Html =>
  html`<h2>Conversations</h2>
    <div class="card table">
      <table>
        <thead>
          <tr>
            ${columns.map(([label, width]) => headCell(label, width))}
          </tr>
        </thead>
        <tbody>
          ${rows}
        </tbody>
      </table>
    </div>`;

/** A count of conversations, one tile per status (tone, count, label), and the bar of their shares. */
export const countTiles = (total: number, parts: Array<[tone: string, n: number, label: string]>): Html =>
  html`<div class="tiles">
      ${tile(total, total === 1 ? 'conversation' : 'conversations', '')}${parts.map(([tone, n, label]) => tile(n, label, tone))}
    </div>
    ${bar(parts.map(([tone, n]) => [tone, n]))}`;

/** A bar of shares, one segment per status that has any. */
const bar = (parts: Array<[string, number]>): Html => {
  const total = parts.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return html``;
  return html`<div class="bar">
    ${parts
      .filter(([, n]) => n > 0)
      .map(([tone, n]) => html`<i class="${tone}" style="${`width:${((n / total) * 100).toFixed(2)}%`}"></i>`)}
  </div>`;
};

/** A pass rate as a small meter and `2/4 (50%)`. */
export const rate = (passed: number, total: number): Html => {
  const share = total === 0 ? 0 : passed / total;
  return html`<span class="meter"><i style="${`width:${(share * 100).toFixed(0)}%`}"></i></span>${passed}/${total}
    <span class="muted">(${Math.round(share * 100)}%)</span>`;
};

/**
 * Which checks a comparison found to differ between the sides, keyed as it keys them: where (a
 * scripted turn or the conversation), what kind, and the expectation as described or the criterion's id.
 */
export type DifferingKeys = ReadonlySet<string>;
export const differenceKey = (turn: number | null, kind: 'expectation' | 'criterion', what: string): string =>
  `${turn === null ? 'conversation' : `turn ${turn}`} ${kind} ${what}`;

interface CheckContext {
  /** the scripted turn the checks belong to; null: the conversation as a whole (or a simulated turn, which no comparison keys) */
  turn: number | null;
  differs: DifferingKeys;
  /** whether the criteria were ruled on at all (not for a skipped turn, nor an attempt that could not go on) */
  judged: boolean;
}

function expectationItem(e: ExpectationResult, at: CheckContext): Html {
  const description = describeExpectation(e);
  const [tone, mark] = e.passed === null ? ['none', SKIP] : e.passed ? ['pass', PASS] : ['fail', FAIL];
  const differs = at.differs.has(differenceKey(at.turn, 'expectation', description));
  return html`<li class="${`check ${tone}${differs ? ' differs' : ''}`}">
    <span class="mark">${mark}</span
    ><span>
      <span class="what">${description}</span>${e.passed === null ? html` <span class="ev">— not evaluated</span>` : ''}${
        e.evidence === '' ? '' : html` <span class="ev">— ${e.evidence}</span>`
      }</span
    >
  </li>`;
}

function criterionItem(c: CriterionResult, at: CheckContext): Html {
  const [tone, mark, verdict] = !at.judged
    ? ['none', SKIP, 'not judged']
    : c.verdict === 'inconclusive'
      ? ['inconclusive', '?', 'inconclusive']
      : c.passed
        ? ['pass', PASS, 'passed']
        : ['fail', FAIL, 'failed'];
  const differs = at.differs.has(differenceKey(at.turn, 'criterion', c.id));
  return html`<li class="${`check ${tone}${differs ? ' differs' : ''}`}">
    <span class="mark">${mark}</span
    ><span>
      <span class="verdict">${verdict}</span> <span class="what">${c.text}</span> <code class="muted">${c.id}</code>${
        c.reasoning === null ? '' : html` <span class="ev">— ${c.reasoning}</span>`
      }</span
    >
  </li>`;
}

function checks(expectations: ExpectationResult[], criteria: CriterionResult[], at: CheckContext): Html {
  if (expectations.length + criteria.length === 0) return html``;
  return html`<ul class="checks">
    ${expectations.map((e) => expectationItem(e, at))}${criteria.map((c) => criterionItem(c, at))}
  </ul>`;
}

const chip = (kind: string, label: string, value: string): Html =>
  html`<span class="${`chip ${kind}`}"><span class="k">${label}</span>${value}</span>`;

/** A bubble keeps the text's line breaks (pre-wrap): written on one line, so that no formatter adds whitespace to it. */
const bubble = (classes: string, text: string): Html => html`<div class="${classes}">${text}</div>`;

/** Why a failed turn that did not end with its exit failed, once: not what the evidence says, nor the close boilerplate. */
const turnNotes = (turn: TurnReport): string[] => {
  if (turn.status !== 'failed' || turn.outcome === 'exit') return [];
  const said = turn.expectations.map((e) => e.evidence).join('\n');
  return turn.notes.filter((note) => !said.includes(note) && !/end-of-conversation work/.test(note));
};

export interface TurnHtmlOptions {
  differs: DifferingKeys;
  /** the comparison's first diverging turn is this one */
  diverged: boolean;
  /** the attempt could not go on or be judged (its criteria were never ruled on) */
  attemptError: boolean;
  /** the attempt's review: its sentence is shown next to the turn it names */
  review: AttemptReview | null;
}

/** Who is responsible for a failed attempt, and why. */
const reviewHtml = (review: AttemptReview): Html => html`<div class="${`review ${review.responsible}`}">${reviewLine(review)}</div>`;

/** One turn as a chat exchange, its chips and checks. */
export function turnHtml(turn: TurnReport, opts: TurnHtmlOptions): Html {
  const simulated = turn.source === 'simulated_user';
  const skipped = turn.status === 'skipped';
  const at: CheckContext = {
    turn: simulated ? null : turn.index,
    differs: simulated ? new Set() : opts.differs,
    judged: !opts.attemptError && !skipped && turn.outcome !== 'error',
  };
  const chips = [
    ...turn.tools.map((t) => chip('tool', 'tool', t)),
    ...turn.shown.map((s) => chip('shown', 'shown', s)),
    turn.outcome !== null && turn.outcome !== 'exit' ? chip(turn.outcome === 'cancelled' ? 'warn' : 'bad', 'outcome', turn.outcome) : null,
    turn.ended_by_agent ? chip('', 'ended', 'by the agent') : null,
    turn.reconnected ? chip('warn', 'reconnected', 'planning lost') : null,
  ].filter((c) => c !== null);
  const user = html`<div class="${simulated ? 'msg user sim' : 'msg user'}">
    <div class="who">${simulated ? html`<span class="sim-tag">simulated user</span>` : 'user'}</div>
    ${bubble('bubble', turn.line)}
  </div>`;
  const agent = skipped
    ? html`<div class="skip-why">skipped: ${turn.skipped_reason ?? 'not run'}</div>`
    : html`<div class="msg agent">
        <div class="who">agent${turn.duration_ms === null ? '' : html`<span>·</span><span>${duration(turn.duration_ms)}</span>`}</div>
        ${
          turn.text === null || turn.text === ''
            ? bubble('bubble silent', turn.outcome === 'error' ? 'did not run' : 'no text')
            : bubble('bubble', turn.text)
        }
        ${chips.length > 0 ? html`<div class="chips">${chips}</div>` : ''}
      </div>`;
  const classes = `turn ${turn.status}${opts.diverged ? ' diverged' : ''}`;
  return html`<div class="${classes}">
    <div class="no">${turn.index}</div>
    <div class="msgs">
      ${user}${agent} ${turn.error === null ? '' : html`<div class="problem">${FAIL} ${turn.error.error}: ${turn.error.message}</div>`}
      ${checks(turn.expectations, turn.criteria, at)} ${turnNotes(turn).map((n) => html`<div class="note">note: ${n}</div>`)}
      ${opts.review !== null && opts.review.turn === turn.index ? reviewHtml(opts.review) : ''}
    </div>
  </div>`;
}

/** The checks over the whole conversation, what it left in memory and its memory checks, and why an attempt could not go on. */
export function wholeHtml(attempt: AttemptReport, differs: DifferingKeys): Html {
  const judged = attempt.status !== 'error';
  const list = checks(attempt.expectations, attempt.criteria, { turn: null, differs, judged });
  const { review, memory } = attempt;
  if (attempt.expectations.length + attempt.criteria.length === 0 && attempt.error === null && review === null && memory === null) {
    return html``;
  }
  const error = attempt.error;
  const stopped = error === null ? '' : html`<div class="problem">${FAIL} could not go on — ${error.error}: ${error.message}</div>`;
  const remembered =
    memory === null
      ? ''
      : html`<h4>What it left in memory</h4>
          ${memoryDiffHtml(memory)}
          ${checks(memory.expectations, memory.criteria, { turn: null, differs, judged: judged && memory.status !== 'not_checked' })}`;
  return html`<div class="whole">
    <h4>The whole conversation</h4>
    ${stopped} ${list} ${review !== null && review.turn === null ? reviewHtml(review) : ''} ${remembered}
  </div>`;
}

/** An attempt's facts: stop reason, session, device, locale, time, model usage. */
export function attemptMeta(attempt: AttemptReport): Html {
  const items: Fragment[] = [
    html`<span>stop: <code>${attempt.stop_reason}</code></span>`,
    attempt.session_id === null ? html`<span>no session</span>` : html`<span>session <code>${attempt.session_id}</code></span>`,
    attempt.device_ref === null ? null : html`<span>device <code>${attempt.device_ref}</code></span>`,
    attempt.locale === null ? null : html`<span>${attempt.locale}</span>`,
    attempt.time_zone === null ? null : html`<span>${attempt.time_zone}</span>`,
    attempt.time_offset === null ? null : html`<span>time offset ${attempt.time_offset}</span>`,
    html`<span>${duration(attempt.duration_ms)}</span>`,
    attempt.model_usage.calls === 0 ? null : html`<span>model ${usage(attempt.model_usage)}</span>`,
  ];
  return html`<span class="meta">${join(items, '')}</span>`;
}

/** An attempt's transcript, turn by turn, then its whole-conversation checks and notes. */
export function attemptBody(attempt: AttemptReport, differs: DifferingKeys): Html {
  const attemptError = attempt.status === 'error';
  const { review } = attempt;
  return html`${attempt.turns.map((turn) => turnHtml(turn, { differs, diverged: false, attemptError, review }))}
  ${wholeHtml(attempt, differs)}
  ${attempt.notes.length === 0 ? '' : html`<div class="note">${attempt.notes.map((n) => html`<div>note: ${n}</div>`)}</div>`}`;
}

const ruling = (c: CriterionResult): string => `${c.text} — ${c.verdict}${c.reasoning === null ? '' : `: ${c.reasoning}`}`;

/** The first thing that went wrong in a conversation's first attempt that did not pass: for the overview. */
export function firstProblem(conv: ConversationReport): string {
  const attempt = conv.attempts.find((a) => a.status !== 'passed');
  if (attempt === undefined) return '';
  if (attempt.error !== null) return attempt.error.message;
  for (const turn of attempt.turns) {
    if (turn.error !== null) return `turn ${turn.index}: ${turn.error.message}`;
    const e = turn.expectations.find((x) => x.passed === false);
    if (e !== undefined) return `turn ${turn.index}: ${describeExpectation(e)} — ${e.evidence}`;
    const c = turn.criteria.find((x) => !x.passed && turn.status !== 'skipped');
    if (c !== undefined) return `turn ${turn.index}: ${ruling(c)}`;
  }
  const e = attempt.expectations.find((x) => x.passed === false);
  if (e !== undefined) return `${describeExpectation(e)} — ${e.evidence}`;
  const c = attempt.criteria.find((x) => !x.passed);
  if (c !== undefined) return ruling(c);
  const m = attempt.memory?.expectations.find((x) => x.passed === false);
  if (m !== undefined) return `${describeExpectation(m)} — ${m.evidence}`;
  const mc = attempt.memory?.criteria.find((x) => !x.passed);
  if (mc !== undefined) return ruling(mc);
  return `attempt ${attempt.attempt} ${attempt.status}`;
}

export const attemptsText = (conv: Pick<ConversationReport, 'attempts_passed' | 'attempts_total'>): string =>
  `${conv.attempts_passed}/${conv.attempts_total} attempts passed`;

export const countText = (c: Count, failedWord = 'failed', skippedWord = 'skipped'): Html =>
  html`${c.passed}/${c.total}
  passed${c.failed > 0 ? html` <span class="sep">·</span> ${c.failed} ${failedWord}` : ''}${
    c.skipped > 0 ? html` <span class="sep">·</span> ${c.skipped} ${skippedWord}` : ''
  }`;

/** The memory fixture: restored before each attempt, the snapshot after the run, what went wrong. */
export function memoryText(memory: MemoryReport): Html {
  const restored =
    memory.restored === null
      ? 'nothing restored'
      : `restored ${plural(memory.restored, 'unit')} before ${memory.restores === 1 ? 'the run' : `each of ${memory.restores} attempts`}`;
  return html`<code>${memory.device_ref}</code> ·
    ${restored}${
      memory.snapshot === null ? '' : html` · snapshot after the run: ${plural(memory.snapshot.unit_count, 'unit')}`
    }${memory.error === null ? '' : html` · <span class="problem">${memory.error.message}</span>`}`;
}

/** The page's header: what it is, the answer in words, the verdict, the title, and what ran. */
export function header(kind: string, status: string, label: string, title: string, sub: Fragment[], answer?: Answer): Html {
  return html`<header class="${`card head ${status}`}">
    <div class="kind">${kind}</div>
    ${answer === undefined ? '' : html`<p class="${`answer ${answer.tone}`}">${answer.text}</p>`}
    <div class="title">
      ${badge(status, label, true)}
      <h1>${title}</h1>
    </div>
    <div class="sub">${sub.filter((s) => s !== null && s !== undefined && s !== false).map((s) => html`<span>${s}</span>`)}</div>
  </header>`;
}

/** The notes, and where the page came from. */
export const footer = (notes: string[], id: string): Html =>
  html`<footer>
    ${
      notes.length === 0
        ? ''
        : html`<b>Notes</b>
            <ul>
              ${notes.map((n) => html`<li>${n}</li>`)}
            </ul>`
    }
    <p>Written by agent-test-gateway from ${id}. A self-contained page: it runs no script and loads nothing.</p>
  </footer>`;

/** The id a conversation's section is linked to from the overview. */
export const convId = (prefix: string, index: number): string => `${prefix}-${index}`;
