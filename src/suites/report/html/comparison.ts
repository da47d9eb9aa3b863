import type { ComparisonReport, ConversationComparison, Difference, RateInterval, Side, SideResult } from '../comparison.js';
import { failingAlike } from '../differences.js';
import { attemptsModeText, confidenceText, formatP, fraction, PASS_HAT_K_MEANS, signed, STOP_WORDS } from '../wording.js';
import { duration, html, join, plural, usage, type Fragment, type Html } from './kit.js';
import { passRatePlot } from './plot.js';
import { badge, conversationLabel, convId, countTiles, overviewTable, fact, memoryText, rate, revisionText } from './parts.js';
import { attemptPairs, checksTable, differencesTable, SIDES, sideName } from './side-by-side.js';

/**
 * The body of the comparison's HTML page: the pass-rate plot first, then the summary (verdict counts, each side's revision,
 * pass rates, latency and model usage), the overview, then each conversation: the verdict's sentence and its figures, each
 * side's pass rate, and its attempts with baseline and candidate side by side (./side-by-side.ts).
 */

function comparisonSummary(report: ComparisonReport): Html {
  const t = report.totals;
  const cell = (fn: (side: Side) => Fragment): Html => html`${SIDES.map((side) => html`<td>${fn(side)}</td>`)}`;
  const convCounts = (side: Side): Html => {
    const c = report.runs[side].totals.conversations;
    const parts: Array<[number, string, string]> = [
      [c.passed, 'passed', 'passed'],
      [c.flaky, 'flaky', 'flaky'],
      [c.failed, 'failed', 'failed'],
      [c.error, 'error', 'could not run'],
      [c.cancelled, 'cancelled', 'not decided'],
    ];
    return join(
      parts.filter(([n]) => n > 0).map(([n, tone, label]) => badge(tone, `${n} ${label}`)),
      ' ',
    );
  };
  return html`<section class="card summary">
    ${countTiles(t.conversations, [
      ['regressed', t.regressed, 'regressed'],
      ['fixed', t.fixed, 'fixed'],
      ['unchanged', t.unchanged, 'unchanged'],
      ['error', t.error, 'could not compare'],
      // Only a cancelled comparison has undecided conversations: no tile for them otherwise.
      ...(t.undecided > 0 ? [['undecided', t.undecided, 'not decided'] as [string, number, string]] : []),
    ])}
    <table class="sides">
      <thead>
        <tr>
          <th></th>
          ${SIDES.map((side) => html`<th>${sideName(side)}</th>`)}
        </tr>
      </thead>
      <tbody>
        <tr>
          <th>Revision that ran</th>
          ${cell((side) => html`<code>${report[side].agent}</code> · ${revisionText(report[side].revision)}`)}
        </tr>
        <tr>
          <th>Conversations</th>
          ${cell(convCounts)}
        </tr>
        <tr>
          <th>Attempts passed</th>
          ${cell((side) => {
            const a = report.runs[side].totals.attempts;
            return rate(a.passed, a.total);
          })}
        </tr>
        <tr>
          <th>Turn latency p50 / p95</th>
          ${cell(
            (side) => html`<span class="mono">${duration(report.latency[side].p50_ms)} / ${duration(report.latency[side].p95_ms)}</span>`,
          )}
        </tr>
        <tr>
          <th>Model usage</th>
          ${cell((side) => usage(report.model_usage[side]))}
        </tr>
        <tr>
          <th>Run</th>
          ${cell((side) => html`<code>${report.runs[side].run_label}</code> · ${duration(report.runs[side].duration_ms)}`)}
        </tr>
      </tbody>
    </table>
    <dl class="facts">
      ${fact('Seed · prompt version', html`<code>${report.seed}</code> · <code>${report.prompt_version}</code>`)}
      ${fact('Attempts', html`${attemptsModeText(report.attempts)} <span class="sep">·</span> ${confidenceText(report.confidence)}`)}
      ${
        t.fails_on_both_sides === 0
          ? ''
          : fact(
              'Fails on both sides',
              html`<b>${plural(t.fails_on_both_sides, 'conversation')}</b>
                <span class="muted">not a regression, but neither revision meets its pass rate</span>`,
            )
      }
      ${fact('Sessions', html`${report.sessions.spent} of ${report.sessions.budget} spent`)}
      ${fact('Model usage, both sides', usage(report.model_usage.total))}
      ${report.runs.candidate.memory === null ? '' : fact('Memory', memoryText(report.runs.candidate.memory), true)}
    </dl>
  </section>`;
}

