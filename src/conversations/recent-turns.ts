import { LRUCache } from 'lru-cache';
import type { TurnOutcome } from '../domain/vocabulary.js';
import { summarize } from '../engine/elements.js';
import type { TurnRecord } from '../engine/socket.js';
import type { Conversation } from './conversation.js';
import type { ConversationRegistry } from './registry.js';

/** One turn as the debug page shows it: what was said and done, never a setting. */
export interface RecentTurn {
  ended_at: string;
  line: string;
  outcome: TurnOutcome;
  /** The agent's spoken text, joined (engine data: untrusted, shown as text). */
  text: string;
  tools: string[];
  shown: string[];
  duration_ms: number;
}

/** How many turns of a conversation are kept: its last ones. */
export const RECENT_TURNS_KEPT = 10;
/** Conversations with turns kept, the ones with the most recent turn first. */
const CONVERSATIONS_KEPT = 1000;
/** Characters kept in all (lines, texts, tool and shown names): about 4 MB of strings at most. */
const CHARACTERS_KEPT = 2_000_000;
/** Per turn: a longer line or text is cut, ending with an ellipsis; at most NAMES tool and shown names. */
const TEXT_CHARS = 2000;
const NAMES = 20;
const NAME_CHARS = 200;

const cut = (value: string, max: number): string => (value.length > max ? `${value.slice(0, max)}…` : value);
const names = (values: string[]): string[] => values.slice(0, NAMES).map((name) => cut(name, NAME_CHARS));
const sizeOf = (turns: readonly RecentTurn[]): number =>
  turns.reduce((sum, t) => sum + t.line.length + t.text.length + [...t.tools, ...t.shown].reduce((n, s) => n + s.length, 0), 1);

/**
 * The last turns of each conversation on this pod, for the debug page (issue 23): kept in memory
 * only while the page is on — the debug routes create it, and with DEBUG_PAGE off nothing
 * subscribes to the registry's turns — and bounded: RECENT_TURNS_KEPT per conversation, texts
 * cut, and at most CONVERSATIONS_KEPT conversations and CHARACTERS_KEPT characters, the
 * conversations whose last turn is oldest dropped first.
 */
export class RecentTurns {
  readonly #bySession = new LRUCache<string, readonly RecentTurn[]>({
    max: CONVERSATIONS_KEPT,
    maxSize: CHARACTERS_KEPT,
    sizeCalculation: sizeOf,
  });

  constructor(registry: ConversationRegistry) {
    registry.onTurnEnded((conv, line, record) => this.#add(conv, line, record));
  }

  /** The conversation's kept turns, oldest first; none for a session this pod ran no turn of (or has dropped). */
  of(sessionId: string): readonly RecentTurn[] {
    return this.#bySession.peek(sessionId) ?? [];
  }

  #add(conv: Conversation, line: string, record: TurnRecord): void {
    const sessionId = conv.sessionId;
    if (sessionId === undefined) return;
    const summary = summarize(record.elements);
    const turn: RecentTurn = {
      ended_at: new Date().toISOString(),
      line: cut(line, TEXT_CHARS),
      outcome: record.outcome,
      text: cut(summary.text, TEXT_CHARS),
      tools: names(summary.tools),
      shown: names(summary.shown),
      duration_ms: Math.round(record.durationMs),
    };
    // A new array each time: the cache measures an entry when it is set.
    const kept = this.#bySession.peek(sessionId) ?? [];
    this.#bySession.set(sessionId, [...kept.slice(1 - RECENT_TURNS_KEPT), turn]);
  }
}
