import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Conversation } from '../conversations/conversation.js';
import { RECENT_TURNS_KEPT, RecentTurns, type RecentTurn } from '../conversations/recent-turns.js';
import { conversationView } from '../conversations/views.js';
import { GatewayError } from '../errors.js';
import { runView, type RunView } from '../runs/views.js';
import { pageHeaders } from './page-headers.js';

/**
 * The live debug page, for engineers reaching one pod through `kubectl port-forward`: every
 * caller's conversations on this pod and the pool's figures, refreshed every second, and the last
 * turns of each conversation (what was said, the tools called, what was shown, how it ended).
 *
 * Registered only when DEBUG_PAGE=true (app.ts), because it shows every caller's conversations
 * and has no authentication of its own. It never shows a token, the engine identity or any
 * other setting's value: /debug/state is built field by field from the registry, not by
 * serializing a conversation or the config. The chart's ingress does not route /debug.
 *
 * The page is static: public/debug/ at the package root (index.html, app.js, app.css), read once
 * when the page is turned on and served under a Content-Security-Policy that allows no inline
 * script and no other origin. Its script writes every value with textContent, never as HTML.
 *
 * The last turns are kept only while the page is on: this plugin, registered only then, is what
 * subscribes to the registry's turns (conversations/recent-turns.ts keeps them, bounded).
 */

/**
 * public/debug/ sits at the package root, two levels above both src/routes/ and dist/routes/: the
 * package ships it (package.json `files`) and the image copies it beside dist/.
 */
const PAGE_DIR = new URL('../../public/debug/', import.meta.url);
const PAGE_FILES = [
  { path: '/debug', file: 'index.html', type: 'text/html; charset=utf-8' },
  { path: '/debug/app.js', file: 'app.js', type: 'text/javascript; charset=utf-8' },
  { path: '/debug/app.css', file: 'app.css', type: 'text/css; charset=utf-8' },
] as const;

/** How many conversations one poll returns at most (open ones first); `?limit=` may lower or raise it. */
const DEFAULT_STATE_LIMIT = 500;
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
  /** Runs this pod holds or keeps as replicas, newest first, without their reports. */
  runs: RunView[];
  /** Runs running here that no sibling keeps a replica of: lost if this pod dies. */
  runs_unreplicated: string[];
}

/** A conversation's last turns on this pod, oldest first. */
export interface DebugTurns {
  session_id: string;
  /** How many turns a conversation keeps at most. */
  kept: number;
  turns: readonly RecentTurn[];
}

/** The API's view of the conversation, narrowed to what the page may show: no settings. */
function debugConversation(conv: Conversation, now = Date.now()): DebugConversation {
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

export async function debugRoutes(app: FastifyInstance): Promise<void> {
  const pod = hostname();
  const recentTurns = new RecentTurns(app.conversationRegistry);
  const files = await Promise.all(PAGE_FILES.map(async (page) => ({ ...page, body: await readFile(new URL(page.file, PAGE_DIR)) })));

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isDebugHost(request.headers.host)) {
      throw new GatewayError(
        'forbidden',
        'The debug page answers only to localhost or an IP address (kubectl port-forward), as a guard against DNS rebinding.',
      );
    }
    reply.headers(pageHeaders());
  });

  for (const { path, type, body } of files) app.get(path, async (_request, reply) => reply.type(type).send(body));
  app.get('/debug/', async (_request, reply) => reply.redirect('../debug'));

  // Polled by the page while a conversation's turns are open, whenever its turn count moves.
  app.get<{ Params: { session_id: string } }>(
    '/debug/conversations/:session_id/turns',
    { logLevel: 'warn' },
    async (request): Promise<DebugTurns> => {
      const sessionId = request.params.session_id.toLowerCase();
      return { session_id: sessionId, kept: RECENT_TURNS_KEPT, turns: recentTurns.of(sessionId) };
    },
  );

  // Polled every second per open page: its requests are not logged at info level.
  app.get('/debug/state', { logLevel: 'warn' }, async (request): Promise<DebugState> => {
    const limit = stateLimit((request.query as Record<string, unknown> | undefined)?.limit);
    const now = Date.now();
    const all = app.conversationRegistry.all();
    // Open conversations first (at most the pod limit of them), then the newest remembered ones.
    const open = all.filter((c) => c.state !== 'closed');
    const closed = all.filter((c) => c.state === 'closed');
    const shown = [...open, ...closed].slice(0, limit);
    const { open: openCount, busy, remembered, draining } = app.conversationRegistry.stats;
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
      runs: app.runs.all().map((run) => ({ ...runView(run, app.runs.podName), report: null })),
      runs_unreplicated: app.runs.running.filter((run) => app.runs.siblings.unreplicated(run)).map((run) => run.id),
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
