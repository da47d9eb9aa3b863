import { z } from 'zod';
import type { AgentRef, ConnectInput } from '../domain/vocabulary.js';
import { connectFields, lineSchema, withinChars } from '../schemas/connect.js';
import { agentSchema } from '../schemas/requests.js';
import { ALWAYS, crossCheck, defaultName } from './cross-check.js';

/**
 * The test suite format, one schema for both forms a suite takes:
 * - `file`: a YAML file read by the CLI; `memory.restore` and `memory.save` are file paths
 *   (relative to the suite file) and `agent` is required, since it names the route;
 * - `http`: the body of `POST /v1/agents/{agent}/runs`; `memory.restore` is the snapshot itself
 *   (`{ units: […] }`), `memory.save` is `true`, and `agent` may be left out.
 * Every problem is reported as a field path and a rule ("conversations[0].turns[2].expect.tool
 * must be a string"), so the CLI can point at the line and the route can name the field.
 */
export type SuiteForm = 'file' | 'http';

export const MAX_CONVERSATIONS = 100;
export const MAX_TURNS = 200;
export const MAX_WAIT_MS = 600_000;
const MAX_NAME_CHARS = 200;

/** The fields each level knows, for "did you mean" on an unknown one. */
export const SUITE_FIELDS = [
  'agent',
  'name',
  'description',
  'locale',
  'device_ref',
  'time_zone',
  'run_label',
  'time_offset',
  'memory',
  'conversations',
] as const;
export const MEMORY_FIELDS = ['restore', 'confirm', 'save', 'wait_ms'] as const;
export const CONVERSATION_FIELDS = ['name', 'locale', 'device_ref', 'time_zone', 'time_offset', 'wait_ms', 'turns'] as const;
export const TURN_FIELDS = ['line', 'expect'] as const;
export const EXPECT_FIELDS = ['text_matches', 'text_contains', 'tool', 'shown', 'not_shown', 'ended_by_agent', 'exit_within_ms'] as const;

export interface Expectations {
  text_matches?: string;
  text_contains?: string[];
  tool?: string;
  shown?: string;
  not_shown?: string;
  ended_by_agent?: boolean;
  exit_within_ms?: number;
}

export interface SuiteTurn {
  line: string;
  expect: Expectations;
}

export interface SuiteConversation {
  name: string;
  /** The suite's connect settings with this conversation's overrides applied (run_label excluded). */
  connect: Omit<ConnectInput, 'run_label'>;
  waitMs: number;
  turns: SuiteTurn[];
}

export interface HttpMemory {
  deviceRef: string;
  restore: { units: Array<Record<string, unknown>> } | undefined;
  save: boolean;
  waitMs: number;
}

export interface FileMemory {
  deviceRef: string;
  restore: string | undefined;
  save: string | undefined;
  waitMs: number;
}

export interface Suite<M = HttpMemory> {
  agent: AgentRef | undefined;
  name: string | undefined;
  runLabel: string | undefined;
  memory: M | undefined;
  conversations: SuiteConversation[];
}

// ---------------------------------------------------------------------------------------------
// Patterns: `text_matches` is a JavaScript regular expression, written plain (`order \d+`) or as
// a literal with flags (`/hello/i`).

const LITERAL = /^\/(.+)\/([a-z]*)$/s;
const FLAGS = /^(?!.*(.).*\1)[imsu]*$/;

export function compilePattern(source: string): RegExp {
  const literal = LITERAL.exec(source);
  if (literal) {
    const [, body, flags] = literal as unknown as [string, string, string];
    if (!FLAGS.test(flags)) throw new Error(`the flags /${flags} are not allowed; use any of i, m, s, u once`);
    return new RegExp(body, flags);
  }
  return new RegExp(source);
}

const patternSchema = z
  .string({ error: 'must be a string: a regular expression such as "order \\d+" or "/hello/i"' })
  .min(1, { error: 'must not be empty' })
  .superRefine((source, ctx) => {
    try {
      compilePattern(source);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `must be a valid regular expression: ${(err as Error).message}` });
    }
  });

const nonEmpty = (what = 'a string') =>
  z.string({ error: `must be ${what}` }).refine((value) => value.trim() !== '', { error: 'must not be empty' });

const wordsSchema = z
  .union(
    [nonEmpty(), z.array(nonEmpty(), { error: 'must be a word or a list of words' }).min(1, { error: 'must list at least one word' })],
    {
      error: 'must be a word or a list of words',
    },
  )
  .transform((words) => (typeof words === 'string' ? [words] : words));

