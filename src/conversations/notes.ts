import type { CloseCause } from '../domain/vocabulary.js';
import type { TurnRecord } from '../engine/socket.js';
import type { Conversation } from './conversation.js';

/** The plain sentences results and views carry about a conversation's connection. */
const END_OF_CONVERSATION_NOTE =
  "The engine saw a plain socket close (never #exit): about 30 s later it runs the session's end-of-conversation work " +
  '(post-session integrations, end-of-conversation evaluations), once per conversation.';

const CLOSE_NOTES: Record<CloseCause, string> = {
  idle: 'The connection closed after the idle time without a turn.',
  turn_failed: "The connection closed because the turn did not end with the engine's exit element.",
  cancelled: 'The connection closed because the turn was cancelled.',
  agent_ended: 'The agent ended the conversation.',
  caller: "The connection was closed at the caller's request.",
  evicted: 'The connection was closed to make room for a newer conversation (least recently used idle one).',
  engine_closed: 'The engine closed the connection between turns.',
  shutdown: 'The connection closed because the gateway pod shut down.',
  moved: 'The connection closed because another gateway pod of the release reconnected the conversation.',
};

const HELD_ELSEWHERE_NOTE =
  'Another gateway pod of this release opened this conversation and no pod holds its connection now (that pod closed it or went ' +
  'away); the next turn reconnects.';

export const closeNotes = (conv: Conversation): string[] =>
  conv.heldElsewhere && conv.closeCause === undefined
    ? [HELD_ELSEWHERE_NOTE]
    : conv.closeCause === undefined
      ? []
      : conv.closeCause === 'agent_ended'
        ? [CLOSE_NOTES.agent_ended]
        : [CLOSE_NOTES[conv.closeCause], END_OF_CONVERSATION_NOTE];

const PREVIOUSLY = {
  closed: 'its connection on this pod had closed',
  elsewhere: 'another pod of the release held it and no longer does',
  unknown: 'this pod did not hold it: another pod or a restart',
} as const;

/** Where the conversation was before a turn reconnected it. */
export type Previously = keyof typeof PREVIOUSLY;

const reconnectNote = (sessionId: string, previously: Previously): string =>
  `This turn opened a new socket to the existing engine session ${sessionId} (${PREVIOUSLY[previously]}): the engine kept its ` +
  `messages but not the earlier turns' planning.`;

/** A turn's notes: the engine's, then (first) a reconnect's, then (last) how its conversation closed, if it did. */
export function turnNotes(conv: Conversation, record: TurnRecord, reconnectedFrom: Previously | undefined): string[] {
  const notes = [...record.notes];
  if (reconnectedFrom !== undefined) notes.unshift(reconnectNote(conv.sessionId!, reconnectedFrom));
  if (conv.state === 'closed') notes.push(...closeNotes(conv).filter((n) => !notes.includes(n)));
  return notes;
}
