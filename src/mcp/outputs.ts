import { z } from 'zod';

/**
 * The run_suite tool's output schema: openapi.yaml's RunReport, since the tool answers with the
 * same report. (The other tools' output schemas are the REST shapes of src/api/responses.ts.)
 */
const nullableString = z.string().nullable();
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
