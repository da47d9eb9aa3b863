import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { agentSchema } from '../schemas/requests.js';
import type { Side } from '../suites/report/comparison.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError, invalidRequest, type ErrorCode } from '../errors.js';
import { runLines } from '../runs/follow.js';
import type { RunKind } from '../runs/run.js';
import { runView } from '../runs/views.js';
import type { ComparisonReport } from '../suites/report/comparison.js';
import type { AttemptMemoryReport, RunReport, TurnEvent } from '../suites/report/run-report.js';
import { memoryHeadline } from '../suites/report/memory-wording.js';
import { pendingResult } from './run-tools.js';
import { monitorRule, withOverrides } from '../suites/spec/request.js';
import { admitComparison, admitRun, type Admitted } from '../suites/run/start.js';
import { attemptsRule, concurrencyRule, repeatRule } from '../suites/spec/schema.js';
import { answerLine, criterionLine, passRateText, renderComparison } from '../suites/report/text.js';
import { runAnswer } from '../suites/report/wording.js';
import { confirmRestore } from './memory-tools.js';
import { comparisonReportOutput, runReportOutput } from './outputs.js';
import { callerOf, guarded, success } from './results.js';
import { registerTool, type Extra } from './tools.js';

/** run_suite: the runs route as a tool; the suite comes as YAML text or as JSON. */
const RUN_SUITE =
  `Run a test suite against an agent and answer its report: every conversation (in parallel up to the suite's ` +
  `concurrency, default 10), each attempt's transcript, every expectation with its evidence, every criterion with the judge's ` +
  `reasoning, pass rates, totals, model usage, the seed, the revision that ran and the session ids. The suite is the runs ` +
  `route's body: YAML text or a JSON object with agent, conversations[] (turns[].line and .expect: text_matches, ` +
  `text_contains, tool, not_tool, shown, not_shown, ended_by_agent, exit_within_ms, judge; simulated_user: persona, goal, ` +
  `facts, max_turns, min_turns, model, temperature; expect: tools, not_tools, shown, not_shown, ended_by_agent, ` +
  `criteria, memory: contains, not_contains, added_at_least, added_at_most, criteria, wait_ms — checks over the memory units ` +
  `the conversation added, after waiting for the engine's aggregation, about 30 s a conversation), optional repeat, ` +
  `pass_rate, concurrency, seed, memory { restore, save, wait_ms }. A simulated user or ` +
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

/** YAML text to plain data; a JSON object passes through. */
function suiteData(suite: string | Record<string, unknown>): unknown {
  if (typeof suite !== 'string') return suite;
  try {
    return parseYaml(suite, { maxAliasCount: 100 });
  } catch (err) {
    const rule = `suite must be valid YAML or JSON: ${(err as Error).message.split('\n')[0]}`;
    throw invalidRequest([{ field: 'suite', rule }]);
  }
}

const memoryConfirm = (data: unknown): boolean | undefined => {
  const memory = (data as { memory?: { confirm?: unknown } } | null)?.memory;
  return typeof memory === 'object' && memory !== null ? memory.confirm === true : undefined;
};

/**
 * Starts the run (detached: the call's end does not cancel it, the client's cancellation does) and
 * follows it: with a progress token each evaluated turn is reported as progress (its side too, in a
 * comparison). Answers the report, or past MCP_RUN_WAIT_MS the run's id and progress as a pending
 * answer that points to get_run.
 */
async function runToEnd(
  app: FastifyInstance,
  kind: RunKind,
  admitted: Admitted,
  extra: Extra,
): Promise<{ report: Record<string, unknown> } | { pending: CallToolResult }> {
  const run = app.runs.start(kind, admitted, { detached: true });
  const onCancel = () => void app.runs.cancel(run, 'the MCP client cancelled the call');
  extra.signal.addEventListener('abort', onCancel, { once: true });
  const wait = new AbortController();
  const timer = setTimeout(() => wait.abort(), app.config.mcpRunWaitMs);
  const progress = progressOf(extra);
  try {
    for await (const line of runLines(app.runs, run.id, 0, AbortSignal.any([wait.signal, extra.signal]))) {
      const parsed = JSON.parse(line) as {
        turn?: TurnEvent & { side?: Side };
        report?: Record<string, unknown>;
        error?: ErrorCode;
        message?: string;
      };
      if (parsed.turn !== undefined) progress?.(parsed.turn);
      if (parsed.report !== undefined) return { report: parsed.report };
      if (parsed.error !== undefined) throw new GatewayError(parsed.error, parsed.message ?? 'The run failed.');
    }
  } finally {
    clearTimeout(timer);
    extra.signal.removeEventListener('abort', onCancel);
  }
  const view = runView(run, app.runs.podName);
  return { pending: pendingResult(view, app.config.mcpRunWaitMs) };
}

/** With a progress token, each evaluated turn is reported as progress (its side too, in a comparison). */
function progressOf(extra: Extra): ((event: TurnEvent & { side?: Side }) => void) | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  let evaluated = 0;
  return (event) => {
    evaluated += 1;
    const attempt = event.attempt > 1 ? ` (attempt ${event.attempt})` : '';
    const side = event.side === undefined ? '' : `${event.side}: `;
    const message = `${side}${event.conversation}${attempt} turn ${event.turn.index}: ${event.turn.status}`;
    void extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: evaluated, message } })
      .catch(() => undefined);
  };
}

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

export function registerSuiteTools(server: McpServer, app: FastifyInstance): void {
  registerTool(
    server,
    app.log,
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
    (args, extra) =>
      guarded(app.log, async () => {
        const data = suiteData(args.suite);
        const body = withOverrides(data, { concurrency: args.concurrency });
        const authenticate = async () => callerOf(extra);
        const admitted = await admitRun(app, { body, agent: args.agent, monitor: args.monitor, authenticate });
        const { memory } = admitted.suite;
        if (memory?.restore !== undefined) {
          await confirmRestore(server, extra, memoryConfirm(data), `the memory of ${memory.deviceRef} before the run`);
        }
        const ended = await runToEnd(app, 'run', admitted, extra);
        if ('pending' in ended) return ended.pending;
        const report = ended.report as unknown as RunReport;
        return success(report, renderReport(report));
      }),
  );

  registerTool(
    server,
    app.log,
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
    (args, extra) =>
      guarded(app.log, async () => {
        const data = suiteData(args.suite);
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
        const ended = await runToEnd(app, 'comparison', admitted, extra);
        if ('pending' in ended) return ended.pending;
        const comparison = ended.report as unknown as ComparisonReport;
        return success(comparison, renderComparison(comparison, comparison.name ?? 'comparison'));
      }),
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
