// The debug page's script (GET /debug/app.js, a module): polls debug/state every second and draws
// the pool and every conversation on the pod; clicking a conversation opens its last turns, fetched
// from debug/conversations/<session_id>/turns whenever its turn count moves. Every value, agent text
// above all, is written with textContent (never as HTML), so data never becomes markup or script.

const POLL_MS = 1000;
const STATE_URL = 'debug/state';
const turnsUrl = (sessionId) => `debug/conversations/${encodeURIComponent(sessionId)}/turns`;
const STATES = ['connecting', 'idle', 'busy', 'closed'];
const OUTCOMES = ['exit', 'timeout', 'engine_closed', 'engine_error', 'cancelled'];
const COLUMNS = 9;
const DASH = '\u2014';

/** The last state polled. */
let latest = null;
/** The conversations opened to their turns: session id → { seen, answer } (answer undefined while loading). */
const opened = new Map();

const byId = (id) => document.getElementById(id);
const blank = (value) => value === null || value === undefined || value === '';

/** An element with a class and a text, the only way this script puts data on the page. */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = blank(text) ? DASH : String(text);
  return node;
}

function setText(id, value) {
  const node = byId(id);
  if (node) node.textContent = blank(value) ? '' : String(value);
}

function cell(row, text, className) {
  const td = el('td', className, text);
  row.appendChild(td);
  return td;
}

function clock(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  return isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString();
}

function duration(seconds) {
  if (blank(seconds)) return null;
  const s = Number(seconds);
  if (!isFinite(s)) return null;
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const min = Math.floor((s % 3600) / 60);
  return `${Math.floor(s / 3600)} h${min ? ` ${min} min` : ''}`;
}

function millis(ms) {
  const n = Number(ms);
  if (blank(ms) || !isFinite(n)) return null;
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
}

function matches(c, needle) {
  if (!needle) return true;
  return [c.session_id, c.owner, c.agent, c.state, c.close_cause].some((v) => typeof v === 'string' && v.toLowerCase().includes(needle));
}

/** What changes when a conversation has a new turn: its turns are fetched again only then. */
const seenOf = (c) => `${c.turns}|${c.last_turn_at}`;

// ---------------------------------------------------------------------------------------------
// A conversation's last turns.

function said(who, text, className) {
  const line = el('div', `said ${className}`);
  line.append(el('span', 'who', who), el('span', 'words', text));
  return line;
}

function chips(label, values, className) {
  const row = el('div', 'chips');
  row.appendChild(el('span', 'who', label));
  values.forEach((value) => row.appendChild(el('span', `chip ${className}`, value)));
  return row;
}

function turnItem(turn) {
  const li = el('li', 'turn');
  const meta = el('div', 'turn-meta');
  const outcome = el('span', 'outcome', turn.outcome);
  outcome.dataset.outcome = OUTCOMES.includes(turn.outcome) ? turn.outcome : 'unknown';
  meta.append(el('span', 'time', clock(turn.ended_at)), outcome, el('span', 'muted', millis(turn.duration_ms)));
  li.append(meta, said('line', turn.line, 'line'), said('agent', turn.text, 'agent'));
  const tools = Array.isArray(turn.tools) ? turn.tools : [];
  const shown = Array.isArray(turn.shown) ? turn.shown : [];
  if (tools.length > 0) li.appendChild(chips('tools', tools, 'tool'));
  if (shown.length > 0) li.appendChild(chips('shown', shown, 'shown'));
  return li;
}

