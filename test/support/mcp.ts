import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { Stack } from './stack.js';

/** The SDK's own client, connected to the stack's /mcp with a platform token. */
export async function mcpClient(
  t: { teardown(fn: () => unknown): void },
  s: Stack,
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

/** Every tool the gateway's MCP server lists, sorted. */
export const TOOL_NAMES = [
  'compare_revisions',
  'end_conversation',
  'list_conversations',
  'restore_memory',
  'run_suite',
  'snapshot_memory',
  'test_agent',
];
