import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { planAnswer, planBody } from '../suites/spec/plan-request.js';
import { comparisonPlanOutput } from './outputs.js';
import { callerOf, guarded, success } from './results.js';
import { registerTool } from './tools.js';

const PLAN_COMPARISON =
  'Plan a comparison before running it: the max_attempts whose sequential gate catches a drop of the pass rate (drop, e.g. 0.2) ' +
  '80 % of the time in every conversation, the engine sessions it spends (expected when nothing changed, when every conversation ' +
  "dropped, at most) and the wall time at a concurrency and session length. The baseline's pass rates: baseline_rate with " +
  'conversations, or baseline_rates (one per conversation), or report (an earlier run or comparison report: each conversation’s ' +
  "pass_rate, a comparison's baseline side). Computed exactly from the gate's design; nothing is run and no agent is involved. " +
  'Answers the same as POST /v1/comparisons/plan and agent-test-gateway plan, with the plan in one line.';

/** plan_comparison: the plan route as a tool, its answer openapi.yaml's ComparisonPlan. */
export function registerPlanTool(server: McpServer, app: FastifyInstance): void {
  registerTool(
    server,
    app.log,
    'plan_comparison',
    {
      title: 'Plan a comparison',
      description: PLAN_COMPARISON,
      inputSchema: planBody,
      outputSchema: comparisonPlanOutput,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded(app.log, async () => {
        callerOf(extra);
        const answer = await planAnswer(args);
        return success(answer, answer.line);
      }),
  );
}
