import { TURN_OUTCOMES } from '../domain/vocabulary.js';
import { z } from 'zod';

/**
 * The tools' output schemas: the REST API's own shapes (openapi.yaml TurnResult, Conversation,
 * MemorySnapshot, MemoryRestore, RunReport), since the tools answer with the same views.
 */
const nullableString = z.string().nullable();
const settings = {
  device_ref: z.string(),
  locale: z.string(),
  time_zone: nullableString,
  run_label: nullableString,
  time_offset: nullableString,
};

export const turnResultOutput = z.object({
  session_id: z.string(),
  agent: z.string(),
  turn: z.object({
    line: z.string(),
    outcome: z.enum(TURN_OUTCOMES),
    elements: z.array(z.looseObject({ type: z.string() })),
    text: z.string(),
    tools: z.array(z.string()),
    shown: z.array(z.string()),
    duration_ms: z.number(),
  }),
  conversation: z.object({
    ...settings,
    turns: z.number(),
    connection: z.enum(['open', 'closed']),
    ended_by_agent: z.boolean(),
    reconnected: z.boolean(),
    planning_lost: z.boolean(),
  }),
  notes: z.array(z.string()),
});

export const conversationOutput = z.object({
  session_id: z.string(),
  agent: z.string(),
  connection: z.enum(['open', 'closed']),
  state: z.enum(['connecting', 'idle', 'busy', 'closed']),
  busy: z.boolean(),
  turns: z.number(),
  ...settings,
  ended_by_agent: z.boolean(),
  created_at: z.string(),
  last_turn_at: nullableString,
  idle_seconds: z.number(),
  close_cause: nullableString,
  closed_at: nullableString,
  notes: z.array(z.string()),
});

export const conversationListOutput = z.object({ conversations: z.array(conversationOutput) });

export const snapshotOutput = z.object({
  device_ref: z.string(),
  user_id: z.string(),
  units: z.array(z.record(z.string(), z.unknown())),
  unit_count: z.number(),
  taken_at: z.string(),
  notes: z.array(z.string()),
});

export const restoreOutput = z.object({
  device_ref: z.string(),
  user_id: z.string(),
  restored: z.number(),
  restored_at: z.string(),
  notes: z.array(z.string()),
});

const count = z.object({ total: z.number(), passed: z.number(), failed: z.number(), skipped: z.number() });

export const runReportOutput = z.object({
  run_id: z.string(),
  run_label: z.string(),
  agent: z.string(),
  name: nullableString,
  passed: z.boolean(),
  started_at: z.string(),
  finished_at: z.string(),
  duration_ms: z.number(),
  parallelism: z.number(),
  totals: z.object({ conversations: count, turns: count, expectations: count }),
  session_ids: z.array(z.string()),
  memory: z.looseObject({ device_ref: z.string(), restored: z.number().nullable() }).nullable(),
  conversations: z.array(
    z.looseObject({
      name: z.string(),
      session_id: nullableString,
      passed: z.boolean(),
      turns: z.array(
        z.looseObject({
          index: z.number(),
          line: z.string(),
          status: z.enum(['passed', 'failed', 'skipped']),
          text: nullableString,
          expectations: z.array(z.looseObject({ kind: z.string(), passed: z.boolean().nullable(), evidence: z.string() })),
        }),
      ),
    }),
  ),
  notes: z.array(z.string()),
});