const expectSchema = z.strictObject({
  text_matches: patternSchema.optional(),
  text_contains: wordsSchema.optional(),
  tool: nonEmpty().optional(),
  shown: nonEmpty().optional(),
  not_shown: nonEmpty().optional(),
  ended_by_agent: z.boolean({ error: 'must be true or false' }).optional(),
  exit_within_ms: z
    .int({ error: 'must be a whole number of milliseconds' })
    .positive({ error: 'must be a positive number of milliseconds' })
    .optional(),
});

const turnSchema = z.strictObject({
  line: lineSchema,
  expect: expectSchema.nullish(),
});

const waitSchema = z
  .int({ error: 'must be a whole number of milliseconds' })
  .min(0, { error: 'must not be negative' })
  .max(MAX_WAIT_MS, { error: `must be at most ${MAX_WAIT_MS} (ten minutes)` });

const nameSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .refine((name) => withinChars(name, MAX_NAME_CHARS), { error: `must be at most ${MAX_NAME_CHARS} characters` })
  .refine((name) => !/[\p{Cc}\u2028\u2029]/u.test(name), { error: 'must be one line without control characters' });

const conversationSchema = z.strictObject({
  name: nameSchema.optional(),
  locale: connectFields.locale,
  device_ref: connectFields.device_ref,
  time_zone: connectFields.time_zone,
  time_offset: connectFields.time_offset,
  run_label: z
    .unknown()
    .superRefine((value, ctx) => {
      if (value === undefined) return;
      ctx.addIssue({
        code: 'custom',
        message: 'can be set only at the top of the suite: one run label tags every engine session of the run',
      });
    })
    .optional(),
  wait_ms: waitSchema.optional(),
  turns: z
    .array(turnSchema, { error: 'must be a list of turns, each with a line' })
    .min(1, { error: 'must list at least one turn' })
    .max(MAX_TURNS, { error: `must list at most ${MAX_TURNS} turns` }),
});

const fileMemorySchema = z.strictObject({
  restore: nonEmpty('a file path: a JSON snapshot, relative to the suite file').optional(),
  confirm: z.boolean({ error: 'must be true or false' }).optional(),
  save: nonEmpty('a file path: where to write the snapshot taken after the run, relative to the suite file').optional(),
  wait_ms: waitSchema.optional(),
});

const httpMemorySchema = z.strictObject({
  restore: z
    .looseObject(
      {
        units: z.array(z.record(z.string(), z.unknown()), { error: 'must be an array of JSON objects' }),
      },
      { error: 'must be a snapshot: an object with units, as the memory route returns it' },
    )
    .optional(),
  confirm: z.boolean({ error: 'must be true or false' }).optional(),
  save: z.boolean({ error: 'must be true or false: true returns the snapshot taken after the run in the report' }).optional(),
  wait_ms: waitSchema.optional(),
});

function suiteShape(form: SuiteForm) {
  return z.strictObject({
    agent: form === 'file' ? agentSchema : agentSchema.optional(),
    name: nameSchema.optional(),
    description: z.string({ error: 'must be a string' }).optional(),
    ...connectFields,
    memory: (form === 'file' ? fileMemorySchema : httpMemorySchema).optional(),
    conversations: z
      .array(conversationSchema, { error: 'must be a list of conversations, each with turns' })
      .min(1, { error: 'must list at least one conversation' })
      .max(MAX_CONVERSATIONS, { error: `must list at most ${MAX_CONVERSATIONS} conversations` }),
  });
}

type RawSuite = z.output<ReturnType<typeof suiteShape>>;

function normalize<M>(raw: RawSuite, memory: (m: NonNullable<RawSuite['memory']>, deviceRef: string) => M): Suite<M> {
  const base = {
    locale: raw.locale,
    device_ref: raw.device_ref,
    time_zone: raw.time_zone,
    time_offset: raw.time_offset,
  };
  const pick = <T>(own: T | undefined, inherited: T | undefined): T | undefined => (own !== undefined ? own : inherited);
  return {
    agent: raw.agent,
    name: raw.name,
    runLabel: raw.run_label ?? undefined,
    memory: raw.memory === undefined ? undefined : memory(raw.memory, raw.device_ref!),
    conversations: raw.conversations.map((conv, i) => ({
      name: conv.name ?? defaultName(i),
      connect: {
        locale: pick(conv.locale, base.locale),
        device_ref: pick(conv.device_ref, base.device_ref),
        time_zone: pick(conv.time_zone, base.time_zone),
        time_offset: pick(conv.time_offset, base.time_offset),
      },
      waitMs: conv.wait_ms ?? 0,
      turns: conv.turns.map((turn) => ({ line: turn.line, expect: turn.expect ?? {} })),
    })),
  };
}

