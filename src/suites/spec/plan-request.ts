import { z } from 'zod';
import { invalidRequest } from '../../errors.js';
import type { PlanRequest } from '../../stats/plan.js';
import { DEFAULT_CONCURRENCY, DEFAULT_CONFIDENCE, DEFAULT_MIN_ATTEMPTS, MAX_CONVERSATIONS } from './format.js';
import { attemptsRule, concurrencyRule, confidenceRule } from './schema.js';

/**
 * A plan before the run as the REST route (`POST /v1/comparisons/plan`), the MCP tool
 * (`plan_comparison`) and the CLI (`plan`) take it: the baseline's pass rates (one for every
 * conversation, one per conversation, or read from an earlier run or comparison report), the
 * drop to catch, and the comparison's options. openapi.yaml's PlanRequest declares the same.
 */

export const DEFAULT_SESSION_SECONDS = 30;
const MAX_SESSION_SECONDS = 3600;

const rateRule = (named: string) =>
  z
    .number({ error: `${named} must be a number from 0 to 1` })
    .min(0, { error: `${named} must be at least 0` })
    .max(1, { error: `${named} must be at most 1` });

export const planBody = z
  .strictObject({
    conversations: z
      .int({ error: 'conversations must be a whole number' })
      .min(1, { error: 'conversations must be at least 1' })
      .max(MAX_CONVERSATIONS, { error: `conversations must be at most ${MAX_CONVERSATIONS}` })
      .optional(),
    baseline_rate: rateRule('baseline_rate').optional(),
    baseline_rates: z
      .array(rateRule('each baseline rate'), { error: 'baseline_rates must be an array of pass rates' })
      .min(1, { error: 'baseline_rates must hold at least 1 rate' })
      .max(MAX_CONVERSATIONS, { error: `baseline_rates must hold at most ${MAX_CONVERSATIONS} rates` })
      .optional(),
    report: z.record(z.string(), z.unknown(), { error: 'report must be a run or comparison report (a JSON object)' }).optional(),
    drop: z
      .number({ error: 'drop must be a number above 0 and at most 1' })
      .gt(0, { error: 'drop must be more than 0' })
      .max(1, { error: 'drop must be at most 1' }),
    confidence: confidenceRule('confidence ').optional(),
    min_attempts: attemptsRule('min_attempts ').optional(),
    concurrency: concurrencyRule('concurrency ').optional(),
    session_seconds: z
      .number({ error: 'session_seconds must be a number of seconds' })
      .gt(0, { error: 'session_seconds must be more than 0' })
      .max(MAX_SESSION_SECONDS, { error: `session_seconds must be at most ${MAX_SESSION_SECONDS}` })
      .optional(),
  })
  .superRefine((body, ctx) => {
    const sources = (['baseline_rate', 'baseline_rates', 'report'] as const).filter((field) => body[field] !== undefined);
    if (sources.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: sources.length === 0 ? ['baseline_rate'] : [sources[1]!],
        message: 'give exactly one of baseline_rate (with conversations), baseline_rates or report',
      });
    }
    if (body.baseline_rate !== undefined && body.conversations === undefined) {
      ctx.addIssue({ code: 'custom', path: ['conversations'], message: 'conversations is required with baseline_rate' });
    }
    if (body.baseline_rate === undefined && body.conversations !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['conversations'], message: 'conversations goes with baseline_rate (the others say how many)' });
    }
  });

export type PlanBody = z.output<typeof planBody>;

/** The pass rate of a conversation as a report says it: a comparison's baseline side, or a run's own. */
const reportConversation = z.object({
  pass_rate: z.number().min(0).max(1).optional(),
  status: z.string().optional(),
  baseline: z.object({ pass_rate: z.number().min(0).max(1), status: z.string() }).optional(),
});
const reportShape = z.object({ conversations: z.array(reportConversation) });

/**
 * Each conversation's baseline pass rate in an earlier report: a comparison report's baseline side
 * (`conversations[].baseline.pass_rate`), or a run report's (`conversations[].pass_rate`), in suite
 * order. A conversation in `error` (no attempt judged) has no rate and is left out. Throws
 * invalid_request naming `field` when the report is neither or has no rate.
 */
function baselineRatesOfReport(report: unknown, field = 'report'): number[] {
  const parsed = reportShape.safeParse(report);
  const wrong = (rule: string) => invalidRequest([{ field, rule: `${field} ${rule}` }], 'nothing was planned');
  if (!parsed.success) throw wrong('must be a run or comparison report: conversations[] with their pass_rate');
  const rates: number[] = [];
  for (const conversation of parsed.data.conversations) {
    const side = conversation.baseline ?? conversation;
    if (side.status === 'error') continue;
    if (side.pass_rate === undefined) throw wrong('must be a run or comparison report: a conversation without pass_rate');
    rates.push(side.pass_rate);
  }
  if (rates.length === 0) throw wrong('has no conversation with a judged attempt: no pass rate to plan from');
  return rates;
}

/** The stats' request from a checked body (the report read), with the defaults said. */
export function planRequestOf(body: PlanBody): PlanRequest {
  const baselineRates =
    body.report !== undefined
      ? baselineRatesOfReport(body.report)
      : (body.baseline_rates ?? Array.from({ length: body.conversations ?? 1 }, () => body.baseline_rate!));
  const highest = Math.max(...baselineRates);
  if (body.drop > highest) {
    const rule = `drop must be at most the highest baseline rate (${highest}): no conversation can drop by more`;
    throw invalidRequest([{ field: 'drop', rule }], 'nothing was planned');
  }
  return {
    baselineRates,
    drop: body.drop,
    confidence: body.confidence ?? DEFAULT_CONFIDENCE,
    minAttempts: body.min_attempts ?? DEFAULT_MIN_ATTEMPTS,
    concurrency: body.concurrency ?? DEFAULT_CONCURRENCY,
    sessionSeconds: body.session_seconds ?? DEFAULT_SESSION_SECONDS,
  };
}
