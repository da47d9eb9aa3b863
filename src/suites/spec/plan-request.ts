import { z } from 'zod';
import { invalidRequest } from '../../errors.js';
import { planComparison, planLine, type ComparisonPlan, type PlanRequest } from '../../stats/plan.js';
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
      .optional()
      .describe('How many conversations the suite has (1-100); only with baseline_rate.'),
    baseline_rate: rateRule('baseline_rate').optional().describe("The pass rate every conversation's baseline is expected to have (0-1)."),
    baseline_rates: z
      .array(rateRule('each baseline rate'), { error: 'baseline_rates must be an array of pass rates' })
      .min(1, { error: 'baseline_rates must hold at least 1 rate' })
      .max(MAX_CONVERSATIONS, { error: `baseline_rates must hold at most ${MAX_CONVERSATIONS} rates` })
      .optional()
      .describe("The pass rate each conversation's baseline is expected to have, one per conversation."),
    report: z
      .record(z.string(), z.unknown(), { error: 'report must be a run or comparison report (a JSON object)' })
      .optional()
      .describe("An earlier run or comparison report: each conversation's pass_rate (a comparison's baseline side) is its rate."),
    drop: z
      .number({ error: 'drop must be a number above 0 and at most 1' })
      .gt(0, { error: 'drop must be more than 0' })
      .max(1, { error: 'drop must be at most 1' })
      .describe('The drop of the pass rate to catch, e.g. 0.2 (from 0.9 to 0.7).'),
    confidence: confidenceRule('confidence ').optional().describe("The comparison's confidence (default 0.95)."),
    min_attempts: attemptsRule('min_attempts ').optional().describe("The comparison's min_attempts (default 5)."),
    concurrency: concurrencyRule('concurrency ').optional().describe('Conversations at once, both sides together (default 10).'),
    session_seconds: z
      .number({ error: 'session_seconds must be a number of seconds' })
      .gt(0, { error: 'session_seconds must be more than 0' })
      .max(MAX_SESSION_SECONDS, { error: `session_seconds must be at most ${MAX_SESSION_SECONDS}` })
      .optional()
      .describe('How long one engine session takes, in seconds (default: the mean session of report, when given; else 30).'),
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
 * order, with the conversation's index. A conversation in `error` (no attempt judged) has no rate
 * and is left out. Throws invalid_request naming `field` when the report is neither or has no rate.
 */
function baselineRatesOfReport(report: unknown, field = 'report'): Array<{ rate: number; index: number }> {
  const parsed = reportShape.safeParse(report);
  const wrong = (rule: string) => invalidRequest([{ field, rule: `${field} ${rule}` }]);
  if (!parsed.success) throw wrong('must be a run or comparison report: conversations[] with their pass_rate');
  const rates: Array<{ rate: number; index: number }> = [];
  for (const [index, conversation] of parsed.data.conversations.entries()) {
    const side = conversation.baseline ?? conversation;
    if (side.status === 'error') continue;
    if (side.pass_rate === undefined) throw wrong('must be a run or comparison report: a conversation without pass_rate');
    rates.push({ rate: side.pass_rate, index });
  }
  if (rates.length === 0) throw wrong('has no conversation with a judged attempt: no pass rate to plan from');
  return rates;
}

/** A run report's attempts, or each side's of a comparison report (`runs`): their session and how long each took. */
const timedRun = z.object({
  conversations: z.array(
    z.object({
      attempts: z.array(z.object({ session_id: z.string().nullable().optional(), duration_ms: z.number().optional() })).optional(),
    }),
  ),
});
const timedComparison = z.object({ runs: z.object({ baseline: timedRun, candidate: timedRun }) });

/**
 * How long each conversation's engine sessions took in a report, in seconds, by the conversation's
 * index (suite order): the attempts that had a session, both sides of a comparison.
 */
function sessionSecondsOfReport(report: unknown): Array<number[]> {
  const comparison = timedComparison.safeParse(report).data;
  const runs = comparison ? [comparison.runs.baseline, comparison.runs.candidate] : [timedRun.safeParse(report).data];
  const each: Array<number[]> = [];
  for (const run of runs) {
    for (const [index, conversation] of (run?.conversations ?? []).entries()) {
      for (const attempt of conversation.attempts ?? []) {
        if (typeof attempt.session_id !== 'string' || !(attempt.duration_ms! > 0)) continue;
        (each[index] ??= []).push(attempt.duration_ms! / 1000);
      }
    }
  }
  return each;
}

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

/**
 * The baseline rates a body gives, and the session length of the plan: the body's; else what the
 * report's sessions took (each conversation its own, their mean where one has none), said as
 * measured; else the default, said as assumed.
 */
function ratesAndLengthsOf(body: PlanBody): Pick<PlanRequest, 'baselineRates' | 'sessionSeconds' | 'sessionTime' | 'sessionSecondsEach'> {
  const given = body.session_seconds !== undefined ? { sessionSeconds: body.session_seconds, sessionTime: 'given' as const } : undefined;
  const assumed = { sessionSeconds: DEFAULT_SESSION_SECONDS, sessionTime: 'assumed' as const };
  if (body.report === undefined) {
    const baselineRates = body.baseline_rates ?? Array.from({ length: body.conversations ?? 1 }, () => body.baseline_rate!);
    return { baselineRates, ...(given ?? assumed) };
  }
  const rates = baselineRatesOfReport(body.report);
  const baselineRates = rates.map(({ rate }) => rate);
  if (given !== undefined) return { baselineRates, ...given };
  const timed = sessionSecondsOfReport(body.report);
  const measured = rates.flatMap(({ index }) => timed[index] ?? []);
  if (measured.length === 0) return { baselineRates, ...assumed };
  const sessionSeconds = mean(measured);
  const sessionSecondsEach = rates.map(({ index }) => (timed[index] === undefined ? sessionSeconds : mean(timed[index])));
  return { baselineRates, sessionSeconds, sessionTime: 'measured', sessionSecondsEach };
}

/** The stats' request from a checked body (the report read), with the defaults said. */
export function planRequestOf(body: PlanBody): PlanRequest {
  const { baselineRates, ...lengths } = ratesAndLengthsOf(body);
  const highest = Math.max(...baselineRates);
  if (body.drop > highest) {
    const rule = `drop must be at most the highest baseline rate (${highest}): no conversation can drop by more`;
    throw invalidRequest([{ field: 'drop', rule }]);
  }
  return {
    baselineRates,
    drop: body.drop,
    confidence: body.confidence ?? DEFAULT_CONFIDENCE,
    minAttempts: body.min_attempts ?? DEFAULT_MIN_ATTEMPTS,
    concurrency: body.concurrency ?? DEFAULT_CONCURRENCY,
    ...lengths,
  };
}

/** openapi.yaml's ComparisonPlan: the plan with what it was computed from and its line. */
export interface PlanAnswer extends ComparisonPlan {
  conversations: number;
  baseline_rates: number[];
  drop: number;
  confidence: number;
  min_attempts: number;
  concurrency: number;
  session_seconds: number;
  line: string;
}

/** The plan of a checked body, as REST and MCP answer it. */
export async function planAnswer(body: PlanBody): Promise<PlanAnswer> {
  const request = planRequestOf(body);
  const plan = await planComparison(request);
  return {
    conversations: request.baselineRates.length,
    baseline_rates: [...request.baselineRates],
    drop: request.drop,
    confidence: request.confidence!,
    min_attempts: request.minAttempts!,
    concurrency: request.concurrency,
    session_seconds: request.sessionSeconds,
    ...plan,
    line: planLine(request, plan),
  };
}
