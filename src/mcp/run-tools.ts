import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { cancelLocated, locateOwnRun, locateRun, readerOf } from '../runs/locate.js';
import type { RunView } from '../runs/views.js';
import { runIdSchema } from '../schemas/requests.js';
import type { ComparisonReport } from '../suites/report/comparison.js';
import type { RunReport } from '../suites/report/run-report.js';
import { answerLine } from '../suites/report/text.js';
import { comparisonAnswer, runAnswer } from '../suites/report/wording.js';
import { runViewOutput } from './outputs.js';
import { callerOf, guarded, success } from './results.js';
import { registerTool } from './tools.js';

/**
 * One line of where a run stands: its status, sessions spent of the budget, conversations decided;
 * once it has its report, the report's answer first (`do not promote coach.3: order status regressed`).
 */
export function progressLine(view: RunView): string {
  const { progress } = view;
  const answer =
    view.report === null
      ? ''
      : `${answerLine(
          view.kind === 'comparison'
            ? comparisonAnswer(view.report as unknown as ComparisonReport)
            : runAnswer(view.report as unknown as RunReport),
        )}\n`;
  return (
    answer +
    `run ${view.id} (${view.kind}) ${view.status} on ${view.pod}: ${progress.sessions} of at most ${progress.sessions_budget} ` +
    `sessions, ${progress.decided} of ${progress.conversations.length} conversations done` +
    (view.moves.length > 0 ? `; moved ${view.moves.length} time${view.moves.length === 1 ? '' : 's'}` : '')
  );
}

/**
 * run_suite and compare_revisions past MCP_RUN_WAIT_MS without a report: the run goes on, and the
 * answer says where it stands and how to ask again. A tool error, because the SDK holds a tool's
 * non-error answer to its output schema, the report's.
 */
export const pendingResult = (view: RunView, waitedMs: number): CallToolResult => ({
  isError: true,
  content: [
    {
      type: 'text',
      text:
        `still running after ${Math.round(waitedMs / 1000)} s, not failed: ${progressLine(view)}. Call get_run with ` +
        `run_id ${view.id} to read its progress and, once it has ended, its report; cancel_run cancels it.`,
    },
  ],
});

/**
 * An answer about a run with its page (`RUNS_PAGE`): a `resource_link` to `/runs/{id}` on the gateway
 * as the client reaches it, the protocol's own way to point at something to open, and a text line
 * saying it for clients that show text only.
 */
export function withPage(result: CallToolResult, pageUrl: string | undefined): CallToolResult {
  if (pageUrl === undefined) return result;
  return {
    ...result,
    content: [
      ...result.content,
      { type: 'text', text: `page_url: ${pageUrl}` },
      { type: 'resource_link', uri: pageUrl, name: 'run page', mimeType: 'text/html', description: 'The run live in a browser' },
    ],
  };
}

const GET_RUN =
  'Read a run or comparison that run_suite or compare_revisions started (by its run_id, from any pod of the gateway): its ' +
  'status (running, passed, failed, error, cancelled), progress per conversation (rounds or attempts, sessions spent, ' +
  'what was decided), where it ran and moved, and its report once it has ended (null before).';

/** Where a run's page is, as the session's client reaches the gateway; undefined when the page is off. */
export interface RunPages {
  pageOf(runId: string): string | undefined;
}

const CANCEL_RUN = 'Cancel a running run or comparison by its run_id: its running turns end with a plain close, its report says cancelled.';

const runIdArgs = z.strictObject({ run_id: runIdSchema.describe('The run id run_suite or compare_revisions answered.') });

export function registerRunTools(server: McpServer, app: FastifyInstance, pages: RunPages): void {
  registerTool(
    server,
    app.log,
    'get_run',
    {
      title: 'Read a run',
      description: GET_RUN,
      inputSchema: runIdArgs,
      outputSchema: runViewOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded(app.log, async () => {
        const { view } = await locateRun(app.runs, args.run_id, readerOf(app.authorizer, callerOf(extra)));
        return withPage(success(view, progressLine(view)), pages.pageOf(view.id));
      }),
  );

  registerTool(
    server,
    app.log,
    'cancel_run',
    {
      title: 'Cancel a run',
      description: CANCEL_RUN,
      inputSchema: runIdArgs,
      outputSchema: runViewOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    (args, extra) =>
      guarded(app.log, async () => {
        const located = await locateOwnRun(app.runs, args.run_id, readerOf(app.authorizer, callerOf(extra)));
        const after = await cancelLocated(app.runs, located, 'the MCP tool cancel_run cancelled it');
        return withPage(success(after, progressLine(after)), pages.pageOf(after.id));
      }),
  );
}
