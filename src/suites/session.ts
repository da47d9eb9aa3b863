import type { Conversation } from '../conversations/conversation.js';
import { closeNotes, END_OF_CONVERSATION_NOTE } from '../conversations/notes.js';
import type { TurnResult } from '../conversations/registry.js';
import { isGatewayError } from '../errors.js';
import type { ConnectInput } from '../domain/vocabulary.js';
import type { RunContext } from './context.js';

// The runner's one link to the conversation layer: a suite conversation's turns go through the
// registry like any conversation's (admission, limits, one socket, plain closes).

const WAITED_FOR_ROOM = 'The conversation waited for room under the conversation limit before it started.';
const CLOSED_BY_RUN = 'The run closed the connection after the last turn (a plain close).';

const isFull = (err: unknown): boolean =>
  isGatewayError(err) && (err.code === 'caller_conversation_limit' || err.code === 'pod_conversation_limit');

/**
 * Starts a conversation with its first line; when the caller's (or the pod's) limit has no idle
 * conversation to evict, waits for the registry to say a place may have freed (another run or
 * turn of this caller ends), for up to one turn budget.
 */
export async function startConversation(ctx: RunContext, connect: ConnectInput, line: string, notes: string[]): Promise<TurnResult> {
  const deadline = Date.now() + ctx.config.turnBudgetMs;
  let waited = false;
  for (;;) {
    try {
      const result = await ctx.registry.start(ctx.caller, ctx.access, connect, { line, signal: ctx.signal });
      if (waited) notes.push(WAITED_FOR_ROOM);
      return result;
    } catch (err) {
      if (!isFull(err) || Date.now() >= deadline || ctx.signal.aborted) throw err;
      waited = true;
      await ctx.registry.whenRoom(ctx.signal, deadline - Date.now());
    }
  }
}

/** The next line over the conversation's socket. */
export const nextTurn = (ctx: RunContext, sessionId: string, line: string): Promise<TurnResult> =>
  ctx.registry.turn(ctx.caller, ctx.access, sessionId, {}, { line, signal: ctx.signal });

/** A plain close when the attempt is done; what the report says about how it closed. */
export function closeConversation(ctx: RunContext, conv: Conversation): string[] {
  if (conv.sessionId === undefined) return [];
  try {
    ctx.registry.closeByCaller(ctx.caller, ctx.access.agentKey, conv.sessionId);
  } catch (err) {
    // Forgotten already (the remembered set is bounded): nothing left to close.
    if (!isGatewayError(err)) throw err;
  }
  return conv.closeCause === 'caller' ? [CLOSED_BY_RUN] : closeNotes(conv).filter((n) => n !== END_OF_CONVERSATION_NOTE);
}

/** Opens and closes a socket for a device that never connected, counted in the caller's limits. */
export async function warmUpDevice(ctx: RunContext, connect: ConnectInput): Promise<void> {
  const deadline = Date.now() + ctx.config.turnBudgetMs;
  for (;;) {
    try {
      return await ctx.registry.warmUp(ctx.caller, ctx.access, connect);
    } catch (err) {
      if (!isFull(err) || Date.now() >= deadline || ctx.signal.aborted) throw err;
      await ctx.registry.whenRoom(ctx.signal, deadline - Date.now());
    }
  }
}
