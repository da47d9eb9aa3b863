import { z } from 'zod';
import { connectFields, lineSchema, withinChars } from '../../schemas/connect.js';
import { agentSchema } from '../../schemas/requests.js';
import { knownFieldsNoter, refusedHere } from '../../schemas/unknown-fields.js';
import { ALWAYS, criterionId, crossCheck, DEFAULT_MAX_TURNS, defaultName } from './cross-check.js';
import {
  DEFAULT_CONCURRENCY,
  MAX_CONCURRENCY,
  MAX_CONVERSATIONS,
  MAX_REPEAT,
  MAX_ATTEMPTS,
  DEFAULT_CONFIDENCE,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MIN_ATTEMPTS,
  MAX_TURNS,
  MAX_WAIT_MS,
  type Criterion,
  type FileMemory,
  type HttpMemory,
  type Suite,
  type SuiteConversation,
  type SuiteForm,
} from './format.js';
import { memoryExpectOf, memoryExpectSchema } from './memory-expect.js';
import { attackOf, attackSchema } from './attack.js';
import { compilePattern } from './text-matches.js';
import { fallbackRule, notAnObject, problemsOf, type SuiteProblem } from './problems.js';

// The suite's schema, one for both forms (format.ts); every rule phrased to follow its field's path.

const MAX_NAME_CHARS = 200;
const MAX_PERSONA_CHARS = 4000;
const MAX_CRITERION_CHARS = 1000;
const MAX_FACT_CHARS = 500;
const MAX_FACTS = 50;
const MAX_CRITERIA = 50;
const MAX_SIMULATED_TURNS = 50;
const MAX_SEED = 2 ** 31 - 1;

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

export const boundedText = (max: number) =>
  nonEmpty().refine((value) => withinChars(value, max), { error: `must be at most ${max} characters` });

/** A list of 1 to `count.max` items; `what` says what the list holds, for a value that is no list. */
export const listOf = <T extends z.ZodType>(item: T, what: string, count: { one: string; many: string; max: number }) =>
  z
    .array(item, { error: `must be a list of ${what}` })
    .min(1, { error: `must list at least one ${count.one}` })
    .max(count.max, { error: `must list at most ${count.max} ${count.many}` });

const wordsSchema = z
  .union(
    [nonEmpty(), z.array(nonEmpty(), { error: 'must be a word or a list of words' }).min(1, { error: 'must list at least one word' })],
    {
      error: 'must be a word or a list of words',
    },
  )
  .transform((words) => (typeof words === 'string' ? [words] : words));

const booleanSchema = z.boolean({ error: 'must be true or false' });

const expectSchema = z.strictObject({
  text_matches: patternSchema.optional(),
  text_contains: wordsSchema.optional(),
  tool: nonEmpty().optional(),
  not_tool: nonEmpty().optional(),
  shown: nonEmpty().optional(),
  not_shown: nonEmpty().optional(),
  ended_by_agent: booleanSchema.optional(),
  exit_within_ms: z
    .int({ error: 'must be a whole number of milliseconds' })
    .positive({ error: 'must be a positive number of milliseconds' })
    .optional(),
  judge: boundedText(MAX_CRITERION_CHARS).optional(),
});

const turnSchema = z.strictObject({
  line: lineSchema,
  expect: expectSchema.nullish(),
});

/** `votes`: rulings per criterion and attempt, odd so that a majority always exists between passed and failed. */
export const votesSchema = z
  .int({ error: 'must be a whole number of votes' })
  .refine((votes) => votes === 1 || votes === 3 || votes === 5, { error: 'must be 1, 3 or 5 (odd, at most 5)' });

export const criterionSchema = z.union(
  [
    boundedText(MAX_CRITERION_CHARS),
    z.strictObject({
      id: z
        .string({ error: 'must be a string' })
        .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, { error: 'must start with a letter, then letters, digits, _ or -, at most 64' }),
      text: boundedText(MAX_CRITERION_CHARS),
      votes: votesSchema.optional(),
    }),
  ],
  { error: 'must be a criterion: plain text, or { id, text, votes }' },
);

const conversationExpectSchema = z.strictObject({
  tools: wordsSchema.optional(),
  not_tools: wordsSchema.optional(),
  shown: wordsSchema.optional(),
  not_shown: wordsSchema.optional(),
  ended_by_agent: booleanSchema.optional(),
  criteria: listOf(criterionSchema, 'criteria: plain text, or { id, text }', {
    one: 'criterion',
    many: 'criteria',
    max: MAX_CRITERIA,
  }).optional(),
  memory: memoryExpectSchema(criterionSchema).optional(),
});

