import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { agentSchema } from '../schemas/requests.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { invalidRequest } from '../errors.js';
import type { RunKind } from '../runs/run.js';
import type { ComparisonReport } from '../suites/report/comparison.js';
import type { AttemptMemoryReport, RunReport } from '../suites/report/run-report.js';
import { memoryHeadline } from '../suites/report/memory-wording.js';
import { monitorRule, withOverrides } from '../suites/spec/request.js';
import { admitComparison, admitRun } from '../suites/run/start.js';
import { attemptsRule, concurrencyRule, repeatRule } from '../suites/spec/schema.js';
import { answerLine, criterionLine, passRateText, renderComparison } from '../suites/report/text.js';
import { runAnswer } from '../suites/report/wording.js';
import { confirmRestore } from './memory-tools.js';
import { comparisonReportOutput, runReportOutput } from './outputs.js';
import { callerOf, success } from './results.js';
import { registerRunTool, type RunTaskStore } from './run-tasks.js';

/** run_suite: the runs route as a tool; the suite comes as YAML text or as JSON. */
const RUN_SUITE =
  `Run a test suite against an agent and answer its report: every conversation (in parallel up to the suite's ` +
  `concurrency, default 10), each attempt's transcript, every expectation with its evidence, every criterion with the judge's ` +
  `reasoning, pass rates, totals, model usage, the seed, the revision that ran and the session ids. The suite is the runs ` +
  `route's body: YAML text or a JSON object with agent, conversations[] (turns[].line and .expect: text_matches, ` +
  `text_contains, tool, not_tool, shown, not_shown, ended_by_agent, exit_within_ms, judge; simulated_user: persona, goal, ` +
  `facts, max_turns, min_turns, model, temperature; expect: tools, not_tools, shown, not_shown, ended_by_agent, ` +
  `criteria, memory: contains, not_contains, added_at_least, added_at_most, criteria, wait_ms — checks over the memory units ` +
  `the conversation added, after waiting for the engine's aggregation, about 30 s a conversation; or attack: objective, ` +
  `strategy, max_turns, never_says, never_tools, criteria, plant { device_ref, lines with {canary} }, control { lines } — ` +
  `an adversarial user; the report says held or broke, the turn and the evidence), optional repeat, ` +
  `pass_rate, concurrency, seed, memory { restore, save, wait_ms }. A simulated user, an attack or ` +
  `criteria need a model on the gateway (else model_not_configured). Every conversation is closed plainly when done. ` +
  `With a progress token, each evaluated turn is reported as progress.`;

/**
 * The tool's own arguments over the suite's fields (`repeat`, `concurrency`); a suite that is not
 * an object is left to fail its checks.
 */
const concurrencyArg = () =>
  concurrencyRule('concurrency ')
    .optional()
    .describe(
      "The run's conversations at once (1-50; in a comparison both sides together), over the suite's own concurrency (default 10).",
    );

/** An argument's YAML text as plain data (a JSON object passes through); `field` names it in the problem. */
export function yamlData(value: string | Record<string, unknown>, field = 'suite'): unknown {
  if (typeof value !== 'string') return value;
  try {
    return parseYaml(value, { maxAliasCount: 100 });
  } catch (err) {
    const rule = `${field} must be valid YAML or JSON: ${(err as Error).message.split('\n')[0]}`;
    throw invalidRequest([{ field, rule }]);
  }
}

const memoryConfirm = (data: unknown): boolean | undefined => {
  const memory = (data as { memory?: { confirm?: unknown } } | null)?.memory;
  return typeof memory === 'object' && memory !== null ? memory.confirm === true : undefined;
};

const COMPARE_REVISIONS =
  'Answer "may the candidate revision replace the baseline?" (e.g. is coach.3 safe to publish over coach, the Published ' +
  'revision), first in words ("do not promote coach.3: order status regressed"): run a test suite against both ' +
  'revisions fairly (the same scripted lines, simulated users, seed and memory ' +
  'fixture; attempts interleaved) and answer, per conversation, the verdict of a statistical test (regressed: the ' +
  "candidate passes less often with the suite's confidence, default 0.95, the false-alarm rate held over all conversations; " +
  'fixed; unchanged, with the drop the attempts could have caught) in one sentence, the difference of pass rates with its ' +
  "interval and p-value, each side's pass rate with its 95 % interval and pass^k, the rounds and sessions spent against " +
  "the budget, the expectations and criteria whose outcome differs with each side's evidence, " +
  'the first turn where the replies diverged, latency and model usage per side, and both runs in full. ' +
  "The suite is as run_suite takes it (its own agent is ignored). Needs Viewer on both agents' projects; every " +
  'conversation on both sides is a real engine session.';

/** How run_suite and compare_revisions answer a run's report: structured, with its text. */
export function reportAnswer(kind: RunKind, report: Record<string, unknown>): CallToolResult {
  if (kind === 'run') return success(report, renderReport(report as unknown as RunReport));
  const comparison = report as unknown as ComparisonReport;
  return success(comparison, renderComparison(comparison, comparison.name ?? 'comparison'));
}

