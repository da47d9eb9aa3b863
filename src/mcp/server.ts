import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { registerConversationTools } from './conversation-tools.js';
import { registerJudgeTools } from './judge-tools.js';
import { registerMemoryTools } from './memory-tools.js';
import { registerPlanTool } from './plan-tool.js';
import { registerRunTools } from './run-tools.js';
import { RunTaskStore } from './run-tasks.js';
import type { SessionCaller } from './sessions.js';
import { registerSuiteTools, reportAnswer } from './suite-tools.js';

/** What the server tells a client at initialize; every tool calls the service's own parts. */
const INSTRUCTIONS =
  'Test Promethist agents in live conversations: test_agent says one line and answers what the agent did (pass its session_id to ' +
  'continue); end_conversation closes one; run_suite runs a whole suite with expectations; check_judge checks the judge ' +
  "against a person's labels; plan_comparison says the budget a comparison needs before it runs; snapshot_memory and " +
  "restore_memory read and reset a simulated user's memory. Every conversation is a real engine session and counts towards usage.";

/**
 * One MCP server per MCP session, bound to the caller who opened it: its task store finds that
 * caller's runs (a task is a run), and the runs its team may read, from any pod.
 */
export function createMcpServer(app: FastifyInstance, version: string, caller: SessionCaller): McpServer {
  const tasks = new RunTaskStore(app, caller, reportAnswer);
  const server = new McpServer(
    { name: 'agent-test-gateway', title: 'Agent test gateway', version },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: tasks,
      instructions: INSTRUCTIONS,
    },
  );
  registerConversationTools(server, app);
  registerMemoryTools(server, app);
  registerSuiteTools(server, app, tasks);
  registerRunTools(server, app, tasks);
  registerJudgeTools(server, app);
  registerPlanTool(server, app);
  return server;
}
