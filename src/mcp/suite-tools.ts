import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { invalidRequest, shuttingDown } from '../errors.js';
import { agentSchema } from '../schemas/requests.js';
import type { RunReport, TurnEvent } from '../suites/report.js';
import { countRun, suiteToRun } from '../suites/request.js';
import { runSuite } from '../suites/runner.js';
import { confirmRestore } from './memory-tools.js';
import { runReportOutput } from './outputs.js';
import { callerOf, guarded, success } from './results.js';
import { registerTool } from './tools.js';

/** run_suite: the runs route as a tool; the suite comes as YAML text or as JSON. */
const RUN_SUITE = `Run a test suite against an agent and answer its report: every conversation (in parallel up to your conversation limit), every turn's transcript, every expectation with its evidence, totals and the session ids. The suite is the runs route's body: YAML text or a JSON object with agent, conversations[].turns[].line and .expect (text_matches, text_contains, tool, shown, not_shown, ended_by_agent, exit_within_ms), optional memory { restore, save, wait_ms }. Every conversation is closed plainly when done. With a progress token, each evaluated turn is reported as progress.`;

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
        const { suite, agent } = suiteToRun(data, args.agent);
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
                const message = `${event.conversation} turn ${event.turn.index}: ${event.turn.status}`;
                void extra
                  .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: evaluated, message } })
                  .catch(() => undefined);
              };
        const report = await countRun(app.metrics, extra.signal, () =>
          runSuite(
            {
              registry: app.conversations,
              engine: app.engine,
              config: app.config,
              caller,
              access,
              signal: extra.signal,
              log: app.log,
              ...(onTurn ? { onTurn } : {}),
            },
            suite,
          ),
        );
        return success(report, renderReport(report));
      }),
  );
}

function renderReport(report: RunReport): string {
  const { conversations, turns, expectations } = report.totals;
  const failed = report.conversations.flatMap((conv) =>
    conv.turns.flatMap((turn) =>
      turn.expectations
        .filter((e) => e.passed === false)
        .map((e) => `- ${conv.name}, turn ${turn.index} (${JSON.stringify(turn.line)}): ${e.kind} failed: ${e.evidence}`),
    ),
  );
  return [
    `${report.passed ? 'PASSED' : 'FAILED'}: ${report.name ?? report.run_label} against ${report.agent}`,
    `conversations ${conversations.passed}/${conversations.total} passed; turns ${turns.passed}/${turns.total}; expectations ${expectations.passed}/${expectations.total} (${expectations.failed} failed, ${expectations.skipped} skipped)`,
    ...failed,
    `session ids: ${report.session_ids.join(', ') || 'none'}`,
  ].join('\n');
}
