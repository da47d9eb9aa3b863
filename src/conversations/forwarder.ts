import type { Ownership } from './conversation.js';
import type { CallContext, TurnCall } from './calls.js';
import type { ConversationView, TurnResultView } from './views.js';

/** Another pod of the release, as the service names it: the forwarder knows how to reach it. */
export interface Sibling {
  readonly address: string;
}

/** What the siblings know of a session this pod does not hold. */
export interface Whereabouts {
  /** A sibling holds its socket: calls run there. */
  holder?: Sibling;
  /** The holder came from the forwarder's memory, not from asking: it may have moved since. */
  remembered?: boolean;
  /** A sibling held it and closed it: it tells best how. */
  closer?: Sibling;
  /** Its owner and first-turn settings, as a sibling remembers them. */
  owner?: Ownership;
}

/**
 * A forwarded call's end: the sibling's answer (its error is thrown as the same GatewayError), or
 * why the call runs here after all: `moved` (asked as the holder, it no longer holds the
 * conversation), `gone` (unreachable, or shutting down).
 */
export type Forwarded<T> = { ran: true; answer: T } | { ran: false; why: 'moved' | 'gone' };

/**
 * How calls reach the sibling pods (the peers implement it over HTTP). A call goes to a sibling
 * only when the sibling holds the conversation open (or, for a read, closed it itself).
 */
export interface Forwarder {
  /** Where a session is; `fresh` asks the siblings even when the forwarder remembers its holder. */
  locate(sessionId: string, fresh: boolean): Promise<Whereabouts>;
  turn(sibling: Sibling, call: TurnCall): Promise<Forwarded<TurnResultView>>;
  /** `asHolder`: the sibling answers only if it still holds the conversation (else `moved`). */
  get(sibling: Sibling, call: CallContext, asHolder: boolean): Promise<Forwarded<ConversationView>>;
  /** The note a plain close answers. */
  close(sibling: Sibling, call: CallContext): Promise<Forwarded<string>>;
  /** A caller's conversations on every sibling (a sibling that does not answer lists none). */
  conversationsOf(callerId: string): Promise<ConversationView[]>;
}

const NOWHERE: Whereabouts = Object.freeze({});
const NEVER: Forwarded<never> = Object.freeze({ ran: false, why: 'gone' });

/** A single pod's: no sibling, so every call runs here. */
export const localOnly: Forwarder = {
  locate: () => Promise.resolve(NOWHERE),
  turn: () => Promise.resolve(NEVER),
  get: () => Promise.resolve(NEVER),
  close: () => Promise.resolve(NEVER),
  conversationsOf: () => Promise.resolve([]),
};
