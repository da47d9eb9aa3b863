import { settingsView } from '../domain/vocabulary.js';
import { summarize } from '../engine/elements.js';
import type { Conversation } from './conversation.js';
import { closeNotes } from './notes.js';
import type { TurnRun } from './registry.js';

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** A conversation in the API's shape (openapi.yaml: Conversation). */
export function conversationView(conv: Conversation, now = Date.now()) {
  return {
    session_id: conv.sessionId!,
    agent: `agent:${conv.agentKey}`,
    connection: conv.state === 'closed' ? ('closed' as const) : ('open' as const),
    state: conv.state,
    busy: conv.state === 'busy' || conv.state === 'connecting',
    turns: conv.turns,
    ...settingsView(conv.settings),
    ended_by_agent: conv.endedByAgent,
    created_at: new Date(conv.createdAt).toISOString(),
    last_turn_at: iso(conv.lastTurnAt),
    idle_seconds: conv.idleSeconds(now),
    close_cause: conv.closeCause ?? null,
    closed_at: iso(conv.closedAt),
    notes: closeNotes(conv),
  };
}

/** A turn's result in the API's shape (openapi.yaml: TurnResult). */
export function turnResultView(result: TurnRun, line: string) {
  const { conversation: conv, record } = result;
  const summary = summarize(record.elements);
  return {
    session_id: conv.sessionId!,
    agent: `agent:${conv.agentKey}`,
    turn: {
      line,
      outcome: record.outcome,
      elements: record.elements,
      text: summary.text,
      tools: summary.tools,
      shown: summary.shown,
      duration_ms: record.durationMs,
    },
    conversation: {
      ...settingsView(conv.settings),
      turns: conv.turns,
      connection: conv.state === 'closed' ? ('closed' as const) : ('open' as const),
      ended_by_agent: conv.endedByAgent,
      reconnected: result.reconnected,
      planning_lost: result.reconnected,
    },
    notes: result.notes,
  };
}

export type TurnResultView = ReturnType<typeof turnResultView>;

export type ConversationView = ReturnType<typeof conversationView>;
