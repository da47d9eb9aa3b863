// What a request naming an existing conversation must match before the registry touches it. Pure
// checks of the request against the conversation, kept apart from the registry's state changes.
import { conflictingSettings, settingsView, type Caller, type ConnectInput } from '../domain/vocabulary.js';
import { GatewayError } from '../errors.js';
import type { Conversation } from './conversation.js';

/** Refuses a conversation of another caller or another agent (the caller may not see or drive it). */
export function checkOwner(conv: Conversation, caller: Caller, agentKey: string): void {
  if (conv.callerId !== caller.id || conv.agentKey !== agentKey) {
    throw new GatewayError(
      'conversation_not_yours',
      'This conversation belongs to another caller or another agent; start a conversation of your own.',
    );
  }
}

/** Refuses connect settings that differ from those the conversation connected with: the engine session keeps its first ones. */
export function checkSettings(conv: Conversation, input: ConnectInput): void {
  const differing = conflictingSettings(conv.settings, input);
  if (differing.length > 0) {
    throw new GatewayError(
      'conversation_settings_fixed',
      `${differing.join(', ')} ${differing.length > 1 ? 'are' : 'is'} fixed when the conversation connects; leave ${
        differing.length > 1 ? 'them' : 'it'
      } out or repeat the first turn's value${differing.length > 1 ? 's' : ''}.`,
      { fields: differing, fixed: settingsView(conv.settings) },
    );
  }
}
