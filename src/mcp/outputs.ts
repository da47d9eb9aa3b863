import { z } from 'zod';
import { nullable, openObject } from '../api/responses.js';

/**
 * The run_suite tool's output schema: openapi.yaml's RunReport, since the tool answers with the
 * same report. (The other tools' output schemas are the REST shapes of src/api/responses.ts.)
 */
const count = z.object({ total: z.number(), passed: z.number(), failed: z.number(), skipped: z.number() });
const usage = z.object({ calls: z.number(), prompt_tokens: z.number(), completion_tokens: z.number(), duration_ms: z.number() });
const criterion = openObject({
  id: z.string(),
  text: z.string(),
  verdict: z.enum(['passed', 'failed', 'inconclusive']),
  passed: z.boolean(),
  reasoning: nullable(z.string(), "The judge's one sentence; null when it was not judged."),
});
const expectation = openObject({
  kind: z.string(),
  passed: nullable(z.boolean(), 'null: not evaluated, the turn was skipped.'),
  evidence: z.string(),
});

export const runReportOutput = z.object({
  run_id: z.string(),
  run_label: z.string(),
  agent: z.string(),
  revision: z.object({ ref: z.string(), revision: z.number(), state: z.string() }),
  name: nullable(z.string(), 'The suite name; null when it has none.'),
  passed: z.boolean(),
  started_at: z.string(),
  finished_at: z.string(),
  duration_ms: z.number(),
  parallelism: z.number(),
  seed: z.number(),
  repeat: z.number(),
  pass_rate: z.number(),
  totals: z.object({
    conversations: z.object({ total: z.number(), passed: z.number(), flaky: z.number(), failed: z.number(), error: z.number() }),
    attempts: z.object({ total: z.number(), passed: z.number(), failed: z.number(), error: z.number() }),
    turns: count,
    expectations: count,
    criteria: count,
  }),
  model_usage: usage,
  session_ids: z.array(z.string()),
  memory: openObject({
    device_ref: z.string(),
    restored: nullable(z.number(), 'Units the engine loaded before the run; null when nothing was restored.'),
  }).nullable(),
  conversations: z.array(
    openObject({
      name: z.string(),
      index: z.number(),
      status: z.enum(['passed', 'flaky', 'failed', 'error']),
      passed: z.boolean(),
      pass_rate: z.number(),
      model_usage: usage,
      attempts: z.array(
        openObject({
          attempt: z.number(),
          status: z.enum(['passed', 'failed', 'error']),
          session_id: nullable(z.string(), 'The engine session; null when its first turn could not run.'),
          stop_reason: z.string(),
          turns: z.array(
            openObject({
              index: z.number(),
              line: z.string(),
              source: z.enum(['script', 'simulated_user']),
              status: z.enum(['passed', 'failed', 'skipped']),
              text: nullable(z.string(), 'The spoken text of the turn, joined; null when it did not run.'),
              expectations: z.array(expectation),
              criteria: z.array(criterion),
            }),
          ),
          expectations: z.array(expectation),
          criteria: z.array(criterion),
        }),
      ),
    }),
  ),
  notes: z.array(z.string()),
});

const latency = z.object({
  p50_ms: nullable(z.number(), 'null: no turn ran on this side.'),
  p95_ms: nullable(z.number(), 'null: no turn ran on this side.'),
});
const side = openObject({
  status: z.enum(['passed', 'flaky', 'failed', 'error']),
  passed: z.boolean(),
  pass_rate: z.number(),
  attempts_passed: z.number(),
  attempts_total: z.number(),
  latency,
  model_usage: usage,
});
const tally = z.object({
  passed: z.number(),
  evaluated: z.number(),
  evidence: nullable(z.string(), 'null: never evaluated on this side.'),
});
const comparedRevision = z.object({ agent: z.string(), revision: runReportOutput.shape.revision });

/** The compare_revisions tool's output schema: openapi.yaml's ComparisonReport, both runs in full as run_suite answers them. */
export const comparisonReportOutput = z.object({
  comparison_id: z.string(),
  name: nullable(z.string(), 'The suite name; null when it has none.'),
  baseline: comparedRevision,
  candidate: comparedRevision,
  regressed: z.boolean(),
  started_at: z.string(),
  finished_at: z.string(),
  duration_ms: z.number(),
  seed: z.number(),
  prompt_version: z.string(),
  repeat: z.number(),
  pass_rate: z.number(),
  totals: z.object({ conversations: z.number(), regressed: z.number(), fixed: z.number(), unchanged: z.number(), error: z.number() }),
  latency: z.object({ baseline: latency, candidate: latency }),
  model_usage: z.object({ baseline: usage, candidate: usage, total: usage }),
  conversations: z.array(
    openObject({
      name: z.string(),
      index: z.number(),
      verdict: z.enum(['regressed', 'fixed', 'unchanged', 'error']),
      baseline: side,
      candidate: side,
      differences: z.array(
        openObject({
          kind: z.enum(['expectation', 'criterion']),
          turn: nullable(z.number(), 'null: the conversation as a whole.'),
          name: z.string(),
          description: z.string(),
          baseline: tally,
          candidate: tally,
        }),
      ),
      diverged_at_turn: nullable(z.number(), "null: the agent's replies never differed."),
    }),
  ),
  runs: z.object({ baseline: runReportOutput, candidate: runReportOutput }),
  notes: z.array(z.string()),
});
