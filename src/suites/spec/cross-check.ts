import type { z } from 'zod';
import { INTRO } from '../../schemas/connect.js';
import { DEFAULT_MAX_ATTEMPTS } from './format.js';
import { checkMemoryDevice, memoryCriterionId } from './memory-expect.js';
import { checkAttack } from './attack.js';

/** The default of simulated_user.max_turns. */
export const DEFAULT_MAX_TURNS = 10;

/** What an unnamed conversation is called: in reports, and for the uniqueness of names. */
export const defaultName = (index: number): string => `conversation ${index + 1}`;

/** What a criterion written as plain text is called. */
export const criterionId = (index: number): string => `criterion_${index + 1}`;

const RESTORE_RULE =
  "must be true to restore: the engine's restore is delete-then-write, it clears the simulated user's memory before loading the snapshot";

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * The suite rules that span fields (schema.ts has the rules of single fields): unique
 * conversation names and criterion ids, #intro only first, ended_by_agent only last, turns or a
 * simulated user, min_turns within max_turns, and what memory needs.
 * They run even when fields failed their own rules (`when` below),
 * so a suite's every problem is reported at once; hence the raw value is read defensively.
 */
export function crossCheck(suite: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(suite)) return;
  checkAttempts(suite, ctx);
  const names = new Map<string, number>();
  listOf(suite.conversations).forEach((conv, i) => {
    if (!isRecord(conv)) return;
    const name = typeof conv.name === 'string' ? conv.name.trim() : defaultName(i);
    const first = names.get(name);
    if (first !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['conversations', i, 'name'],
        message: `must be unique within the suite: conversations[${first}] is also called "${name}"`,
      });
    } else names.set(name, i);
    const turns = listOf(conv.turns);
    const simulated = conv.simulated_user !== undefined;
    if (conv.turns === undefined && !simulated && conv.attack === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['conversations', i, 'turns'],
        message: 'is required: list the turns, or add a simulated_user or an attack',
      });
    }
    checkAttack(conv, suite, i, ctx);
    checkSimulatedUser(conv.simulated_user, i, ctx);
    const expect = isRecord(conv.expect) ? conv.expect : {};
    if (isRecord(conv.attack)) checkCriteria(conv.attack.criteria, ['conversations', i, 'attack', 'criteria'], criterionId, ctx);
    checkCriteria(expect.criteria, ['conversations', i, 'expect', 'criteria'], criterionId, ctx);
    const memoryExpect = isRecord(expect.memory) ? expect.memory : {};
    checkCriteria(memoryExpect.criteria, ['conversations', i, 'expect', 'memory', 'criteria'], memoryCriterionId, ctx);
    checkMemoryDevice(conv, suite, i, ctx);
    turns.forEach((turn, j) => {
      if (!isRecord(turn)) return;
      if (j > 0 && typeof turn.line === 'string' && turn.line.trim() === INTRO) {
        ctx.addIssue({
          code: 'custom',
          path: ['conversations', i, 'turns', j, 'line'],
          message: `may be ${INTRO} only in the first turn of a conversation: it is the agent's opening`,
        });
      }
      if ((j < turns.length - 1 || simulated) && isRecord(turn.expect) && turn.expect.ended_by_agent === true) {
        ctx.addIssue({
          code: 'custom',
          path: ['conversations', i, 'turns', j, 'expect', 'ended_by_agent'],
          message: simulated
            ? 'can be true only without a simulated_user: the simulated user speaks after the scripted turns'
            : 'can be true only in the last turn of a conversation: the turns after it could not run',
        });
      }
    });
  });
  const memory = suite.memory;
  if (!isRecord(memory)) return;
  if (suite.device_ref === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['memory'],
      message: 'needs device_ref at the top of the suite: the simulated user whose memory is restored or saved',
    });
  }
  if (memory.restore === undefined && (memory.save === undefined || memory.save === false)) {
    ctx.addIssue({ code: 'custom', path: ['memory'], message: 'must set restore, save or both' });
  }
  // A confirm that is not a boolean already has its own problem.
  if (memory.restore !== undefined && (memory.confirm === undefined || memory.confirm === false)) {
    ctx.addIssue({ code: 'custom', path: ['memory', 'confirm'], message: RESTORE_RULE });
  }
}

/** `repeat` (exactly N attempts) or `max_attempts` (sequential), not both; `min_attempts` within `max_attempts`. */
function checkAttempts(suite: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const { repeat, max_attempts: max, min_attempts: min } = suite;
  if (repeat !== undefined && max !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['max_attempts'],
      message: 'cannot be given with repeat: repeat runs exactly N attempts, max_attempts stops each conversation once decided',
    });
  }
  if (repeat !== undefined && min !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['min_attempts'], message: 'goes with max_attempts, not with repeat (exactly N attempts)' });
  }
  const limit = typeof max === 'number' ? max : DEFAULT_MAX_ATTEMPTS;
  if (typeof min === 'number' && min > limit) {
    ctx.addIssue({ code: 'custom', path: ['min_attempts'], message: `must be at most max_attempts (${limit})` });
  }
}

function checkSimulatedUser(user: unknown, i: number, ctx: z.RefinementCtx): void {
  if (!isRecord(user) || typeof user.min_turns !== 'number') return;
  const max = typeof user.max_turns === 'number' ? user.max_turns : DEFAULT_MAX_TURNS;
  if (user.min_turns > max) {
    ctx.addIssue({
      code: 'custom',
      path: ['conversations', i, 'simulated_user', 'min_turns'],
      message: `must be at most max_turns (${max})`,
    });
  }
}

/** Criterion ids unique within their list (`at`); `idOf` names a criterion given as plain text. */
function checkCriteria(criteria: unknown, at: Array<string | number>, idOf: (k: number) => string, ctx: z.RefinementCtx): void {
  const ids = new Map<string, number>();
  listOf(criteria).forEach((c, k) => {
    const id = typeof c === 'string' ? idOf(k) : isRecord(c) && typeof c.id === 'string' ? c.id : undefined;
    if (id === undefined) return;
    const first = ids.get(id);
    if (first !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [...at, k, ...(typeof c === 'string' ? [] : ['id'])],
        message: `must be unique within the conversation: criteria[${first}] is also ${id}`,
      });
    } else ids.set(id, k);
  });
}

/** Run the cross-field rules whatever else failed: every problem of a suite in one answer. */
export const ALWAYS = { when: () => true };
