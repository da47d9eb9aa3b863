// The list: runs newest first, live while any runs, filtered by agent, status and "mine".

import { getJson } from '/runs/page/api.js';
import { VERDICT, agentsText, bar, errorBox, html, show, statusBadge } from '/runs/page/views.js';
import { duration, timestamp } from '/runs/page/modules/suites/report/html/kit.js';

const POLL_MS = 2000;

export const startedBy = (run) => run.started_by?.email ?? run.started_by?.id ?? '–';

const took = (run) => (run.ended_at === null ? null : Date.parse(run.ended_at) - Date.parse(run.created_at));

const row = (run) => {
  const p = run.progress;
  return html`<tr data-run="${run.id}" data-status="${run.status}">
    <td>${run.kind}</td>
    <td><a href="${`/runs/${run.id}`}">${agentsText(run)}</a></td>
    <td>${run.suite ?? '–'}</td>
    <td>${startedBy(run)}</td>
    <td>${statusBadge(run.status)}</td>
    <td>${bar(p.decided, p.conversations.length, `conversations decided of ${run.id}`)} ${p.decided}/${p.conversations.length}</td>
    <td>${VERDICT[run.status]?.[1] ?? run.status}</td>
    <td>${timestamp(run.created_at)}</td>
    <td>${duration(took(run))}</td>
    <td class="num">${p.sessions}/${p.sessions_budget}</td>
  </tr>`;
};

const filtersForm = (filters) =>
  html`<form id="filters" class="filters" role="search" aria-label="Filter runs">
    <label>Agent <input name="agent" value="${filters.agent}" placeholder="mine (empty) or coach, coach.3" /></label>
    <label
      >Status
      <select name="status">
        ${['', 'running', 'passed', 'failed', 'error', 'cancelled'].map(
          (s) => html`<option value="${s}" ${filters.status === s ? 'selected' : ''}>${s === '' ? 'any' : s}</option>`,
        )}
      </select></label
    >
    <button type="submit">Show</button>
  </form>`;

/** The list in `main` until `signal` aborts; filters from the URL's hash (`#agent=coach&status=running`). */
export async function showList(main, signal) {
  const params = new URLSearchParams(location.hash.slice(1));
  const filters = { agent: params.get('agent') ?? '', status: params.get('status') ?? '' };
  document.title = 'Runs · agent-test-gateway';
  show(
    main,
    html`<h1>Runs</h1>
      ${filtersForm(filters)}
      <p id="list-scope" class="muted"></p>
      <div id="list"></div>`,
  );
  main.querySelector('#filters').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const next = new URLSearchParams();
    for (const key of ['agent', 'status']) if (form.get(key)) next.set(key, String(form.get(key)).trim());
    location.hash = next.toString();
  });
  const list = main.querySelector('#list');
  main.querySelector('#list-scope').textContent =
    filters.agent === '' ? 'Your runs (started with your token).' : `Runs of ${filters.agent} that you may read.`;
  const path = filters.agent === '' ? '/v1/runs' : `/v1/runs?agent=${encodeURIComponent(filters.agent)}`;
  while (!signal.aborted) {
    let runs;
    try {
      ({ runs } = await getJson(path, signal));
    } catch (err) {
      if (signal.aborted) return;
      show(list, errorBox(err));
      if (err.status === 401) throw err;
      return;
    }
    const shown = runs.filter((r) => filters.status === '' || r.status === filters.status);
    show(
      list,
      shown.length === 0
        ? html`<p class="card">No runs${filters.status === '' ? '' : ` that are ${filters.status}`}.</p>`
        : html`<table class="card runs">
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Agents</th>
                <th scope="col">Suite</th>
                <th scope="col">Started by</th>
                <th scope="col">Status</th>
                <th scope="col">Progress</th>
                <th scope="col">Verdict</th>
                <th scope="col">Started</th>
                <th scope="col">Took</th>
                <th scope="col">Sessions</th>
              </tr>
            </thead>
            <tbody>
              ${shown.map(row)}
            </tbody>
          </table>`,
    );
    if (!runs.some((r) => r.status === 'running')) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