export const httpSuiteSchema = suiteShape('http')
  .superRefine(crossCheck, ALWAYS)
  .transform((raw) =>
    normalize<HttpMemory>(raw, (m, deviceRef) => ({
      deviceRef,
      restore: (m as z.output<typeof httpMemorySchema>).restore as HttpMemory['restore'],
      save: (m as z.output<typeof httpMemorySchema>).save === true,
      waitMs: m.wait_ms ?? 0,
    })),
  );

export const fileSuiteSchema = suiteShape('file')
  .superRefine(crossCheck, ALWAYS)
  .transform((raw) =>
    normalize<FileMemory>(raw, (m, deviceRef) => ({
      deviceRef,
      restore: (m as z.output<typeof fileMemorySchema>).restore,
      save: (m as z.output<typeof fileMemorySchema>).save,
      waitMs: m.wait_ms ?? 0,
    })),
  );

// ---------------------------------------------------------------------------------------------
// Problems: a field path and one plain sentence.

export type Path = ReadonlyArray<PropertyKey>;

export interface Problem {
  /** `conversations[0].turns[2].expect.tool` */
  field: string;
  path: Array<string | number>;
  /** The whole sentence, starting with the field: "conversations[0].turns[2].expect.tool must be a string". */
  rule: string;
}

/** `conversations[0].turns[2].line` → `['conversations', 0, 'turns', 2, 'line']` */
export function parseFieldPath(field: string): Array<string | number> {
  const path: Array<string | number> = [];
  for (const [, key, index] of field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) path.push(index === undefined ? key! : Number(index));
  return path;
}

export function formatPath(path: Path): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object (a mapping of fields)',
  array: 'a list',
};

/** Fills in a rule where a schema sets none (plain zod types). */
const fallbackRule: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    return `must be ${TYPE_NAMES[issue.expected] ?? issue.expected}`;
  }
  return undefined;
};

/** The fields an object at this path knows, for an unknown field's message. */
function knownFields(path: Path): readonly string[] {
  const last = path.at(-1);
  if (path.length === 0) return SUITE_FIELDS;
  if (last === 'memory') return MEMORY_FIELDS;
  if (last === 'expect') return EXPECT_FIELDS;
  if (typeof last === 'number' && path.at(-2) === 'turns') return TURN_FIELDS;
  if (typeof last === 'number' && path.at(-2) === 'conversations') return CONVERSATION_FIELDS;
  return [];
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

function unknownFieldRule(key: string, known: readonly string[]): string {
  const near = known
    .map((k) => ({ k, d: distance(key.toLowerCase(), k) }))
    .filter(({ d }) => d <= 2)
    .sort((x, y) => x.d - y.d)[0];
  const hint = near ? `did you mean ${near.k}? ` : '';
  return `is not a known field; ${hint}${known.length > 0 ? `the fields here are ${known.join(', ')}` : ''}`.replace(/; $/, '');
}

function problemsOf(error: z.ZodError): Problem[] {
  const problems: Problem[] = [];
  for (const issue of error.issues) {
    const base = issue.path.filter((k): k is string | number => typeof k !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const path = [...base, key];
        problems.push({ field: formatPath(path), path, rule: `${formatPath(path)} ${unknownFieldRule(key, knownFields(base))}` });
      }
      continue;
    }
    let rule = issue.message;
    // The shared connect schemas start their messages with the field's own name.
    const last = base.at(-1);
    if (typeof last === 'string' && rule.startsWith(`${last} `)) rule = rule.slice(last.length + 1);
    if (issue.code === 'invalid_type' && (issue as { input?: unknown }).input === undefined) rule = 'is required';
    const field = base.length > 0 ? formatPath(base) : 'the suite';
    problems.push({ field, path: base, rule: `${field} ${rule}` });
  }
  return problems;
}

export type ParseResult<T> = { ok: true; suite: T } | { ok: false; problems: Problem[] };

function parseWith<T>(schema: z.ZodType<T>, value: unknown): ParseResult<T> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      problems: [
        { field: 'the suite', path: [], rule: 'the suite must be an object (a mapping) with agent, conversations and the other fields' },
      ],
    };
  }
  const result = schema.safeParse(value, { reportInput: true, error: fallbackRule });
  return result.success ? { ok: true, suite: result.data } : { ok: false, problems: problemsOf(result.error) };
}

/** A suite posted to the runs route. */
export const parseHttpSuite = (value: unknown): ParseResult<Suite<HttpMemory>> => parseWith(httpSuiteSchema, value);

/** A suite read from a YAML file (already turned into plain data). */
export const parseFileSuite = (value: unknown): ParseResult<Suite<FileMemory>> => parseWith(fileSuiteSchema, value);
