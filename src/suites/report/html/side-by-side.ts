import type { ComparisonReport, ConversationComparison, Difference, Side, Tally } from '../comparison.js';
import type { AttemptReport, ConversationReport } from '../run-report.js';
import { html, plural, type Html } from './kit.js';
import { attemptMeta, badge, differenceKey, turnHtml, wholeHtml, type DifferingKeys } from './parts.js';

/**
 * Side by side: one attempt number of a conversation on the baseline and on the candidate, in two
 * columns aligned by turn, the turn where the replies diverge marked, and the checks that came out
 * differently in a table of both sides' tallies. The comparison's HTML file shows every attempt so
 * (./comparison.ts); the runs page shows the one attempt a reader opens (`sideBySide`).
 */

export const SIDES: Side[] = ['baseline', 'candidate'];
export const sideName = (side: Side): string => (side === 'baseline' ? 'Baseline' : 'Candidate');

const share = (t: Tally): number | null => (t.evaluated === 0 ? null : t.passed / t.evaluated);

function tallyCell(mine: Tally, theirs: Tally): Html {
  const [a, b] = [share(mine), share(theirs)];
  const tone = a === null || b === null || a === b ? '' : a > b ? 'better' : 'worse';
  return html`<td class="${tone}">
    <span class="tally">${mine.evaluated === 0 ? 'not evaluated' : `${mine.passed}/${mine.evaluated} passed`}</span
    >${mine.evidence === null ? '' : html`<span class="ev">${mine.evidence}</span>`}
  </td>`;
}

/** The checks that came out differently, or (`alike`) those that fail alike on both sides, in a table of both sides' tallies. */
export function checksTable(rows: Difference[], caption: string, worse: boolean): Html {
  if (rows.length === 0) return html``;
  const row = (d: Difference) =>
    html`<tr>
      <td class="num">${d.turn === null ? 'conversation' : `turn ${d.turn}`}</td>
      <td>
        <span class="muted">${d.kind}</span>
        <b>${d.description}</b>${d.kind === 'criterion' ? html` <code class="muted">${d.name}</code>` : ''}
      </td>
      ${tallyCell(d.baseline, d.candidate)}${tallyCell(d.candidate, d.baseline)}
    </tr>`;
  return html`<div class="${worse ? 'diffs diff' : 'diffs diff good'}">
    <div class="cap">${caption}</div>
    <table>
      <thead>
        <tr>
          <th style="width:110px">Where</th>
          <th>What</th>
          <th style="width:30%">Baseline</th>
          <th style="width:30%">Candidate</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(row)}
      </tbody>
    </table>
  </div>`;
}

export const differencesTable = (c: ConversationComparison): Html =>
  checksTable(
    c.differences,
    `${plural(c.differences.length, 'expectation or criterion', 'expectations or criteria')} came out differently`,
    c.differences.some((d) => (share(d.candidate) ?? 0) < (share(d.baseline) ?? 0)),
  );

/** One attempt number on both sides, turn by turn in two columns; the diverging turn marked. */
function attemptPair(
  n: number,
  sides: Record<Side, AttemptReport | undefined>,
  c: ConversationComparison,
  differs: DifferingKeys,
  forceOpen = false,
): Html {
  const head = (side: Side) => {
    const a = sides[side];
    return html`<div class="${side === 'baseline' ? 'cell l side-head' : 'cell r side-head'}">
      <span class="side">${sideName(side)}</span>${
        a === undefined ? html`<span class="muted">no attempt ${n}</span>` : html`${badge(a.status)} ${attemptMeta(a)}`
      }
    </div>`;
  };
  const turns = Math.max(sides.baseline?.turns.length ?? 0, sides.candidate?.turns.length ?? 0);
  const rows: Html[] = [];
  for (let i = 0; i < turns; i++) {
    const diverged = c.diverged_at_turn === i + 1;
    if (diverged) rows.push(html`<div class="row-flag"><span class="flag">▼ the replies diverge from turn ${i + 1}</span></div>`);
    for (const side of SIDES) {
      const a = sides[side];
      const turn = a?.turns[i];
      const place = side === 'baseline' ? 'cell l line' : 'cell r line';
      rows.push(
        turn === undefined
          ? html`<div class="${`${place} empty`}" data-side="${side}">no turn ${i + 1}</div>`
          : html`<div class="${place}" data-side="${side}">
              ${turnHtml(turn, { differs, diverged, attemptError: a!.status === 'error', review: a!.review })}
            </div>`,
      );
    }
  }
  const whole = SIDES.map((side) => {
    const a = sides[side];
    return html`<div class="${side === 'baseline' ? 'cell l' : 'cell r'}" data-side="${side}">
      ${a === undefined ? '' : wholeHtml(a, differs)}
    </div>`;
  });
  const open =
    forceOpen || SIDES.some((side) => sides[side] !== undefined && sides[side].status !== 'passed') || c.baseline.attempts_total <= 1;
  return html`<details class="attempt" ${open ? 'open' : ''}>
    <summary>
      <span class="label">Attempt ${n}</span>${SIDES.map(
        (side) => html`<span>${side} ${sides[side] === undefined ? '–' : badge(sides[side].status)}</span>`,
      )}
    </summary>
    <div class="attempt-body"><div class="pair">${head('baseline')}${head('candidate')}${rows}${whole}</div></div>
  </details>`;
}

/** The expectations and criteria that came out differently, as keys the transcripts outline. */
const differingKeys = (c: ConversationComparison): DifferingKeys =>
  new Set(c.differences.map((d) => differenceKey(d.turn, d.kind, d.kind === 'expectation' ? d.description : d.name)));

/** One conversation's reports on each side. */
function sidesOf(report: ComparisonReport, c: ConversationComparison): Record<Side, ConversationReport | undefined> {
  const of = (side: Side) =>
    report.runs[side].conversations.find((conv) => conv.index === c.index) ?? report.runs[side].conversations[c.index];
  return { baseline: of('baseline'), candidate: of('candidate') };
}

/** Attempt `n` on each side. */
const numbered = (sides: Record<Side, ConversationReport | undefined>, n: number): Record<Side, AttemptReport | undefined> => ({
  baseline: sides.baseline?.attempts.find((a) => a.attempt === n),
  candidate: sides.candidate?.attempts.find((a) => a.attempt === n),
});

/** Every attempt number of one conversation side by side, in order: the comparison's HTML file shows them all. */
export function attemptPairs(report: ComparisonReport, c: ConversationComparison): Html[] {
  const sides = sidesOf(report, c);
  const differs = differingKeys(c);
  const numbers = [...new Set([...(sides.baseline?.attempts ?? []), ...(sides.candidate?.attempts ?? [])].map((a) => a.attempt))];
  return numbers.sort((a, b) => a - b).map((n) => attemptPair(n, numbered(sides, n), c, differs));
}

/**
 * Attempt `n` of one conversation, baseline and candidate in two columns aligned by turn, the
 * diverging turn marked, and the checks that came out differently: what the runs page opens
 * (public/runs/run.js imports it in the browser, where knip does not look).
 *
 * @public
 */
export function sideBySide(report: ComparisonReport, c: ConversationComparison, n: number): Html {
  return html`${differencesTable(c)}${attemptPair(n, numbered(sidesOf(report, c), n), c, differingKeys(c), true)}`;
}
