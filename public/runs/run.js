// One run, answer first: the verdict sentence once it has one, live progress while it runs (the
// run's lines followed across pods), the pass-rate plot and the conversations (a comparison's
// filling in as the gate stops each one), every attempt a mark once the report is there; a mark
// opens that attempt's transcript (side by side in a comparison). Only the opened transcript is
// in the document.

import { ApiError, api, followRun, getJson } from '/runs/page/api.js';
import { startedBy } from '/runs/page/list.js';
import { agentsText, badge, bar, errorBox, html, show, statusBadge } from '/runs/page/views.js';
import { duration, plural, timestamp } from '/runs/page/modules/suites/report/html/kit.js';
import { attemptBody, attemptMeta, convId } from '/runs/page/modules/suites/report/html/parts.js';
import { comparisonHeader, runHeader } from '/runs/page/modules/suites/report/html/headers.js';
import { sideBySide } from '/runs/page/modules/suites/report/html/side-by-side.js';
import { livePlot, passRatePlot } from '/runs/page/modules/suites/report/html/plot.js';
import { intervalText } from '/runs/page/modules/suites/report/wording.js';

const MARK = { passed: '✓', failed: '✗', error: '!', invalid: '?' };
const isComparison = (report) => report !== null && report.comparison_id !== undefined;
/** How soon after a line the run is read again for its progress (several lines, one read). */
const REFRESH_MS = 250;

/** A report's conversations, each with its attempts per side (one side, `run`, for a run). */
function conversationsOf(report) {
  if (!isComparison(report)) {
    return report.conversations.map((conv) => ({
      name: conv.name,
      index: conv.index,
      tone: conv.status,
      sides: { run: conv.attempts },
      c: null,
    }));
  }
  const of = (side, c) => report.runs[side].conversations.find((conv) => conv.index === c.index)?.attempts ?? [];
  return report.conversations.map((c) => ({
    name: c.name,
    index: c.index,
    tone: c.verdict,
    sides: { baseline: of('baseline', c), candidate: of('candidate', c) },
    c,
  }));
}

const marks = (conv, side, attempts) =>
  html`<span class="marks" role="group" aria-label="${`${conv.name}: ${side === 'run' ? '' : `${side} `}attempts in order`}"
    >${attempts.map(
      (a) =>
        html`<button
          type="button"
          class="${`mark ${a.status}`}"
          data-conversation="${conv.name}"
          data-attempt="${a.attempt}"
          aria-label="${`attempt ${a.attempt} ${a.status}`}"
          title="${`attempt ${a.attempt}: ${a.status}`}"
        >
          ${MARK[a.status] ?? '·'}
        </button>`,
    )}</span
  >`;

const passedText = (attempts) => `${attempts.filter((a) => a.status === 'passed').length}/${attempts.length}`;

function reportTable(report) {
  const rows = conversationsOf(report).map((conv) => {
    const sides = Object.entries(conv.sides);
    // The id the plot's conversation names link to (`#cmp-N`): they jump to the row.
    return html`<tbody data-conversation="${conv.name}" id="${convId('cmp', conv.index)}">
      ${sides.map(
        ([side, attempts], i) =>
          html`<tr>
            ${
              i === 0
                ? html`<th scope="rowgroup" rowspan="${sides.length}">${badge(conv.tone)} <span class="conv-name">${conv.name}</span></th>`
                : ''
            }
            <td>${side === 'run' ? 'attempts' : side}</td>
            <td>${marks(conv, side, attempts)}</td>
            <td class="num">${passedText(attempts)}</td>
          </tr>`,
      )}
    </tbody>`;
  });
  return html`<table class="card conversations">
    <caption class="sr-only">
      Conversations and their attempts
    </caption>
    <thead>
      <tr>
        <th scope="col">Conversation</th>
        <th scope="col">Side</th>
        <th scope="col">Attempts in order (open one for its transcript)</th>
        <th scope="col">Passed</th>
      </tr>
    </thead>
    ${rows}
  </table>`;
}

/** A comparison's conversation once the gate stopped it: its verdict, or that the report gives it. */
const verdictCell = (decision) =>
  decision === null ? '' : decision.verdict === null ? html`<span class="muted">with the report</span>` : badge(decision.verdict);

