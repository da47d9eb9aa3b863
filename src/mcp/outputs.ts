import { z } from 'zod';
import { nullable, openObject } from '../api/responses.js';

/**
 * The run_suite tool's output schema: openapi.yaml's RunReport, since the tool answers with the
 * same report. (The other tools' output schemas are the REST shapes of src/api/responses.ts.)
 */
const count = z.object({ total: z.number(), passed: z.number(), failed: z.number(), skipped: z.number() });

export const runReportOutput = z.object({
  run_id: z.string(),
  run_label: z.string(),
  agent: z.string(),
  name: nullable(z.string(), 'The suite name; null when it has none.'),
  passed: z.boolean(),
  started_at: z.string(),
  finished_at: z.string(),
  duration_ms: z.number(),
  parallelism: z.number(),
  totals: z.object({ conversations: count, turns: count, expectations: count }),
  session_ids: z.array(z.string()),
  memory: openObject({
    device_ref: z.string(),
    restored: nullable(z.number(), 'Units the engine loaded before the run; null when nothing was restored.'),
  }).nullable(),
  conversations: z.array(
    openObject({
      name: z.string(),
      session_id: nullable(z.string(), 'The engine session; null when its first turn could not run.'),
      passed: z.boolean(),
      turns: z.array(
        openObject({
          index: z.number(),
          line: z.string(),
          status: z.enum(['passed', 'failed', 'skipped']),
          text: nullable(z.string(), 'The spoken text of the turn, joined; null when it did not run.'),
          expectations: z.array(
            openObject({
              kind: z.string(),
              passed: nullable(z.boolean(), 'null: not evaluated, the turn was skipped.'),
              evidence: z.string(),
            }),
          ),
        }),
      ),
    }),
  ),
  notes: z.array(z.string()),
});
