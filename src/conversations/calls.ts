import type { AgentAccess, AgentRef, Caller, ConnectInput } from '../domain/vocabulary.js';
import type { Element } from '../engine/elements.js';
import type { RunMembership } from './conversation.js';

/** Who calls, for which conversation: what a call needs to run here or on the pod holding it. */
export interface CallContext {
  caller: Caller;
  /** The caller's Authorization header: a forwarded call carries it, and the holder authorizes it again. */
  authorization: string;
  /** The agent as called. */
  agent: AgentRef;
  sessionId: string;
  /** A sibling forwarded this call: it runs here and is never forwarded again. */
  forwarded?: boolean;
}

export interface TurnCall extends CallContext {
  access: AgentAccess;
  line: string;
  /** The connect fields of the body: used when the conversation reconnects, checked otherwise. */
  connect: ConnectInput;
  /** Aborted when the caller hangs up: the turn is cancelled where it runs. */
  signal?: AbortSignal;
  /** Each element as it arrives, also from a forwarded turn. */
  onElement?: (element: Element) => void;
  /**
   * With `onElement`: a forwarded turn's element lines as the holder encoded them
   * (`{"element":…}`), passed on as they came instead of parsed for `onElement`.
   */
  relayElementLine?: (line: string) => void;
  /** A suite run's call: its conversation counts under the run budgets, not the caller's interactive limit. */
  run?: RunMembership;
}

export type StartCall = Omit<TurnCall, 'sessionId' | 'forwarded'>;

/**
 * The one way every front (REST, MCP, suite runs) names a call: the caller's own token as the
 * Authorization a forwarded call carries, the agent as called, and the conversation when there is one.
 */
export const callContext = (caller: Caller, agent: AgentRef, sessionId = '', forwarded = false): CallContext => ({
  caller,
  authorization: `Bearer ${caller.token}`,
  agent,
  sessionId,
  forwarded,
});