/** `76–99 %`: an interval in percent. */
const range = (i: RateInterval): string => `${Math.round(i.low * 100)}–${Math.round(i.high * 100)} %`;

/** `7/7 (65–100 %)`: the judged attempts that passed, and the 95 % interval of the pass rate. */
const judgedRate = (s: SideResult): Html =>
  s.pass_rate_interval.estimate === null
    ? html`<span class="muted">no attempt could be judged</span>`
    : html`${s.attempts_passed}/${s.attempts_total - s.attempts_error} <span class="muted">(${range(s.pass_rate_interval)})</span>`;

const sideCell = (s: SideResult): Html => html`${badge(s.status, conversationLabel(s.status))} ${judgedRate(s)}`;

const differsLine = (d: Difference): Html => html`<div>${d.description}</div>`;

/** The verdict's badge, and beside it whether the conversation fails on both sides (which the gate lets pass). */
const verdictBadges = (c: ConversationComparison): Html =>
  html`${badge(c.verdict, c.verdict === 'error' ? 'could not compare' : c.verdict === 'undecided' ? 'not decided' : c.verdict)}${
    c.fails_on_both_sides ? html` ${badge('both-fail', 'fails on both sides')}` : ''
  }`;

function comparisonOverview(report: ComparisonReport, key: string): Html {
  const rows = report.conversations.map(
    (c) =>
      html`<tr>
        <td>${verdictBadges(c)}</td>
        <td><a href="${`#${convId(`${key}cmp`, c.index)}`}">${c.name}</a></td>
        <td>${sideCell(c.baseline)}</td>
        <td>${sideCell(c.candidate)}</td>
        <td class="num">${c.diverged_at_turn === null ? html`<span class="muted">–</span>` : `turn ${c.diverged_at_turn}`}</td>
        <td>${c.differences.length === 0 ? html`<span class="muted">none</span>` : c.differences.map(differsLine)}</td>
      </tr>`,
  );
  return overviewTable([['Verdict', '150px'], ['Conversation', '22%'], ['Baseline'], ['Candidate'], ['Diverged at'], ['Differs']], rows);
}

/** A conversation failing on both sides: what fails alike, which the differences leave out. */
function failingAlikeTable(report: ComparisonReport, c: ConversationComparison): Html {
  if (!c.fails_on_both_sides) return html``;
  const alike = failingAlike(report, c);
  const what = alike.length === 0 ? 'see the differences above' : `${plural(alike.length, 'check')} failing alike`;
  const caption = `Fails on both sides: not a regression, but neither revision meets its pass_rate — ${what}`;
  return alike.length === 0 ? html`<p class="both-fail">${caption}</p>` : checksTable(alike, caption, true);
}

/** pass^k, k = 1…8: the chance that k attempts in a row all pass. */
const passHat = (values: number[]): Html | '' =>
  values.length < 2
    ? ''
    : html`<span class="passk" title="${PASS_HAT_K_MEANS}"
        >pass^k ${values.map((v, i) => html`<span><i>${`k=${i + 1}`}</i> ${fraction(v)}</span> `)}<span class="means"
          >${PASS_HAT_K_MEANS}</span
        ></span
      >`;

/** The verdict's sentence, then the figures it rests on: the difference, the p-value against the needed, rounds and sessions. */
function verdictStatistics(c: ConversationComparison): Html {
  const st = c.statistics;
  const p =
    st.p_regressed === null || st.p_fixed === null
      ? null
      : c.verdict === 'fixed' || (c.verdict !== 'regressed' && st.p_fixed < st.p_regressed)
        ? { value: st.p_fixed, of: 'for a gain' }
        : { value: st.p_regressed, of: 'for a drop' };
  const figures: Fragment[] = [
    st.difference === null || st.difference.estimate === null
      ? null
      : fact(
          'Difference',
          html`<b>${signed(st.difference.estimate)} points</b>
            <span class="muted">(95 % interval ${signed(st.difference.low)} to ${signed(st.difference.high)})</span>`,
        ),
    p === null
      ? null
      : fact(
          'p-value',
          html`<b>${formatP(p.value)}</b> ${p.of}${
              st.p_needed === null ? '' : html` <span class="muted">(needed ≤ ${formatP(st.p_needed)})</span>`
            }`,
        ),
    c.verdict === 'unchanged'
      ? fact(
          'Detectable drop',
          st.detectable_drop === null
            ? html`<span class="muted">none: too few attempts to catch a drop reliably</span>`
            : html`<b>${Math.round(st.detectable_drop * 100)} points</b> or more, caught 80 % of the time
                ${st.stop === null ? 'in the rounds run' : 'by the gate as designed, early stops included'}`,
        )
      : null,
    fact(
      'Rounds',
      html`<b>${st.rounds}</b> of
        ${st.sessions_budget / 2}${st.stop === null ? '' : html` <span class="muted">· ${STOP_WORDS[st.stop]}</span>`}`,
    ),
    fact('Sessions', html`<b>${st.sessions}</b> of ${st.sessions_budget}`),
  ];
  return html`<div class="${`verdict-stats ${c.verdict}`}">
    <p class="sentence">${st.summary}</p>
    <dl class="facts">${figures}</dl>
  </div>`;
}

/** Each side's status, pass rate, latency and model usage for one conversation, in the columns the transcripts use. */
function sidesStats(c: ConversationComparison): Html {
  const cell = (side: Side) => {
    const s = c[side];
    return html`<div class="${side === 'baseline' ? 'cell l' : 'cell r'}">
      <span class="side">${sideName(side)}</span> ${badge(s.status, conversationLabel(s.status))}<span
        >${rate(s.attempts_passed, s.attempts_total - s.attempts_error)}</span
      >
      <span class="interval">95 % interval <b>${s.pass_rate_interval.estimate === null ? 'none' : range(s.pass_rate_interval)}</b></span>
      ${s.attempts_error === 0 ? '' : html`<span class="problem">${s.attempts_error} in error, left out</span>`} ${passHat(s.pass_hat_k)}
      <span>latency p50 <b>${duration(s.latency.p50_ms)}</b> · p95 <b>${duration(s.latency.p95_ms)}</b></span>
      <span class="muted">model ${usage(s.model_usage)}</span>
    </div>`;
  };
  return html`<div class="pair sides">${cell('baseline')}${cell('candidate')}</div>`;
}

function comparedConversation(report: ComparisonReport, c: ConversationComparison, key: string): Html {
  const open = c.verdict === 'regressed' || c.verdict === 'error' || !c.candidate.passed;
  const stats = [
    html`<span
      >baseline ${c.baseline.status} ${c.baseline.attempts_passed}/${c.baseline.attempts_total} → candidate ${c.candidate.status}
      ${c.candidate.attempts_passed}/${c.candidate.attempts_total}</span
    >`,
    html`<span>${plural(c.statistics.sessions, 'session')}</span>`,
    c.diverged_at_turn === null ? html`<span>same replies</span>` : html`<span>diverged at turn ${c.diverged_at_turn}</span>`,
    html`<span>${plural(c.differences.length, 'difference')}</span>`,
  ];
  return html`<details class="${`card conv ${c.verdict}`}" id="${convId(`${key}cmp`, c.index)}" ${open ? 'open' : ''}>
    <summary>
      ${verdictBadges(c)}<span class="name">${c.name}</span>
      <span class="stats">${stats}</span>
    </summary>
    <div class="conv-body">
      ${verdictStatistics(c)}${sidesStats(c)}${differencesTable(c)}${failingAlikeTable(report, c)}${attemptPairs(report, c)}
    </div>
  </details>`;
}

/** The summary, the overview and every conversation side by side; `key` keeps element ids apart when a page holds several reports. */
export const comparisonSections = (report: ComparisonReport, key: string): Html =>
  html`${passRatePlot(report, key)} ${comparisonSummary(report)} ${comparisonOverview(report, key)}
    <h2>Side by side</h2>
    ${report.conversations.map((c) => comparedConversation(report, c, key))}`;
