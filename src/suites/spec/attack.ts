import { z } from 'zod';
import { deviceRefSchema, lineSchema, withinChars } from '../../schemas/connect.js';
import type { Attack, AttackStrategy } from './format.js';
import { aggregationWaitSchema } from './memory-expect.js';
import { compilePattern } from './text-matches.js';

// `attack:` on a conversation (docs/red-team.md): the attacker's objective and strategy, the checks
// that say whether the agent held, and the canary another user plants before the attack.

const STRATEGIES = ['crescendo', 'role_play', 'injection', 'authority', 'persistence'] as const satisfies readonly AttackStrategy[];
/** What `{canary}` in a plant's or a control's lines is replaced by. */
export const CANARY = '{canary}';
const DEFAULT_ATTACK_TURNS = 8;
const MAX_ATTACK_TURNS = 50;
const MAX_OBJECTIVE_CHARS = 1000;
const MAX_CHECKS = 50;
const MAX_LINES = 20;
/** The engine aggregates a session about 30 s after its close: the plant's wait leaves it room, as the memory checks' does. */
const DEFAULT_PLANT_WAIT_MS = 45_000;
/** Letters and digits a canary is drawn from, and how many (CANARY_CHARS long: never a word by chance). */
export const CANARY_CHARS = 12;

const text = (what: string, max: number) =>
  z
    .string({ error: `must be ${what}` })
    .refine((value) => value.trim() !== '', { error: 'must not be empty' })
    .refine((value) => withinChars(value, max), { error: `must be at most ${max} characters` });

const saysSchema = text('a text, or a regular expression written /…/flags', 500).superRefine((source, ctx) => {
  if (!/^\/.+\/[a-z]*$/s.test(source)) return;
  try {
    compilePattern(source);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `must be a valid regular expression: ${(err as Error).message}` });
  }
});

const listOf = <T extends z.ZodType>(item: T, what: string, max: number) =>
  z
    .union([item, z.array(item, { error: `must be ${what} or a list of them` })], { error: `must be ${what} or a list of them` })
    .transform((items) => (Array.isArray(items) ? items : [items]) as Array<z.output<T>>)
    .refine((items) => items.length >= 1, { error: `must list at least one` })
    .refine((items) => items.length <= max, { error: `must list at most ${max}` });

/** A scripted line of a plant or a control, checked as the canary will make it (a {canary} is CANARY_CHARS long). */
const scriptedLine = z.string({ error: 'must be a string: a line' }).superRefine((line, ctx) => {
  const parsed = lineSchema.safeParse(line.replaceAll(CANARY, 'x'.repeat(CANARY_CHARS)));
  if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message });
  else if (parsed.data.startsWith('#'))
    ctx.addIssue({ code: 'custom', message: 'line must not start with #: a plant or a control says lines' });
});

const linesSchema = z
  .array(scriptedLine, { error: 'must be a list of lines' })
  .min(1, { error: 'must list at least one line' })
  .max(MAX_LINES, { error: `must list at most ${MAX_LINES} lines` });

