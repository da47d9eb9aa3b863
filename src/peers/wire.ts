import { z } from 'zod';
import type { Ownership } from '../conversations/conversation.js';
import { settingsFrom, settingsView } from '../domain/vocabulary.js';
import { deviceRefSchema, localeSchema, timeOffsetSchema, timeZoneSchema } from '../schemas/connect.js';
import { agentSchema, sessionIdSchema } from '../schemas/requests.js';

/**
 * What pods say to each other about a conversation, in the API's own words (snake_case), and
 * checked on arrival like any input: a peer is trusted with the secret, not with its bytes.
 */
const ownershipSchema = z.object({
  session_id: sessionIdSchema,
  caller_id: z.string().min(1).max(512),
  agent: agentSchema,
  settings: z.object({
    device_ref: deviceRefSchema,
    locale: localeSchema,
    time_zone: timeZoneSchema.nullable(),
    run_label: z.string().max(256).nullable(),
    time_offset: timeOffsetSchema.nullable(),
  }),
  turns: z.number().int().min(0),
  created_at: z.number().int().min(0),
});

export type OwnershipWire = z.input<typeof ownershipSchema>;

export const ownershipToWire = (o: Ownership): OwnershipWire => ({
  session_id: o.sessionId,
  caller_id: o.callerId,
  agent: o.agentKey,
  settings: settingsView(o.settings),
  turns: o.turns,
  created_at: o.createdAt,
});

/** The ownership a peer sent, or undefined when it is not one. */
export function ownershipFromWire(value: unknown): Ownership | undefined {
  const parsed = ownershipSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const o = parsed.data;
  return {
    sessionId: o.session_id,
    callerId: o.caller_id,
    agentKey: o.agent.key,
    settings: settingsFrom(o.settings, () => o.settings.device_ref),
    turns: o.turns,
    createdAt: o.created_at,
  };
}

const closeNoticeSchema = z.object({ session_id: sessionIdSchema, closed: z.literal(true) });

/** The session a sibling's close notice names (it no longer holds it), or undefined when the body is not one. */
export function closeNoticeFromWire(value: unknown): string | undefined {
  const parsed = closeNoticeSchema.safeParse(value);
  return parsed.success ? parsed.data.session_id : undefined;
}

/**
 * A lookup's answer: `held` (its socket is there), `closed` (it held it and closed it), `known`
 * (from an ownership notice), `unknown`.
 */
export type LookupAnswer = { state: 'held' | 'closed' | 'known'; owner: OwnershipWire } | { state: 'unknown' };
