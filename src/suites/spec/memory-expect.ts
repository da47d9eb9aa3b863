import { z } from 'zod';
import { withinChars } from '../../schemas/connect.js';
import { MAX_WAIT_MS, type Criterion, type MemoryExpect } from './format.js';

/** What a memory criterion written as plain text is called (apart from the conversation's `criterion_N`). */
export const memoryCriterionId = (index: number): string => `memory_criterion_${index + 1}`;

// `expect.memory` of a conversation: checks over the memory units it added (the simulated user's
// units after it, less those before it), how long to wait for the engine to aggregate them, and
// the rules that span its fields.

/** The engine aggregates a session about 30 s after its close: the default wait leaves it room. */
const DEFAULT_MEMORY_WAIT_MS = 45_000;
const MAX_MEMORY_TEXT_CHARS = 500;
const MAX_MEMORY_TEXTS = 50;
const MAX_MEMORY_CRITERIA = 20;
const MAX_ADDED = 10_000;

const memoryText = z
  .string({ error: 'must be a string: text to look for in the JSON of an added memory unit' })
  .refine((text) => text.trim() !== '', { error: 'must not be empty: an empty text is in every unit' })
  .refine((text) => withinChars(text, MAX_MEMORY_TEXT_CHARS), { error: `must be at most ${MAX_MEMORY_TEXT_CHARS} characters` });

const memoryTexts = z
  .union([memoryText, z.array(memoryText, { error: 'must be a text or a list of texts' })], { error: 'must be a text or a list of texts' })
  .transform((texts) => (typeof texts === 'string' ? [texts] : texts))
  .refine((texts) => texts.length >= 1, { error: 'must list at least one text' })
  .refine((texts) => texts.length <= MAX_MEMORY_TEXTS, { error: `must list at most ${MAX_MEMORY_TEXTS} texts` });

const unitCount = z
  .int({ error: 'must be a whole number of memory units' })
  .min(0, { error: 'must not be negative' })
  .max(MAX_ADDED, { error: `must be at most ${MAX_ADDED}` });

/** How long to wait for the engine to aggregate a session (memory checks, an attack's plant). */
export const aggregationWaitSchema = z
  .int({ error: 'must be a whole number of milliseconds' })
  .min(1, { error: 'must be at least 1' })
  .max(MAX_WAIT_MS, { error: `must be at most ${MAX_WAIT_MS} (ten minutes)` });

/** `expect.memory`; `criterion` is the conversation criterion's own schema (plain text, or { id, text }). */
export const memoryExpectSchema = (criterion: z.ZodType<string | (Omit<Criterion, 'votes'> & { votes?: number })>) =>
  z
    .strictObject(
      {
        contains: memoryTexts.optional(),
        not_contains: memoryTexts.optional(),
        added_at_least: unitCount.optional(),
        added_at_most: unitCount.optional(),
        criteria: z
          .array(criterion, { error: 'must be a list of criteria: plain text, or { id, text }' })
          .min(1, { error: 'must list at least one criterion' })
          .max(MAX_MEMORY_CRITERIA, { error: `must list at most ${MAX_MEMORY_CRITERIA} criteria` })
          .optional(),
        wait_ms: aggregationWaitSchema.optional(),
      },
      { error: 'must be an object: contains, not_contains, added_at_least, added_at_most, criteria, wait_ms' },
    )
    .superRefine((memory, ctx) => {
      const { added_at_least: least, added_at_most: most } = memory;
      if (least !== undefined && most !== undefined && least > most) {
        ctx.addIssue({ code: 'custom', path: ['added_at_least'], message: `must be at most added_at_most (${most})` });
      }
      const checks = ['contains', 'not_contains', 'added_at_least', 'added_at_most', 'criteria'] as const;
      if (checks.every((k) => memory[k] === undefined)) {
        ctx.addIssue({
          code: 'custom',
          message: 'must check something: contains, not_contains, added_at_least, added_at_most or criteria',
        });
      }
    });

type RawMemoryExpect = z.output<ReturnType<typeof memoryExpectSchema>>;

/** The checks as the runner reads them; a criterion given as plain text is `memory_criterion_N`, ruled on by the suite's `votes`. */
export const memoryExpectOf = (raw: RawMemoryExpect | undefined, votes: number): MemoryExpect | undefined =>
  raw === undefined
    ? undefined
    : {
        contains: raw.contains ?? [],
        notContains: raw.not_contains ?? [],
        addedAtLeast: raw.added_at_least,
        addedAtMost: raw.added_at_most,
        criteria: (raw.criteria ?? []).map((c, i) =>
          typeof c === 'string' ? { id: memoryCriterionId(i), text: c, votes } : { ...c, votes: c.votes ?? votes },
        ),
        waitMs: raw.wait_ms ?? DEFAULT_MEMORY_WAIT_MS,
      };

/**
 * A conversation with memory checks needs a simulated user that has memory: a device_ref, its
 * own or the suite's (a fresh user is a new engine user every attempt, with nothing to compare).
 */
export function checkMemoryDevice(conv: Record<string, unknown>, suite: Record<string, unknown>, i: number, ctx: z.RefinementCtx): void {
  const expect = conv.expect;
  if (typeof expect !== 'object' || expect === null || (expect as Record<string, unknown>).memory === undefined) return;
  if (conv.device_ref !== undefined || suite.device_ref !== undefined) return;
  ctx.addIssue({
    code: 'custom',
    path: ['conversations', i, 'expect', 'memory'],
    message: "needs a device_ref (the conversation's or the suite's): the simulated user whose memory is checked",
  });
}