const simulatedUserSchema = z.strictObject({
  persona: boundedText(MAX_PERSONA_CHARS),
  goal: boundedText(MAX_PERSONA_CHARS),
  facts: z
    .record(z.string(), boundedText(MAX_FACT_CHARS), { error: 'must be a mapping of short texts (an order number, a date of birth)' })
    .refine((facts) => Object.keys(facts).length <= MAX_FACTS, { error: `must hold at most ${MAX_FACTS} facts` })
    .optional(),
  max_turns: z
    .int({ error: 'must be a whole number of lines' })
    .min(1, { error: 'must be at least 1' })
    .max(MAX_SIMULATED_TURNS, { error: `must be at most ${MAX_SIMULATED_TURNS}` })
    .optional(),
  min_turns: z
    .int({ error: 'must be a whole number of lines' })
    .min(1, { error: 'must be at least 1' })
    .max(MAX_SIMULATED_TURNS, { error: `must be at most ${MAX_SIMULATED_TURNS}` })
    .optional(),
  model: boundedText(MAX_NAME_CHARS).optional(),
  temperature: z
    .number({ error: 'must be a number' })
    .min(0, { error: 'must be at least 0' })
    .max(2, { error: 'must be at most 2' })
    .optional(),
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
  run_label: refusedHere(
    z
      .unknown()
      .superRefine((value, ctx) => {
        if (value === undefined) return;
        ctx.addIssue({
          code: 'custom',
          message: 'can be set only at the top of the suite: one run label tags every engine session of the run',
        });
      })
      .optional(),
  ),
  wait_ms: waitSchema.optional(),
  turns: listOf(turnSchema, 'turns, each with a line', { one: 'turn', many: 'turns', max: MAX_TURNS }).optional(),
  simulated_user: simulatedUserSchema.optional(),
  attack: attackSchema(criterionSchema).optional(),
  expect: conversationExpectSchema.nullish(),
});

const fileMemorySchema = z.strictObject({
  restore: nonEmpty('a file path: a JSON snapshot, relative to the suite file').optional(),
  confirm: booleanSchema.optional(),
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
  confirm: booleanSchema.optional(),
  save: z.boolean({ error: 'must be true or false: true returns the snapshot taken after the run in the report' }).optional(),
  wait_ms: waitSchema.optional(),
});

/**
 * `repeat`, also as the CLI's `--repeat` and an MCP tool's argument take it; `named` starts the
 * rule where no field path does (`repeat must be at least 1`).
 */
export const repeatRule = (named = '') =>
  z
    .int({ error: `${named}must be a whole number of attempts` })
    .min(1, { error: `${named}must be at least 1` })
    .max(MAX_REPEAT, { error: `${named}must be at most ${MAX_REPEAT}` });

/**
 * `concurrency`, also as the CLI's `--concurrency` and an MCP tool's argument take it; `named`
 * starts the rule where no field path does (`concurrency must be at most 50`).
 */
export const concurrencyRule = (named = '') =>
  z
    .int({ error: `${named}must be a whole number of conversations at once` })
    .min(1, { error: `${named}must be at least 1` })
    .max(MAX_CONCURRENCY, { error: `${named}must be at most ${MAX_CONCURRENCY}` });

/** `max_attempts` and `min_attempts`, also as the CLI's `--max-attempts` and an MCP tool's argument take them. */
export const attemptsRule = (named = '') =>
  z
    .int({ error: `${named}must be a whole number of attempts` })
    .min(1, { error: `${named}must be at least 1` })
    .max(MAX_ATTEMPTS, { error: `${named}must be at most ${MAX_ATTEMPTS}` });

/** `confidence`: 1 − the false-alarm rate a comparison holds. */
export const confidenceRule = (named = '') =>
  z
    .number({ error: `${named}must be a number between 0.5 and 0.999` })
    .min(0.5, { error: `${named}must be at least 0.5` })
    .max(0.999, { error: `${named}must be at most 0.999` });

/** The seed every model call carries: the suite's, or a judge-check's. */
export const seedSchema = z
  .int({ error: 'must be a whole number' })
  .min(0, { error: 'must not be negative' })
  .max(MAX_SEED, { error: `must be at most ${MAX_SEED}` });

function suiteShape(form: SuiteForm) {
  return z.strictObject({
    agent: form === 'file' ? agentSchema : agentSchema.optional(),
    name: nameSchema.optional(),
    description: z.string({ error: 'must be a string' }).optional(),
    ...connectFields,
    memory: (form === 'file' ? fileMemorySchema : httpMemorySchema).optional(),
    repeat: repeatRule().optional(),
    max_attempts: attemptsRule().optional(),
    min_attempts: attemptsRule().optional(),
    confidence: confidenceRule().optional(),
    pass_rate: z
      .number({ error: 'must be a number between 0 and 1' })
      .min(0, { error: 'must be at least 0' })
      .max(1, { error: 'must be at most 1' })
      .optional(),
    concurrency: concurrencyRule().optional(),
    review: booleanSchema.optional(),
    votes: votesSchema.optional(),
    seed: seedSchema.optional(),
    conversations: listOf(conversationSchema, 'conversations, each with turns or a simulated_user', {
      one: 'conversation',
      many: 'conversations',
      max: MAX_CONVERSATIONS,
    }),
  });
}

type RawSuite = z.output<ReturnType<typeof suiteShape>>;
type RawConversation = RawSuite['conversations'][number];

