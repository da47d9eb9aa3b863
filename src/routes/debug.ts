import { hostname } from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Conversation } from '../conversations/conversation.js';
import { conversationView } from '../conversations/views.js';
import { GatewayError } from '../errors.js';

/**
 * The live debug page, for engineers reaching one pod through `kubectl port-forward`: every
 * caller's conversations on this pod and the pool's figures, refreshed every second.
 *
 * Registered only when DEBUG_PAGE=true (app.ts), because it shows every caller's conversations
 * and has no authentication of its own. It never shows a token, the engine identity or any
 * other setting's value: /debug/state is built field by field from the registry, not by
 * serializing a conversation or the config. The chart's ingress does not route /debug.
 *
 * The page is static: HTML, a script and a stylesheet embedded here (the build copies only
 * .ts), served under a Content-Security-Policy that allows no inline script and no other
 * origin. The script builds the table with textContent only, never innerHTML.
 */

/** How many conversations one poll returns at most (open ones first); `?limit=` may lower or raise it. */
export const DEFAULT_STATE_LIMIT = 500;
const MAX_STATE_LIMIT = 10_000;

/** One conversation as the page shows it: who holds it and how it is doing, no settings, no secrets. */
export interface DebugConversation {
  session_id: string | null;
  /** The platform user id of the caller that holds the conversation. */
  owner: string;
  agent: string;
  state: Conversation['state'];
  connection: 'open' | 'closed';
  turns: number;
  /** Seconds since the last turn ended; 0 while a turn runs; null once closed. */
  idle_seconds: number | null;
  ended_by_agent: boolean;
  close_cause: string | null;
  created_at: string;
  last_turn_at: string | null;
  closed_at: string | null;
}

export interface DebugState {
  pod: string;
  generated_at: string;
  pool: {
    open: number;
    busy: number;
    remembered: number;
    draining: boolean;
    evictions_total: number;
    evictions: { caller: number; pod: number };
    limits: { per_caller: number; per_pod: number; idle_close_seconds: number; turn_budget_seconds: number };
  };
  /** Conversations on the pod (open and remembered), as many as returned. */
  conversations_total: number;
  conversations: DebugConversation[];
}

/** The API's view of the conversation, narrowed to what the page may show: no settings. */
export function debugConversation(conv: Conversation, now = Date.now()): DebugConversation {
  const view = conversationView(conv, now);
  return {
    session_id: view.session_id,
    owner: conv.callerId,
    agent: view.agent,
    state: view.state,
    connection: view.connection,
    turns: view.turns,
    idle_seconds: view.connection === 'closed' ? null : view.idle_seconds,
    ended_by_agent: view.ended_by_agent,
    close_cause: view.close_cause,
    created_at: view.created_at,
    last_turn_at: view.last_turn_at,
    closed_at: view.closed_at,
  };
}

async function evictionCounts(app: FastifyInstance): Promise<{ caller: number; pod: number }> {
  const counts = { caller: 0, pod: 0 };
  for (const { labels, value } of (await app.metrics.evictions.get()).values) {
    if (labels.limit === 'caller' || labels.limit === 'pod') counts[labels.limit] += value;
  }
  return counts;
}

/**
 * The page answers only to a loopback name or an IP address, as `kubectl port-forward` and a
 * pod IP give it: a web page elsewhere cannot read it by pointing a DNS name of its own at
 * 127.0.0.1 (DNS rebinding), since the browser then sends that name as Host.
 */
export function isDebugHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host
    .trim()
    .toLowerCase()
    .replace(/:\d+$/, '')
    .replace(/^\[(.*)\]$/, '$1');
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    /^\d{1,3}(?:\.\d{1,3}){3}$/.test(name) ||
    (name.includes(':') && /^[0-9a-f:.]+$/.test(name))
  );
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

export async function debugRoutes(app: FastifyInstance): Promise<void> {
  const pod = hostname();

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isDebugHost(request.headers.host)) {
      throw new GatewayError(
        'forbidden',
        'The debug page answers only to localhost or an IP address (kubectl port-forward), as a guard against DNS rebinding.',
      );
    }
    reply.headers(SECURITY_HEADERS);
  });

  app.get('/debug', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE_HTML));
  app.get('/debug/', async (_request, reply) => reply.redirect('../debug'));
  app.get('/debug/app.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(PAGE_JS));
  app.get('/debug/app.css', async (_request, reply) => reply.type('text/css; charset=utf-8').send(PAGE_CSS));

  // Polled every second per open page: its requests are not logged at info level.
  app.get('/debug/state', { logLevel: 'warn' }, async (request): Promise<DebugState> => {
    const limit = stateLimit((request.query as Record<string, unknown> | undefined)?.limit);
    const now = Date.now();
    const all = app.conversations.all();
    // Open conversations first (at most the pod limit of them), then the newest remembered ones.
    const open = all.filter((c) => c.state !== 'closed');
    const closed = all.filter((c) => c.state === 'closed');
    const shown = [...open, ...closed].slice(0, limit);
    const { open: openCount, busy, remembered, draining } = app.conversations.stats;
    const evictions = await evictionCounts(app);
    return {
      pod,
      generated_at: new Date(now).toISOString(),
      pool: {
        open: openCount,
        busy,
        remembered,
        draining,
        evictions_total: evictions.caller + evictions.pod,
        evictions,
        limits: {
          per_caller: app.config.maxConversationsPerCaller,
          per_pod: app.config.maxConversationsPerPod,
          idle_close_seconds: Math.round(app.config.idleCloseMs / 1000),
          turn_budget_seconds: Math.round(app.config.turnBudgetMs / 1000),
        },
      },
      conversations_total: all.length,
      conversations: shown.map((conv) => debugConversation(conv, now)),
    };
  });
}

