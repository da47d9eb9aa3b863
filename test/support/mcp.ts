import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { Test } from 'tap';
import type { Json } from './http.js';
import type { Stack } from './stack.js';

/** The SDK's own client, connected to the stack's /mcp with a platform token. */
export async function mcpClient(
  t: { teardown(fn: () => unknown): void },
  s: Pick<Stack, 'url'>,
  opts: { token?: string; capabilities?: ClientCapabilities } = {},
): Promise<Client> {
  const client = new Client({ name: 'gateway-test', version: '1.0.0' }, { capabilities: opts.capabilities ?? {} });
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${opts.token ?? 'demo-token'}` } },
  });
  await client.connect(transport);
  t.teardown(() => client.close());
  return client;
}

export const textOf = (result: { content?: unknown }): string =>
  ((result.content as Array<{ type: string; text?: string }> | undefined) ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

/**
 * Three turns of one coach conversation over test_agent (the intro for device alice, an order
 * question, "planning?"), asserting the engine kept its planning; answers the first and last results.
 */
export async function threeTurns(t: Test, client: Client): Promise<{ first: Json; third: Json; sessionId: string }> {
  const first: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', device_ref: 'alice' } });
  t.notOk(first.isError, textOf(first));
  const sessionId: string = first.structuredContent.session_id;
  const second: Json = await client.callTool({
    name: 'test_agent',
    arguments: { agent: 'coach', session_id: sessionId, line: 'Where is my order?' },
  });
  t.same(second.structuredContent.turn.tools, ['lookup_order']);
  const third: Json = await client.callTool({
    name: 'test_agent',
    arguments: { agent: 'coach', session_id: sessionId, line: 'planning?' },
  });
  t.match(
    third.structuredContent.turn.text,
    /This socket has carried 2 of my turns; the session has 2 lines, so I still have my planning\./,
  );
  t.equal(third.structuredContent.conversation.turns, 3);
  return { first, third, sessionId };
}

/** Every tool the gateway's MCP server lists, sorted. */
export const TOOL_NAMES = [
  'cancel_run',
  'check_judge',
  'compare_revisions',
  'end_conversation',
  'get_run',
  'list_conversations',
  'plan_comparison',
  'restore_memory',
  'run_suite',
  'snapshot_memory',
  'test_agent',
];