/** While it runs: each conversation's progress from the run's view, with what the gate decided as it decides. */
function progressTable(view) {
  const comparison = view.kind === 'comparison';
  const sideText = (s, decided) =>
    s === null
      ? ''
      : `${s.passed}/${s.attempts} passed${s.errors > 0 ? `, ${s.errors} in error` : ''}` +
        `${decided === undefined ? '' : ` · ${intervalText(decided.pass_rate_interval)}`}`;
  return html`<table class="card conversations">
    <thead>
      <tr>
        <th scope="col">Conversation</th>
        <th scope="col">State</th>
        <th scope="col">${comparison ? 'Rounds' : 'Attempts'}</th>
        ${
          comparison
            ? html`<th scope="col">Baseline</th>
                <th scope="col">Candidate</th>
                <th scope="col">Verdict</th>`
            : html`<th scope="col">Passed</th>`
        }
      </tr>
    </thead>
    <tbody>
      ${view.progress.conversations.map(
        (c) =>
          html`<tr data-conversation="${c.conversation}" id="${convId('cmp', c.conversation_index)}">
            <th scope="row">${c.conversation}</th>
            <td>${badge(c.state === 'running' ? 'skipped' : c.state, c.state)}</td>
            <td>${bar(c.rounds, c.budget, `${c.conversation}: rounds`)} ${c.rounds}/${c.budget}</td>
            ${
              comparison
                ? html`<td>${sideText(c.baseline, c.decision?.baseline)}</td>
                    <td>${sideText(c.candidate, c.decision?.candidate)}</td>
                    <td>${verdictCell(c.decision)}</td>`
                : html`<td>${sideText(c.attempts)}</td>`
            }
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** The time left at the current pace: sessions still in the budget at the rate they were spent (early stops make it shorter). */
function timeLeft(view) {
  const { sessions, sessions_budget: budget } = view.progress;
  const elapsed = Date.now() - Date.parse(view.created_at);
  if (sessions === 0 || elapsed <= 0) return 'not known yet';
  return `at most ${duration(((budget - sessions) * elapsed) / sessions)}`;
}

function liveFacts(state) {
  const { view } = state;
  const p = view.progress;
  const rounds = Math.max(0, ...p.conversations.map((c) => c.rounds));
  const budget = p.conversations[0]?.budget ?? 0;
  const running = view.status === 'running';
  return html`<dl class="facts live-facts">
    <div>
      <dt>Status</dt>
      <dd>${statusBadge(view.status)} <span class="muted">on ${view.pod}</span></dd>
    </div>
    <div>
      <dt>Rounds</dt>
      <dd>${bar(rounds, budget, 'rounds')} <span id="rounds">${rounds}</span> of ${budget}</dd>
    </div>
    <div>
      <dt>Sessions</dt>
      <dd>${bar(p.sessions, p.sessions_budget, 'sessions spent')} <span id="sessions">${p.sessions}</span> of ${p.sessions_budget}</dd>
    </div>
    <div>
      <dt>Decided</dt>
      <dd>
        ${bar(p.decided, p.conversations.length, 'conversations decided')} ${p.decided} of ${plural(p.conversations.length, 'conversation')}
      </dd>
    </div>
    ${
      running
        ? html`<div>
            <dt>Time left</dt>
            <dd>${timeLeft(view)}</dd>
          </div>`
        : ''
    }
    ${
      running && state.waiting !== null
        ? html`<div class="wide">
            <dt>Waiting for room</dt>
            <dd class="waiting">${state.waiting}</dd>
          </div>`
        : ''
    }
    ${
      view.moves.length === 0
        ? ''
        : html`<div class="wide">
            <dt>Moves</dt>
            <dd>
              ${view.moves.map(
                (m) =>
                  html`<div>
                    from ${m.from} to ${m.to} (${m.cause}) after ${plural(m.rounds_completed, 'round')} over all conversations,
                    ${plural(m.attempts_rerun, 'attempt')} run again
                  </div>`,
              )}
            </dd>
          </div>`
    }
  </dl>`;
}

function plainHeader(view) {
  return html`<header class="card head running">
    <div class="kind">${view.kind === 'comparison' ? 'Comparison' : 'Suite run'}</div>
    <h1>${agentsText(view)} ${statusBadge(view.status)}</h1>
    <div class="sub">started ${timestamp(view.created_at)} by ${startedBy(view)}</div>
    ${view.error === null ? '' : html`<p class="answer error">${view.error.error}: ${view.error.message}</p>`}
  </header>`;
}

const filtersBar = () =>
  html`<form id="conv-filters" class="filters" role="search" aria-label="Filter conversations">
    ${[
      ['regressed', 'regressed'],
      ['failed', 'failed'],
      ['invalid', 'invalid'],
      ['differing', 'differing'],
    ].map(([name, label]) => html`<label><input type="checkbox" name="${name}" /> ${label}</label>`)}
    <label>Search transcripts <input type="search" name="q" /></label>
    <span id="shown-count" class="muted" aria-live="polite"></span>
  </form>`;

/** What a filter asks of a conversation, and its transcripts' text for the search. */
function filterFacts(conv) {
  const attempts = Object.values(conv.sides).flat();
  return {
    regressed: conv.tone === 'regressed',
    failed: attempts.some((a) => a.status === 'failed'),
    invalid: attempts.some((a) => a.status === 'invalid' || a.status === 'error'),
    differing: conv.c !== null && (conv.c.differences.length > 0 || conv.c.diverged_at_turn !== null),
    text: [conv.name, ...attempts.flatMap((a) => a.turns.flatMap((t) => [t.line, t.text ?? '']))].join('\n').toLowerCase(),
  };
}

/** The reports `GET /v1/runs/{id}` answers by `Accept` once the run has ended, and their file names. */
const REPORT_FILES = {
  junit: { accept: 'application/xml', name: (id) => `${id}.junit.xml` },
  html: { accept: 'text/html', name: (id) => `${id}.html` },
};

function download(name, type, body) {
  const url = URL.createObjectURL(new Blob([body], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export async function showRun(main, id, signal) {
  document.title = `Run ${id} · agent-test-gateway`;
  show(
    main,
    html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/runs">Runs</a> › <span>${id}</span></nav>
      <div id="head"></div>
      <section id="live" class="card" aria-label="Progress"></section>
      <section id="actions" class="actions" aria-label="Actions"></section>
      <p id="notice" class="muted" role="status"></p>
      <section id="plot"></section>
      <h2>Conversations</h2>
      <div id="filters-slot"></div>
      <div id="table"></div>
      <section id="detail" aria-label="Transcript"></section>`,
  );
  const el = (name) => main.querySelector(`#${name}`);
  const state = { view: null, report: null, waiting: null, facts: new Map() };
  try {
    state.view = await getJson(`/v1/runs/${id}`, signal);
    performance.mark('runs-page:view');
  } catch (err) {
    if (err.status === 401) throw err;
    show(el('head'), errorBox(err.status === 404 ? { code: 'not found', message: 'No such run, or your token may not read it.' } : err));
    return;
  }
  state.report = state.view.report;

  const notice = (text) => {
    el('notice').textContent = text;
  };

  const renderActions = () => {
    const running = state.view.status === 'running';
    show(
      el('actions'),
      html`${running ? html`<button type="button" id="cancel">Cancel run…</button>` : ''}
        ${state.report === null ? '' : html`<button type="button" data-download="json">Download JSON report</button>`}
        ${
          running
            ? ''
            : html`<button type="button" data-download="junit">Download JUnit report</button>
                <button type="button" data-download="html">Download HTML report</button>`
        } <span id="confirm-slot"></span>`,
    );
  };

  const applyFilters = () => {
    const form = el('conv-filters');
    if (form === null) return;
    const data = new FormData(form);
    const wanted = ['regressed', 'failed', 'invalid', 'differing'].filter((k) => data.get(k) !== null);
    const query = String(data.get('q') ?? '')
      .trim()
      .toLowerCase();
    let shown = 0;
    for (const body of el('table').querySelectorAll('tbody[data-conversation]')) {
      const facts = state.facts.get(body.dataset.conversation);
      const visible = facts !== undefined && wanted.every((k) => facts[k]) && (query === '' || facts.text.includes(query));
      body.hidden = !visible;
      if (visible) shown += 1;
    }
    el('shown-count').textContent = `${plural(shown, 'conversation')} shown`;
  };

  const renderDetail = () => {
    const params = new URLSearchParams(location.hash.slice(1));
    const name = params.get('conversation');
    const n = Number(params.get('attempt'));
    if (state.report === null || name === null || !Number.isInteger(n) || n < 1) return show(el('detail'), html``);
    const conv = conversationsOf(state.report).find((c) => c.name === name);
    if (conv === undefined) return show(el('detail'), errorBox({ code: 'not found', message: `No conversation named ${name}.` }));
    const attempts = Object.values(conv.sides).map((list) => list.find((a) => a.attempt === n));
    const failed = attempts.some((a) => a !== undefined && a.status !== 'passed');
    const body =
      conv.c === null
        ? attempts[0] === undefined
          ? html`<p>No attempt ${n}.</p>`
          : html`<div class="attempt-head">${badge(attempts[0].status)} ${attemptMeta(attempts[0])}</div>
              <div class="attempt-body">${attemptBody(attempts[0], new Set())}</div>`
        : sideBySide(state.report, conv.c, n);
    show(
      el('detail'),
      html`<div class="card transcript">
        <h2 id="detail-title" tabindex="-1">${conv.name} · attempt ${n}</h2>
        <p class="actions">
          <a href="${`#${params.toString()}`}">Link to this attempt</a>
          ${failed ? html`<button type="button" id="capture">Turn this failure into a test</button>` : ''}
          <button type="button" id="close-detail">Close</button>
        </p>
        ${body}
      </div>`,
    );
    el('detail-title').focus();
  };

  const renderReport = () => {
    const report = state.report;
    show(el('head'), isComparison(report) ? comparisonHeader(report) : runHeader(report));
    show(el('plot'), isComparison(report) ? passRatePlot(report, '') : html``);
    show(el('filters-slot'), filtersBar());
    show(el('table'), reportTable(report));
    state.facts = new Map(conversationsOf(report).map((conv) => [conv.name, filterFacts(conv)]));
    applyFilters();
    renderDetail();
    performance.mark('runs-page:report');
  };

  const renderLive = () => {
    show(el('live'), liveFacts(state));
    if (state.report === null) {
      show(el('head'), plainHeader(state.view));
      // A comparison's plot fills in as the gate stops its conversations; the report's replaces it at the end.
      if (state.view.kind === 'comparison') show(el('plot'), livePlot(state.view));
      show(el('table'), progressTable(state.view));
    }
  };

  const render = () => {
    renderLive();
    renderActions();
    if (state.report !== null) renderReport();
  };

  main.addEventListener(
    'click',
    (event) => {
      const target = event.target.closest('button');
      if (target === null) return;
      if (target.classList.contains('mark')) {
        location.hash = new URLSearchParams({ conversation: target.dataset.conversation, attempt: target.dataset.attempt }).toString();
      } else if (target.id === 'close-detail') {
        history.replaceState(null, '', location.pathname);
        renderDetail();
      } else if (target.id === 'cancel') {
        show(
          el('confirm-slot'),
          html`<span role="alert">Cancel this run? Its running turns end and no attempt starts.</span>
            <button type="button" id="cancel-yes">Yes, cancel it</button> <button type="button" id="cancel-no">Keep it running</button>`,
        );
        el('cancel-no').focus();
      } else if (target.id === 'cancel-no') {
        show(el('confirm-slot'), html``);
      } else if (target.id === 'cancel-yes') {
        api('DELETE', `/v1/runs/${id}`)
          .then(() => notice('Cancelled.'))
          .catch((err) => show(el('confirm-slot'), errorBox(err)));
      } else if (target.dataset.download === 'json') {
        download(`${id}.json`, 'application/json', JSON.stringify(state.report, null, 2));
      } else if (target.dataset.download in REPORT_FILES) {
        // The gateway renders them as the CLI does (`Accept` picks which); fetched with the token, saved from a blob.
        const { accept, name } = REPORT_FILES[target.dataset.download];
        api('GET', `/v1/runs/${id}`, { accept })
          .then((res) => res.text())
          .then((body) => download(name(id), accept, body))
          .catch((err) => notice(`Could not download the report: ${err.message}`));
      } else if (target.id === 'capture') {
        const params = new URLSearchParams(location.hash.slice(1));
        const query = new URLSearchParams({ conversation: params.get('conversation'), attempt: params.get('attempt') });
        api('GET', `/v1/runs/${id}/capture?${query}`, { accept: 'application/yaml' })
          .then((res) => res.text())
          .then((yaml) => download('regression.yaml', 'application/yaml', yaml))
          .catch((err) => notice(`Could not turn it into a test: ${err.message}`));
      }
    },
    { signal },
  );
  main.addEventListener(
    'input',
    (event) => {
      if (event.target.closest('#conv-filters') !== null) applyFilters();
    },
    { signal },
  );
  main.addEventListener('submit', (event) => event.preventDefault(), { signal });
  window.addEventListener('hashchange', renderDetail, { signal });

  render();
  if (state.view.status !== 'running') return;

  let timer = null;
  let following = true;
  const refresh = () => {
    timer ??= setTimeout(() => {
      timer = null;
      getJson(`/v1/runs/${id}`, signal)
        .then((view) => {
          // A read answered after the run's end (another pod may answer later) would show it running again.
          if (!following) return;
          state.view = view;
          renderLive();
        })
        .catch(() => {});
    }, REFRESH_MS);
  };
  try {
    await followRun(id, {
      signal,
      onLine: (line) => {
        if (line.waiting !== undefined) state.waiting = line.waiting.message;
        else if (line.turn !== undefined) state.waiting = null;
        if (line.moved !== undefined) notice(`The run moved from ${line.moved.from} to ${line.moved.to}; following it there.`);
        if (line.report !== undefined) state.report = line.report;
        refresh();
      },
      onCut: () => notice('The connection to the run was cut; following it again from any pod…'),
      onResumed: () => notice('Following the run again: a pod of the gateway answered.'),
    });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) throw err;
    if (!signal.aborted) notice(`Stopped following the run: ${err.message}`);
  }
  if (signal.aborted) return;
  following = false;
  clearTimeout(timer);
  state.view = await getJson(`/v1/runs/${id}`, signal);
  state.report = state.view.report ?? state.report;
  render();
}