function stateLimit(value: unknown): number {
  if (value === undefined) return DEFAULT_STATE_LIMIT;
  const n = typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_STATE_LIMIT) {
    throw new GatewayError('invalid_request', `limit must be a whole number from 1 to ${MAX_STATE_LIMIT}.`);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// The page. Relative URLs throughout, so it also works behind `kubectl proxy`'s path prefix.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>agent-test-gateway · debug</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="debug/app.css">
<script src="debug/app.js" defer></script>
</head>
<body>
<header>
  <h1>agent-test-gateway <span class="muted">debug</span></h1>
  <p class="meta">pod <strong id="pod">…</strong> · <span id="status" class="status">connecting…</span></p>
</header>
<p class="warning">This page has no authentication and shows every caller's conversations on this pod. Reach it only through <code>kubectl port-forward</code>; turn it off (DEBUG_PAGE=false) when done.</p>
<section class="stats" aria-label="pool">
  <div class="stat"><span class="value" id="stat-open">–</span><span class="label">open</span></div>
  <div class="stat"><span class="value" id="stat-busy">–</span><span class="label">busy</span></div>
  <div class="stat"><span class="value" id="stat-remembered">–</span><span class="label">remembered</span></div>
  <div class="stat"><span class="value" id="stat-evictions">–</span><span class="label">evictions</span></div>
  <div class="stat"><span class="value" id="stat-draining">–</span><span class="label">draining</span></div>
</section>
<p class="meta" id="limits"></p>
<section>
  <div class="toolbar">
    <label>Filter <input id="filter" type="search" placeholder="session, owner, agent, state…" autocomplete="off" spellcheck="false"></label>
    <span id="count" class="muted"></span>
  </div>
  <table>
    <thead>
      <tr><th>session_id</th><th>owner</th><th>agent</th><th>state</th><th class="num">turns</th><th class="num">idle</th><th>close cause</th><th>created</th><th>last turn</th></tr>
    </thead>
    <tbody id="conversations"><tr><td colspan="9" class="muted">loading…</td></tr></tbody>
  </table>
</section>
<noscript><p class="warning">This page needs JavaScript; the raw figures are at <a href="debug/state">debug/state</a>.</p></noscript>
</body>
</html>
`;

export const PAGE_JS = `'use strict';
(function () {
  var POLL_MS = 1000;
  var STATE_URL = 'debug/state';
  var STATES = ['connecting', 'idle', 'busy', 'closed'];
  var latest = null;
  var byId = function (id) { return document.getElementById(id); };

  function setText(id, value) {
    var node = byId(id);
    if (node) node.textContent = value === null || value === undefined ? '' : String(value);
  }

  function cell(row, text, className) {
    var td = document.createElement('td');
    td.textContent = text === null || text === undefined || text === '' ? '\\u2014' : String(text);
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function clock(iso) {
    if (!iso) return null;
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString();
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return null;
    var s = Number(seconds);
    if (!isFinite(s)) return null;
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min' + (s % 60 ? ' ' + (s % 60) + ' s' : '');
    return Math.floor(s / 3600) + ' h' + (Math.floor((s % 3600) / 60) ? ' ' + Math.floor((s % 3600) / 60) + ' min' : '');
  }

  function matches(c, needle) {
    if (!needle) return true;
    return [c.session_id, c.owner, c.agent, c.state, c.close_cause].some(function (v) {
      return typeof v === 'string' && v.toLowerCase().indexOf(needle) !== -1;
    });
  }

  function render() {
    var state = latest;
    if (!state) return;
    var pool = state.pool || {};
    setText('pod', state.pod);
    setText('stat-open', pool.open);
    setText('stat-busy', pool.busy);
    setText('stat-remembered', pool.remembered);
    setText('stat-evictions', pool.evictions_total);
    setText('stat-draining', pool.draining ? 'yes' : 'no');
    byId('stat-draining').parentNode.classList.toggle('alert', pool.draining === true);
    var limits = pool.limits;
    setText('limits', limits
      ? 'limits: ' + limits.per_caller + ' open per caller, ' + limits.per_pod + ' per pod; idle close after ' +
        duration(limits.idle_close_seconds) + '; turn budget ' + duration(limits.turn_budget_seconds)
      : '');

    var needle = byId('filter').value.trim().toLowerCase();
    var list = Array.isArray(state.conversations) ? state.conversations : [];
    var rows = document.createDocumentFragment();
    var shown = 0;
    list.forEach(function (c) {
      if (!matches(c, needle)) return;
      shown += 1;
      var tr = document.createElement('tr');
      if (typeof c.session_id === 'string') tr.dataset.sessionId = c.session_id;
      var known = STATES.indexOf(c.state) !== -1;
      tr.className = known ? 'state-' + c.state : 'state-unknown';
      cell(tr, c.session_id, 'mono');
      cell(tr, c.owner, 'mono');
      cell(tr, c.agent, 'mono');
      var stateCell = cell(tr, c.state, 'state');
      stateCell.dataset.state = known ? c.state : 'unknown';
      cell(tr, c.turns, 'num');
      cell(tr, duration(c.idle_seconds), 'num');
      cell(tr, c.close_cause, 'cause');
      cell(tr, clock(c.created_at));
      cell(tr, clock(c.last_turn_at));
      rows.appendChild(tr);
    });
    if (shown === 0) {
      var empty = document.createElement('tr');
      var td = cell(empty, needle ? 'No conversation matches the filter.' : 'No conversations on this pod.', 'muted');
      td.colSpan = 9;
      rows.appendChild(empty);
    }
    byId('conversations').replaceChildren(rows);
    var total = typeof state.conversations_total === 'number' ? state.conversations_total : list.length;
    setText('count', shown + ' shown of ' + total + (total > list.length ? ' (newest ' + list.length + ' fetched)' : ''));
  }

  function setStatus(text, ok) {
    var node = byId('status');
    node.textContent = text;
    node.classList.toggle('down', !ok);
  }

  function poll() {
    fetch(STATE_URL, { cache: 'no-store', headers: { accept: 'application/json' } })
      .then(function (res) {
        if (!res.ok) throw new Error('the gateway answered ' + res.status);
        return res.json();
      })
      .then(function (state) {
        latest = state;
        render();
        setStatus('updated ' + new Date().toLocaleTimeString(), true);
      })
      .catch(function (err) {
        setStatus('not updated: ' + (err && err.message ? err.message : 'the gateway is unreachable') +
          ' (retrying every second)', false);
      })
      .then(function () {
        setTimeout(poll, POLL_MS);
      });
  }

  byId('filter').addEventListener('input', render);
  poll();
})();
`;

export const PAGE_CSS = `:root {
  color-scheme: light dark;
  --bg: #f7f7f8; --fg: #1d1f23; --muted: #6b7080; --line: #dcdde3; --card: #ffffff;
  --idle: #1f7a3f; --busy: #a15c00; --closed: #7a7f8c; --connecting: #2457c5; --alert: #b3261e;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #16171a; --fg: #e6e7ea; --muted: #9398a5; --line: #2e3138; --card: #1e2024;
    --idle: #5fd38a; --busy: #f0b354; --closed: #8d92a0; --connecting: #7aa5ff; --alert: #ff8a80; }
}
* { box-sizing: border-box; }
body { margin: 0; padding: 1.25rem 1.5rem 2rem; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
h1 { font-size: 1.3rem; margin: 0; }
header { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: .5rem; }
.muted { color: var(--muted); font-weight: normal; }
.meta { color: var(--muted); margin: .25rem 0; }
.status.down { color: var(--alert); font-weight: 600; }
.warning { border-left: 3px solid var(--busy); padding: .4rem .75rem; background: var(--card); margin: .75rem 0; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.stats { display: flex; flex-wrap: wrap; gap: .75rem; margin: 1rem 0 .5rem; }
.stat { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .6rem 1rem; min-width: 7.5rem; }
.stat .value { display: block; font-size: 1.6rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.stat .label { color: var(--muted); text-transform: uppercase; font-size: 11px; letter-spacing: .05em; }
.stat.alert .value { color: var(--alert); }
.toolbar { display: flex; align-items: center; gap: 1rem; margin: 1rem 0 .5rem; }
input[type=search] { font: inherit; padding: .3rem .5rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--card); color: var(--fg); width: 22rem; max-width: 60vw; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.state { font-weight: 600; }
td.state[data-state=idle] { color: var(--idle); }
td.state[data-state=busy] { color: var(--busy); }
td.state[data-state=connecting] { color: var(--connecting); }
td.state[data-state=closed] { color: var(--closed); }
tr.state-closed td { color: var(--muted); }
`;
