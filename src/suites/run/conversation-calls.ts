import type { RunLimitFull } from '../../conversations/admission.js';
import { callContext, type StartCall } from '../../conversations/calls.js';
import type { TurnResultView } from '../../conversations/views.js';
import type { ConnectInput } from '../../domain/vocabulary.js';
import { isGatewayError } from '../../errors.js';
import type { RunContext } from './context.js';

// The runner's one link to the conversation layer: a suite conversation's turns go through the
// conversation service like any front's (admission, one socket, plain closes), as the run's
// conversations: under the run's concurrency and the run budgets, not the caller's interactive limit.

const WAITED_FOR_ROOM = 'The conversation waited for room under the run limits before it started.';
const CLOSED_BY_RUN = 'The run closed the connection after the last turn (a plain close).';

/** The run limit a refused start found full (the admission's details), or undefined for any other error. */
function fullLimit(err: unknown): RunLimitFull | undefined {
  if (!isGatewayError(err) || (err.code !== 'caller_conversation_limit' && err.code !== 'pod_conversation_limit')) return undefined;
  const details = err.details as Partial<RunLimitFull> | undefined;
  return typeof details?.limit === 'string' && typeof details.held === 'number' ? (details as RunLimitFull) : undefined;
}

/** The call as the service takes it: the run's caller, agent, signal and room. */
const callOf = (ctx: RunContext, connect: ConnectInput, line: string): StartCall & { sessionId: string } => ({
  ...callContext(ctx.caller, ctx.agent),
  access: ctx.access,
  connect,
  line,
  signal: ctx.signal,
  run: ctx.room,
});

/**
 * Retries `attempt` while a run limit is full (the pod's or the caller's run budget, the pod's
 * limit), each time after the service says a place may have freed: a run waits for room, however
 * long, and never fails for want of it (other runs end); only the caller hanging up stops it.
 * The run's room counts the time. Resolves whether it had to wait.
 */
async function withRoom<T>(ctx: RunContext, attempt: () => Promise<T>): Promise<{ value: T; waited: boolean }> {
  for (let waited = false; ; waited = true) {
    try {
      return { value: await attempt(), waited };
    } catch (err) {
      const full = fullLimit(err);
      if (full === undefined || ctx.signal.aborted) throw err;
      await ctx.room.waitFor(full, () => ctx.conversationService.whenRoom(ctx.signal, ctx.config.turnBudgetMs));
    }
  }
}

/** Starts a conversation with its first line, waiting for room under the limits when there is none. */
export async function startConversation(ctx: RunContext, connect: ConnectInput, line: string, notes: string[]): Promise<TurnResultView> {
  const { value, waited } = await withRoom(ctx, () => ctx.conversationService.start(callOf(ctx, connect, line)));
  if (waited) notes.push(WAITED_FOR_ROOM);
  return value;
}

/** The next line over the conversation's socket. */
export const nextTurn = (ctx: RunContext, sessionId: string, line: string): Promise<TurnResultView> =>
  ctx.conversationService.turn({ ...callOf(ctx, {}, line), sessionId });

/**
 * A plain close when the attempt is done; what the report says about it. A conversation its last
 * turn closed (the agent ended it, the turn failed) is closed already, and that turn's notes say why.
 */
export async function closeConversation(ctx: RunContext, last: TurnResultView): Promise<string[]> {
  if (last.conversation.connection === 'closed') return [];
  try {
    await ctx.conversationService.close({ ...callOf(ctx, {}, ''), sessionId: last.session_id });
  } catch (err) {
    // Forgotten already (the remembered set is bounded): nothing left to close.
    if (!isGatewayError(err)) throw err;
  }
  return [CLOSED_BY_RUN];
}

/** Opens and closes a socket for a device that never connected, counted as one of the run's conversations. */
export async function warmUpDevice(ctx: RunContext, connect: ConnectInput): Promise<void> {
  await withRoom(ctx, () => ctx.conversationService.warmUp(ctx.caller, ctx.access, connect, ctx.room));
}