function transcriptRow(c) {
  const tr = el('tr', 'transcript');
  const td = el('td');
  td.colSpan = COLUMNS;
  tr.appendChild(td);
  const answer = opened.get(c.session_id)?.answer;
  if (answer === undefined) {
    td.appendChild(el('p', 'muted', 'loading the last turns…'));
  } else if (answer.error) {
    td.appendChild(el('p', 'muted error', `the turns were not fetched: ${answer.error}`));
  } else {
    const turns = Array.isArray(answer.turns) ? answer.turns : [];
    const kept = typeof answer.kept === 'number' ? answer.kept : turns.length;
    const total = typeof c.turns === 'number' ? c.turns : turns.length;
    td.appendChild(
      el(
        'p',
        'muted',
        turns.length === 0
          ? 'No turn of this conversation ran on this pod while the page was on.'
          : `The last ${turns.length} of ${total} turns, oldest first (this pod keeps up to ${kept}).`,
      ),
    );
    const list = el('ol', 'turns');
    turns.forEach((turn) => list.appendChild(turnItem(turn)));
    td.appendChild(list);
  }
  return tr;
}

async function fetchJson(url) {
  const res = await fetch(url, { cache: 'no-store', headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`the gateway answered ${res.status}`);
  return res.json();
}

async function loadTurns(sessionId, seen) {
  let answer;
  try {
    answer = await fetchJson(turnsUrl(sessionId));
  } catch (err) {
    answer = { error: err && err.message ? err.message : 'the gateway is unreachable' };
  }
  // Closed meanwhile: keep it closed.
  if (opened.has(sessionId)) opened.set(sessionId, { seen, answer });
}

/** The opened conversations with a turn since their turns were fetched (or whose fetch failed). */
function staleTurns(state) {
  const list = Array.isArray(state.conversations) ? state.conversations : [];
  return list
    .filter((c) => {
      const entry = opened.get(c.session_id);
      return entry !== undefined && (entry.seen !== seenOf(c) || entry.answer?.error);
    })
    .map((c) => loadTurns(c.session_id, seenOf(c)));
}

function toggle(sessionId) {
  if (opened.has(sessionId)) {
    opened.delete(sessionId);
    render();
    return;
  }
  const c = latest?.conversations?.find((conv) => conv.session_id === sessionId);
  opened.set(sessionId, { seen: undefined, answer: undefined });
  render();
  void loadTurns(sessionId, c ? seenOf(c) : undefined).then(render);
}

// ---------------------------------------------------------------------------------------------
// The page.

function conversationRow(c) {
  const tr = el('tr');
  const id = typeof c.session_id === 'string' ? c.session_id : null;
  if (id !== null) tr.dataset.sessionId = id;
  const known = STATES.includes(c.state);
  tr.className = known ? `state-${c.state}` : 'state-unknown';
  cell(tr, c.session_id, 'mono');
  cell(tr, c.owner, 'mono');
  cell(tr, c.agent, 'mono');
  const stateCell = cell(tr, c.state, 'state');
  stateCell.dataset.state = known ? c.state : 'unknown';
  const turnsCell = cell(tr, undefined, 'num turns');
  if (id === null) {
    turnsCell.textContent = blank(c.turns) ? DASH : String(c.turns);
  } else {
    const button = el('button', 'toggle', c.turns);
    button.type = 'button';
    button.title = opened.has(id) ? 'Hide the last turns' : 'Show the last turns';
    button.setAttribute('aria-expanded', String(opened.has(id)));
    turnsCell.appendChild(button);
    tr.classList.add('openable');
  }
  cell(tr, duration(c.idle_seconds), 'num');
  cell(tr, c.close_cause, 'cause');
  cell(tr, clock(c.created_at));
  cell(tr, clock(c.last_turn_at));
  return tr;
}

function render() {
  const state = latest;
  if (!state) return;
  const pool = state.pool || {};
  setText('pod', state.pod);
  setText('stat-open', pool.open);
  setText('stat-busy', pool.busy);
  setText('stat-remembered', pool.remembered);
  setText('stat-evictions', pool.evictions_total);
  setText('stat-draining', pool.draining ? 'yes' : 'no');
  byId('stat-draining').parentNode.classList.toggle('alert', pool.draining === true);
  const limits = pool.limits;
  setText(
    'limits',
    limits
      ? `limits: ${limits.per_caller} open per caller, ${limits.per_pod} per pod; idle close after ` +
          `${duration(limits.idle_close_seconds)}; turn budget ${duration(limits.turn_budget_seconds)}`
      : '',
  );

  const needle = byId('filter').value.trim().toLowerCase();
  const list = Array.isArray(state.conversations) ? state.conversations : [];
  const rows = document.createDocumentFragment();
  let shown = 0;
  list.forEach((c) => {
    if (!matches(c, needle)) return;
    shown += 1;
    rows.appendChild(conversationRow(c));
    if (typeof c.session_id === 'string' && opened.has(c.session_id)) rows.appendChild(transcriptRow(c));
  });
  if (shown === 0) {
    const empty = el('tr');
    cell(empty, needle ? 'No conversation matches the filter.' : 'No conversations on this pod.', 'muted').colSpan = COLUMNS;
    rows.appendChild(empty);
  }
  byId('conversations').replaceChildren(rows);
  const total = typeof state.conversations_total === 'number' ? state.conversations_total : list.length;
  setText('count', `${shown} shown of ${total}${total > list.length ? ` (newest ${list.length} fetched)` : ''}`);
  renderRuns(Array.isArray(state.runs) ? state.runs : [], new Set(Array.isArray(state.runs_unreplicated) ? state.runs_unreplicated : []));
}

/** The runs this pod holds or keeps: one row each, with its progress; a running run no sibling keeps a replica of is marked. */
function renderRuns(runs, unreplicated) {
  const rows = document.createDocumentFragment();
  for (const run of runs) {
    const tr = el('tr');
    const progress = run.progress || {};
    cell(tr, run.id);
    cell(tr, run.kind);
    if (unreplicated.has(run.id)) cell(tr, `${run.status}, no replica on any sibling`, 'state error');
    else cell(tr, run.status, `state ${run.status}`);
    cell(tr, run.baseline ? `${run.baseline} → ${run.agent}` : run.agent);
    cell(tr, run.pod);
    cell(tr, `${progress.sessions} of ${progress.sessions_budget}`, 'num');
    cell(tr, `${progress.decided} of ${(progress.conversations || []).length}`, 'num');
    cell(tr, (run.moves || []).length, 'num');
    cell(tr, clock(run.created_at));
    rows.appendChild(tr);
  }
  if (runs.length === 0) {
    const empty = el('tr');
    cell(empty, 'No runs on this pod.', 'muted').colSpan = COLUMNS;
    rows.appendChild(empty);
  }
  byId('runs').replaceChildren(rows);
}

/** Text selected in the table (a line or an id being copied): redrawing would lose it. */
function selecting() {
  const selection = window.getSelection();
  return selection !== null && !selection.isCollapsed && byId('conversations').contains(selection.anchorNode);
}

function setStatus(text, ok) {
  const node = byId('status');
  node.textContent = text;
  node.classList.toggle('down', !ok);
}

async function poll() {
  try {
    const state = await fetchJson(STATE_URL);
    latest = state;
    await Promise.all(staleTurns(state));
    if (selecting()) {
      setStatus(`updated ${new Date().toLocaleTimeString()}; the table holds still while text is selected in it`, true);
    } else {
      render();
      setStatus(`updated ${new Date().toLocaleTimeString()}`, true);
    }
  } catch (err) {
    setStatus(`not updated: ${err && err.message ? err.message : 'the gateway is unreachable'} (retrying every second)`, false);
  }
  setTimeout(poll, POLL_MS);
}

byId('filter').addEventListener('input', render);
// A click on a conversation's row (not one that ends a text selection) opens or closes its turns.
byId('conversations').addEventListener('click', (event) => {
  const row = event.target instanceof Element ? event.target.closest('tr[data-session-id]') : null;
  if (row === null) return;
  if (!event.target.closest('button') && !window.getSelection()?.isCollapsed) return;
  toggle(row.dataset.sessionId);
});
void poll();