export const criteriaOf = (raw: Array<string | { id: string; text: string; votes?: number }>, votes: number): Criterion[] =>
  raw.map((c, i) => (typeof c === 'string' ? { id: criterionId(i), text: c, votes } : { ...c, votes: c.votes ?? votes }));

function conversationOf(conv: RawConversation, i: number, base: SuiteConversation['connect'], votes: number): SuiteConversation {
  const pick = <T>(own: T | undefined, inherited: T | undefined): T | undefined => (own !== undefined ? own : inherited);
  const { criteria, memory, ...checks } = conv.expect ?? {};
  const user = conv.simulated_user;
  return {
    name: conv.name ?? defaultName(i),
    connect: {
      locale: pick(conv.locale, base.locale),
      device_ref: pick(conv.device_ref, base.device_ref),
      time_zone: pick(conv.time_zone, base.time_zone),
      time_offset: pick(conv.time_offset, base.time_offset),
    },
    waitMs: conv.wait_ms ?? 0,
    turns: (conv.turns ?? []).map((turn, j) => {
      const { judge, ...expect } = turn.expect ?? {};
      return { line: turn.line, expect, judge: judge === undefined ? undefined : { id: `turn_${j + 1}`, text: judge, votes } };
    }),
    simulatedUser:
      user === undefined
        ? undefined
        : {
            persona: user.persona,
            goal: user.goal,
            facts: user.facts ?? {},
            maxTurns: user.max_turns ?? DEFAULT_MAX_TURNS,
            minTurns: user.min_turns ?? 1,
            model: user.model,
            temperature: user.temperature ?? 0,
          },
    expect: checks,
    criteria: criteriaOf(conv.attack?.criteria ?? criteria ?? [], votes),
    memory: memoryExpectOf(memory, votes),
    ...(conv.attack === undefined ? {} : { attack: attackOf(conv.attack) }),
  };
}

function normalize<M>(raw: RawSuite, memory: (m: NonNullable<RawSuite['memory']>, deviceRef: string) => M): Suite<M> {
  const base = { locale: raw.locale, device_ref: raw.device_ref, time_zone: raw.time_zone, time_offset: raw.time_offset };
  return {
    agent: raw.agent,
    name: raw.name,
    runLabel: raw.run_label ?? undefined,
    memory: raw.memory === undefined ? undefined : memory(raw.memory, raw.device_ref!),
    repeat: raw.repeat ?? raw.max_attempts ?? 1,
    attempts:
      raw.repeat !== undefined
        ? { kind: 'repeat', attempts: raw.repeat }
        : {
            kind: 'sequential',
            max: raw.max_attempts ?? DEFAULT_MAX_ATTEMPTS,
            min: raw.min_attempts ?? Math.min(DEFAULT_MIN_ATTEMPTS, raw.max_attempts ?? DEFAULT_MAX_ATTEMPTS),
          },
    confidence: raw.confidence ?? DEFAULT_CONFIDENCE,
    passRate: raw.pass_rate ?? 1,
    concurrency: raw.concurrency ?? DEFAULT_CONCURRENCY,
    review: raw.review ?? true,
    seed: raw.seed,
    conversations: raw.conversations.map((conv, i) => conversationOf(conv, i, base, raw.votes ?? 1)),
  };
}

const httpSuiteSchema = suiteShape('http')
  .superRefine(crossCheck, ALWAYS)
  .transform((raw) =>
    normalize<HttpMemory>(raw, (m, deviceRef) => ({
      deviceRef,
      restore: (m as z.output<typeof httpMemorySchema>).restore,
      save: (m as z.output<typeof httpMemorySchema>).save === true,
      waitMs: m.wait_ms ?? 0,
    })),
  );

const fileSuiteSchema = suiteShape('file')
  .superRefine(crossCheck, ALWAYS)
  .transform((raw) =>
    normalize<FileMemory>(raw, (m, deviceRef) => ({
      deviceRef,
      restore: (m as z.output<typeof fileMemorySchema>).restore,
      save: (m as z.output<typeof fileMemorySchema>).save,
      waitMs: m.wait_ms ?? 0,
    })),
  );

export type ParseResult<T> = { ok: true; suite: T } | { ok: false; problems: SuiteProblem[] };

export function parseWith<T>(schema: z.ZodType<T>, value: unknown): ParseResult<T> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, problems: [notAnObject] };
  const known = knownFieldsNoter();
  const result = schema.safeParse(value, {
    reportInput: true,
    error: (issue) => {
      known.note(issue);
      return fallbackRule(issue);
    },
  });
  return result.success ? { ok: true, suite: result.data } : { ok: false, problems: problemsOf(result.error, known.at) };
}

/** A suite posted to the runs route. */
export const parseHttpSuite = (value: unknown): ParseResult<Suite<HttpMemory>> => parseWith(httpSuiteSchema, value);

/** A suite read from a YAML file (already turned into plain data). */
export const parseFileSuite = (value: unknown): ParseResult<Suite<FileMemory>> => parseWith(fileSuiteSchema, value);
