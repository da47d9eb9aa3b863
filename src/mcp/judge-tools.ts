import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { renderJudgeCheck } from '../suites/judge-check/text.js';
import { judgeCheckOutput } from './outputs.js';
import { callerOf, guarded, success } from './results.js';
import { yamlData } from './suite-tools.js';
import { registerTool } from './tools.js';

/** check_judge: the judge-checks route as a tool; the labelled transcripts come as YAML text or as JSON. */
const CHECK_JUDGE =
  "Check the gateway's judge against a person's labels before gating on it: the judge rules again on labelled transcripts " +
  "(with each criterion's votes) and the answer says per criterion and over all how often it agrees with the person: " +
  "agreement, Cohen's kappa with its 95 % interval (large-sample SE of Fleiss, Cohen & Everitt 1969; null when every label " +
  "is one class), the false-pass and false-fail rates, and every disagreement with the judge's reasoning. `labels` is the " +
  'judge-checks route\'s body: { reports: [run reports in which a person set "label": "passed" | "failed" on criteria ' +
  'rulings] } or { agent, items: [{ transcript: [{ user, agent }], criteria, labels: { criterion id: passed | failed } }] }, ' +
  "with optional votes, seed, min_agreement. Needs Viewer on the agents' projects and a model on the gateway; nothing " +
  'reaches the engine.';

export function registerJudgeTools(server: McpServer, app: FastifyInstance): void {
  registerTool(
    server,
    app.log,
    'check_judge',
    {
      title: 'Check the judge against labels',
      description: CHECK_JUDGE,
      inputSchema: z.strictObject({
        labels: z
          .union([z.string(), z.record(z.string(), z.unknown())], { error: 'labels must be YAML text or a JSON object' })
          .describe('The labelled transcripts: YAML text, or a JSON object.'),
      }),
      outputSchema: judgeCheckOutput,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (args, extra) =>
      guarded(app.log, async () => {
        const { startJudgeCheck } = await import('../suites/judge-check/start.js');
        const body = yamlData(args.labels, 'labels');
        const report = await startJudgeCheck(app, { body, authenticate: async () => callerOf(extra) });
        return success(report, renderJudgeCheck(report));
      }),
  );
}
