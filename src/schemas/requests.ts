import { z } from 'zod';
import type { AgentRef } from '../domain/vocabulary.js';
import { invalidRequest } from '../errors.js';
import { connectFields, deviceRefSchema, lineProblems, lineSchema, sentLine } from './connect.js';
import { knownFieldsNoter, unknownFieldRule } from './unknown-fields.js';

const AGENT = /^([A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*)*)(?:\.([1-9][0-9]{0,8}))?$/;
const MAX_AGENT_CHARS = 128;

/** The agent a path names (`coach`, `coach.7`), or undefined when it is no agent ref. */
function agentRefOf(value: string): AgentRef | undefined {
  const match = AGENT.exec(value);
  if (match?.[1] === undefined) return undefined;
  return { ref: match[1], revision: match[2] === undefined ? null : Number(match[2]), key: value };
}

export const agentSchema = z
  .string()
  .max(MAX_AGENT_CHARS, { error: `agent must be at most ${MAX_AGENT_CHARS} characters` })
  .transform((value, ctx): AgentRef => {
    const agent = agentRefOf(value);
    if (agent === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'agent must be an agent ref such as coach, or ref.N for revision N such as coach.7',
      });
      return z.NEVER;
    }
    return agent;
  });

const SESSION_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
export const sessionIdSchema = z
  .string()
  .regex(SESSION_ID, { error: 'session_id must be the engine session id, a UUID' })
  .transform((id) => id.toLowerCase());

/** A run's id, as its stream's first line and its Location name it. */
export const runIdSchema = z
  .string()
  .regex(SESSION_ID, { error: 'run_id must be the id of a run, a UUID' })
  .transform((id) => id.toLowerCase());

/** An Mcp-Session-Id as the MCP transport allows it: visible ASCII. */
export const mcpSessionIdSchema = z.string().regex(/^[\x21-\x7E]{1,256}$/, 'visible ASCII, at most 256 characters');

export const agentParams = z.object({ agent: agentSchema });
export const conversationParams = z.object({ agent: agentSchema, session_id: sessionIdSchema });
export const memoryParams = z.object({ agent: agentSchema, device_ref: deviceRefSchema });

export const startBody = z.strictObject({ line: lineSchema.optional(), ...connectFields }, { error: bodyError });
export const turnBody = z.strictObject({ line: lineSchema, ...connectFields }, { error: bodyError });

/**
 * A turn's path and body. Nearly every turn is `{"line": …}` on a valid path: that one shape is
 * checked against the same rules (agentRefOf, SESSION_ID, lineProblems) without walking the
 * schemas, which cost a busy pod a tenth of its CPU per turn. Anything else, and every invalid
 * input, goes through the schemas, which word the problems; the result is the same either way.
 */
export function parseTurn(
  params: unknown,
  body: unknown,
): { params: z.output<typeof conversationParams>; body: z.output<typeof turnBody> } {
  const { agent, session_id } = (params ?? {}) as Record<string, unknown>;
  if (typeof agent === 'string' && agent.length <= MAX_AGENT_CHARS && typeof session_id === 'string' && SESSION_ID.test(session_id)) {
    const ref = agentRefOf(agent);
    const line = onlyKey(body, 'line') ? body.line : undefined;
    if (ref !== undefined && typeof line === 'string' && lineProblems(line).length === 0) {
      return { params: { agent: ref, session_id: session_id.toLowerCase() }, body: { line: sentLine(line) } };
    }
  }
  return { params: parse(conversationParams, params, 'path'), body: parse(turnBody, body === undefined ? {} : body, 'body') };
}

/** A JSON object with `key` as its one field. */
function onlyKey<K extends string>(value: unknown, key: K): value is Record<K, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  let fields = 0;
  for (const field in value) {
    if (field !== key) return false;
    fields += 1;
  }
  return fields === 1;
}

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
 * The rule of a missing or mistyped field whose schema words none itself, named by its path.
 * Every other rule is worded where it is declared, and an unknown field as a suite's is
 * (./unknown-fields.ts).
 */
function plainRule(issue: z.core.$ZodRawIssue): string | undefined {
  const at = (issue.path ?? []).join('.');
  if (issue.code === 'invalid_type' && at !== '') {
    return issue.input === undefined ? `${at} is required` : `${at} must be ${withArticle(KIND[issue.expected] ?? issue.expected)}`;
  }
  return undefined;
}

/**
 * Validates one part of a request (or an MCP tool's arguments); the first problem is the message,
 * all of them the details. Each unknown field is a problem of its own.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, part: 'body' | 'path' | 'query' | 'arguments'): z.output<S> {
  const known = knownFieldsNoter();
  const result = schema.safeParse(value, {
    error: (issue) => {
      known.note(issue);
      return plainRule(issue);
    },
  });
  if (result.success) return result.data;
  const [first, ...rest] = result.error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => {
        const field = [...issue.path, key].join('.');
        return { field, rule: `${field} ${unknownFieldRule(key, known.at(issue.path))}` };
      });
    }
    return [{ field: issue.path.length > 0 ? issue.path.join('.') : part, rule: issue.message }];
  });
  throw invalidRequest([first!, ...rest]);
}