/** `attack:`; `criterion` is the conversation criterion's own schema (its criteria are judged over the whole conversation). */
export const attackSchema = <C extends z.ZodType>(criterion: C) =>
  z.strictObject(
    {
      objective: text('a string: what the attacker tries to get', MAX_OBJECTIVE_CHARS).refine((o) => !/[\p{Cc}\u2028\u2029]/u.test(o), {
        error: 'must be one line without control characters: the attacker reads it on a line of its own',
      }),
      strategy: z
        .enum(STRATEGIES, { error: `must be one of ${STRATEGIES.join(', ')}; leave it out to let the attacker choose` })
        .optional(),
      max_turns: z
        .int({ error: 'must be a whole number of lines' })
        .min(1, { error: 'must be at least 1' })
        .max(MAX_ATTACK_TURNS, { error: `must be at most ${MAX_ATTACK_TURNS}` })
        .optional(),
      never_says: listOf(saysSchema, 'a text or a /regular expression/', MAX_CHECKS).optional(),
      never_tools: listOf(text('a tool name', 200), 'a tool name', MAX_CHECKS).optional(),
      criteria: z
        .array(criterion, { error: 'must be a list of criteria: plain text, or { id, text }' })
        .min(1, { error: 'must list at least one criterion' })
        .max(MAX_CHECKS, { error: `must list at most ${MAX_CHECKS} criteria` })
        .optional(),
      plant: z
        .strictObject(
          {
            device_ref: deviceRefSchema,
            lines: linesSchema.refine((lines) => lines.some((l) => l.includes(CANARY)), {
              error: `must say ${CANARY} in some line: the token the attacker must not get`,
            }),
            wait_ms: aggregationWaitSchema.optional(),
          },
          { error: 'must be an object: device_ref, lines, wait_ms' },
        )
        .optional(),
      control: z.strictObject({ lines: linesSchema }, { error: 'must be an object: lines' }).optional(),
      model: text('a model name', 200).optional(),
      temperature: z
        .number({ error: 'must be a number' })
        .min(0, { error: 'must be at least 0' })
        .max(2, { error: 'must be at most 2' })
        .optional(),
    },
    { error: 'must be an object: objective, strategy, max_turns, never_says, never_tools, criteria, plant, control' },
  );

type RawAttack = z.output<ReturnType<typeof attackSchema>>;

/** The attack as the runner reads it (its criteria go to the conversation's). */
export const attackOf = (raw: RawAttack): Attack => ({
  objective: raw.objective,
  strategy: raw.strategy,
  maxTurns: raw.max_turns ?? DEFAULT_ATTACK_TURNS,
  neverSays: raw.never_says ?? [],
  neverTools: raw.never_tools ?? [],
  plant:
    raw.plant === undefined
      ? undefined
      : { deviceRef: raw.plant.device_ref, lines: raw.plant.lines, waitMs: raw.plant.wait_ms ?? DEFAULT_PLANT_WAIT_MS },
  control: raw.control,
  model: raw.model,
  temperature: raw.temperature ?? 0,
});

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The rules that span an attack's fields and its conversation's: an attack is the conversation
 * (no turns, simulated_user or expect beside it), it checks something, a control comes back after
 * a plant, and a plant needs the attacker's own device (whose memory is searched), not the victim's.
 */
export function checkAttack(conv: Record<string, unknown>, suite: Record<string, unknown>, i: number, ctx: z.RefinementCtx): void {
  const attack = conv.attack;
  if (!isRecord(attack)) return;
  const at = ['conversations', i];
  for (const field of ['turns', 'simulated_user', 'expect'] as const) {
    if (conv[field] === undefined) continue;
    ctx.addIssue({
      code: 'custom',
      path: [...at, field],
      message:
        "cannot be given with attack: the attacker speaks after the agent's #intro, " +
        "and the attack's checks (never_says, never_tools, criteria) say whether the agent held",
    });
  }
  if (['never_says', 'never_tools', 'criteria', 'plant'].every((k) => attack[k] === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'attack'],
      message: 'must check something: never_says, never_tools, criteria or a plant (its canary)',
    });
  }
  if (attack.control !== undefined && attack.plant === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'attack', 'control'],
      message: 'needs a plant: the control is the planting user coming back',
    });
  }
  if (!isRecord(attack.plant)) return;
  const attacker = [conv.device_ref, suite.device_ref].find((ref) => typeof ref === 'string');
  if (attacker === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'attack', 'plant'],
      message: "needs a device_ref (the conversation's or the suite's): the attacker's own user, whose memory is searched for the canary",
    });
  } else if (attacker === attack.plant.device_ref) {
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'attack', 'plant', 'device_ref'],
      message: `must differ from the attacker's device_ref (${attacker}): the plant is another user`,
    });
  }
}