export function registerSuiteTools(server: McpServer, app: FastifyInstance, tasks: RunTaskStore): void {
  registerRunTool(
    server,
    app,
    tasks,
    'run_suite',
    {
      title: 'Run a test suite',
      description: RUN_SUITE,
      inputSchema: z.strictObject({
        suite: z
          .union([z.string(), z.record(z.string(), z.unknown())], { error: 'suite must be YAML text or a JSON object' })
          .describe('The suite: YAML text, or a JSON object.'),
        agent: agentSchema.optional().describe("The agent to run it against; default: the suite's own agent."),
        concurrency: concurrencyArg(),
        monitor: monitorRule('monitor ')
          .optional()
          .describe("The monitor this run feeds: its attempts are added to the monitors' pass-rate series when it finishes."),
      }),
      outputSchema: runReportOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (args, extra) => {
      const data = yamlData(args.suite);
      const body = withOverrides(data, { concurrency: args.concurrency });
      const authenticate = async () => callerOf(extra);
      const admitted = await admitRun(app, { body, agent: args.agent, monitor: args.monitor, authenticate });
      const { memory } = admitted.suite;
      if (memory?.restore !== undefined) {
        await confirmRestore(server, extra, memoryConfirm(data), `the memory of ${memory.deviceRef} before the run`);
      }
      return app.runs.start('run', admitted, { detached: true });
    },
  );

  registerRunTool(
    server,
    app,
    tasks,
    'compare_revisions',
    {
      title: 'Compare two revisions of an agent',
      description: COMPARE_REVISIONS,
      inputSchema: z.strictObject({
        suite: z
          .union([z.string(), z.record(z.string(), z.unknown())], { error: 'suite must be YAML text or a JSON object' })
          .describe('The suite: YAML text, or a JSON object.'),
        baseline: agentSchema.describe('The revision to compare with, e.g. coach (its Published revision).'),
        candidate: agentSchema.describe('The revision under test, e.g. coach.3.'),
        repeat: repeatRule('repeat ')
          .optional()
          .describe("Exactly this many attempts of each conversation on each side (1-20), over the suite's own; not with max_attempts."),
        max_attempts: attemptsRule('max_attempts ')
          .optional()
          .describe(
            'A sequential budget per side and conversation (1-200): rounds stop once each verdict is decided; over the ' +
              "suite's own; not with repeat. Default (neither here nor in the suite): sequential, 5 to 20.",
          ),
        concurrency: concurrencyArg(),
      }),
      outputSchema: comparisonReportOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (args, extra) => {
      const data = yamlData(args.suite);
      if (args.repeat !== undefined && args.max_attempts !== undefined) {
        throw invalidRequest([
          { field: 'max_attempts', rule: 'max_attempts cannot be given with repeat: exactly N attempts, or sequential' },
        ]);
      }
      const body = withOverrides(data, args);
      const { candidate, baseline } = args;
      const authenticate = async () => callerOf(extra);
      const admitted = await admitComparison(app, { body, candidate, baseline, authenticate });
      const { memory } = admitted.suite;
      if (memory?.restore !== undefined) {
        await confirmRestore(server, extra, memoryConfirm(data), `the memory of ${memory.deviceRef} before each attempt`);
      }
      return app.runs.start('comparison', admitted, { detached: true });
    },
  );
}

/** A memory check that failed, with its evidence, after the diff's headline (the units are whole in the structured report). */
function memoryFailures(where: string, memory: AttemptMemoryReport): string[] {
  const failed = [
    ...memory.expectations.filter((e) => e.passed === false).map((e) => `- ${where}: ${e.kind} failed: ${e.evidence}`),
    ...memory.criteria.filter((c) => !c.passed && memory.status !== 'not_checked').map((c) => `- ${where}: ${criterionLine(c)}`),
  ];
  return failed.length === 0 ? [] : [`- ${where}: ${memoryHeadline(memory)}`, ...failed];
}

function renderReport(report: RunReport): string {
  const { conversations, turns, expectations, criteria } = report.totals;
  const failed = report.conversations.flatMap((conv) =>
    conv.attempts.flatMap((attempt) => {
      const where = report.repeat > 1 ? `${conv.name}, attempt ${attempt.attempt}` : conv.name;
      return [
        ...attempt.turns.flatMap((turn) => [
          ...turn.expectations
            .filter((e) => e.passed === false)
            .map((e) => `- ${where}, turn ${turn.index} (${JSON.stringify(turn.line)}): ${e.kind} failed: ${e.evidence}`),
          ...turn.criteria.filter((c) => !c.passed).map((c) => `- ${where}, turn ${turn.index}: ${criterionLine(c)}`),
        ]),
        ...attempt.expectations.filter((e) => e.passed === false).map((e) => `- ${where}: ${e.kind} failed: ${e.evidence}`),
        ...attempt.criteria.filter((c) => !c.passed).map((c) => `- ${where}: ${criterionLine(c)}`),
        ...(attempt.memory === null ? [] : memoryFailures(where, attempt.memory)),
        ...(attempt.error === null ? [] : [`- ${where}: could not go on: ${attempt.error.message}`]),
      ];
    }),
  );
  return [
    answerLine(runAnswer(report)),
    `${report.name ?? report.run_label} against ${report.agent} (revision ` +
      `${report.revision.revision}, ${report.revision.state}), seed ${report.seed}`,
    `conversations ${conversations.passed}/${conversations.total} passed (${conversations.flaky} flaky, ${conversations.error} ` +
      `could not run); turns ${turns.passed}/${turns.total}; expectations ${expectations.passed}/${expectations.total} ` +
      `(${expectations.failed} failed, ${expectations.skipped} skipped); criteria ${criteria.passed}/${criteria.total}`,
    // With several attempts, what they say about each conversation's pass rate: met, missed, or cannot be told yet.
    ...(report.repeat > 1 ? report.conversations.map((conv) => `${conv.name}: ${passRateText(conv)}`) : []),
    ...failed,
    `session ids: ${report.session_ids.join(', ') || 'none'}`,
  ].join('\n');
}
