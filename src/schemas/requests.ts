import { z } from 'zod';
import type { AgentRef } from '../domain/vocabulary.js';
import { invalidRequest } from '../errors.js';
import { connectFields, deviceRefSchema, lineSchema } from './connect.js';

const AGENT = /^([A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*)*)(?:\.([1-9][0-9]{0,8}))?$/;
export const agentSchema = z
  .string()
  .max(128, { error: 'agent must be at most 128 characters' })
  .transform((value, ctx): AgentRef => {
    const match = AGENT.exec(value);
    if (match?.[1] === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'agent must be an agent ref such as coach, or ref.N for revision N such as coach.7',
      });
      return z.NEVER;
    }
    const revision = match[2] === undefined ? null : Number(match[2]);
    return { ref: match[1], revision, key: value };
  });

export const sessionIdSchema = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, {
    error: 'session_id must be the engine session id, a UUID',
  })
  .transform((id) => id.toLowerCase());

/** An Mcp-Session-Id as the MCP transport allows it: visible ASCII. */
export const mcpSessionIdSchema = z.string().regex(/^[\x21-\x7E]{1,256}$/, 'visible ASCII, at most 256 characters');

export const agentParams = z.object({ agent: agentSchema });
export const conversationParams = z.object({ agent: agentSchema, session_id: sessionIdSchema });
export const memoryParams = z.object({ agent: agentSchema, device_ref: deviceRefSchema });

export const startBody = z.strictObject({ line: lineSchema.optional(), ...connectFields }, { error: bodyError });
export const turnBody = z.strictObject({ line: lineSchema, ...connectFields }, { error: bodyError });

export const restoreBody = z.object(
  {
    confirm: z.literal(true),
    snapshot: z.looseObject(
      {
        units: z.array(z.record(z.string(), z.unknown(), { error: 'snapshot.units must be an array of JSON objects' }), {
          error: 'snapshot.units must be an array of JSON objects',
        }),
      },
      { error: 'snapshot must be an object with units, as the snapshot route returns it' },
    ),
  },
  { error: bodyError },
);

function bodyError(issue: { code: string; input?: unknown }): string | undefined {
  if (issue.code === 'invalid_type' && (typeof issue.input !== 'object' || issue.input === null || Array.isArray(issue.input))) {
    return 'the body must be a JSON object';
  }
  return undefined;
}

const KIND: Record<string, string> = { record: 'object', int: 'integer' };
const withArticle = (kind: string): string => `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}`;

/**
 * The rule of an issue whose schema words none itself: an unknown field (no rule allows it) and a
 * missing or mistyped one, named by its path. Every other rule is worded where it is declared.
 */
function plainRule(issue: z.core.$ZodRawIssue): string | undefined {
  const at = (issue.path ?? []).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => (at === '' ? key : `${at}.${key}`));
    return `unknown field${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}`;
  }
  if (issue.code === 'invalid_type' && at !== '') {
    return issue.input === undefined ? `${at} is required` : `${at} must be ${withArticle(KIND[issue.expected] ?? issue.expected)}`;
  }
  return undefined;
}

/**
 * Validates one part of a request (or an MCP tool's arguments); the first problem is the message,
 * all of them the details.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, part: 'body' | 'path' | 'query' | 'arguments'): z.output<S> {
  const result = schema.safeParse(value, { error: plainRule });
  if (result.success) return result.data;
  const [first, ...rest] = result.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.join('.') : part,
    rule: issue.message,
  }));
  throw invalidRequest([first!, ...rest]);
}
