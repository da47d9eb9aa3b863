import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { invalidRequest, shuttingDown } from '../errors.js';
import { agentSchema } from '../schemas/requests.js';
import type { RunReport, TurnEvent } from '../suites/report.js';
import { countRun, suiteToRun } from '../suites/request.js';
import { runContext } from '../suites/context.js';
import { runSuite } from '../suites/runner.js';
import { criterionLine } from '../suites/transcript.js';
import { confirmRestore } from './memory-tools.js';
import { runReportOutput } from './outputs.js';
import { callerOf, guarded, success } from './results.js';
import { registerTool } from './tools.js';

/** run_suite: the runs route as a tool; the suite comes as YAML text or as JSON. */
const RUN_SUITE =
  `Run a test suite against an agent and answer its report: every conversation (in parallel up to your ` +
  `conversation limit), each attempt's transcript, every expectation with its evidence, every criterion with the judge's ` +
  `reasoning, pass rates, totals, model usage, the seed, the revision that ran and the session ids. The suite is the runs ` +
  `route's body: YAML text or a JSON object with agent, conversations[] (turns[].line and .expect: text_matches, ` +
  `text_contains, tool, not_tool, shown, not_shown, ended_by_agent, exit_within_ms, judge; simulated_user: persona, goal, ` +
  `facts, max_turns, min_turns, model, temperature; expect: tools, not_tools, shown, not_shown, ended_by_agent, ` +
  `criteria), optional repeat, pass_rate, seed, memory { restore, save, wait_ms }. A simulated user or criteria need a model on ` +
  `the gateway (else model_not_configured). Every conversation is closed plainly when done. With a progress token, each ` +
  `evaluated turn is reported as progress.`;

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
      }),
      outputSchema: runReportOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (args, extra) =>
      guarded(app.log, async () => {
        const data = suiteData(args.suite);
        const { suite, agent } = suiteToRun(data, args.agent, app.model !== undefined);
        if (app.conversations.stats.draining) {
          throw shuttingDown('retry the run on another pod');
        }
        const caller = callerOf(extra);
        const access = await app.authorizer.authorize(caller, agent);
        if (suite.memory?.restore !== undefined) {
          await confirmRestore(server, extra, memoryConfirm(data), `the memory of ${suite.memory.deviceRef} before the run`);
        }
        const token = extra._meta?.progressToken;
        let evaluated = 0;
        const onTurn =
          token === undefined
            ? undefined
            : (event: TurnEvent) => {
                evaluated += 1;
                const attempt = event.attempt > 1 ? ` (attempt ${event.attempt})` : '';
                const message = `${event.conversation}${attempt} turn ${event.turn.index}: ${event.turn.status}`;
                void extra
                  .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: evaluated, message } })
                  .catch(() => undefined);
              };
        const report = await countRun(app.metrics, extra.signal, () =>
          runSuite(runContext(app, { caller, agent, access, signal: extra.signal, log: app.log, onTurn }), suite),
        );
        return success(report, renderReport(report));
      }),
  );
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
        ...(attempt.error === null ? [] : [`- ${where}: could not go on: ${attempt.error.message}`]),
      ];
    }),
  );
  return [
    `${report.passed ? 'PASSED' : 'FAILED'}: ${report.name ?? report.run_label} against ${report.agent} (revision ` +
      `${report.revision.revision}, ${report.revision.state}), seed ${report.seed}`,
    `conversations ${conversations.passed}/${conversations.total} passed (${conversations.flaky} flaky, ${conversations.error} ` +
      `could not run); turns ${turns.passed}/${turns.total}; expectations ${expectations.passed}/${expectations.total} ` +
      `(${expectations.failed} failed, ${expectations.skipped} skipped); criteria ${criteria.passed}/${criteria.total}`,
    ...failed,
    `session ids: ${report.session_ids.join(', ') || 'none'}`,
  ].join('\n');
}
