import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { registerConversationTools } from './conversation-tools.js';
import { registerMemoryTools } from './memory-tools.js';
import { registerPlanTool } from './plan-tool.js';
import { registerRunTools } from './run-tools.js';
import { registerSuiteTools } from './suite-tools.js';

/** One MCP server (one per MCP session) with every tool, each calling the service's own parts. */
const INSTRUCTIONS =
  'Test Promethist agents in live conversations: test_agent says one line and answers what the agent did (pass its session_id to ' +
  'continue); end_conversation closes one; run_suite runs a whole suite with expectations; snapshot_memory and restore_memory ' +
  "read and reset a simulated user's memory; plan_comparison says the budget a comparison needs before it runs. " +
  'Every conversation is a real engine session and counts towards usage.';

export function createMcpServer(app: FastifyInstance, version: string): McpServer {
  const server = new McpServer(
    { name: 'agent-test-gateway', title: 'Agent test gateway', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  registerConversationTools(server, app);
  registerMemoryTools(server, app);
  registerSuiteTools(server, app);
  registerRunTools(server, app);
  registerPlanTool(server, app);
  return server;
}
