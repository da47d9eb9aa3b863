/**
 * The MCP endpoint with the SDK's own Client and StreamableHTTPClientTransport against the
 * gateway and the simulators: the tools, a conversation over one engine socket, the # guard,
 * progress, ownership and the 401 that starts an MCP client's OAuth flow.
 */

import t from 'tap';
import { eventually, startStack, UUID } from './support/stack.js';
import { mcpClient, textOf, threeTurns, TOOL_NAMES } from './support/mcp.js';
import { type Json } from './support/http.js';

const testAgentSchema = ({ tools }: { tools: Json[] }) => tools.find((tool) => tool.name === 'test_agent').inputSchema;

t.test('the tool list: names, schemas from the input rules, annotations', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  t.same(Object.keys(byName).sort(), TOOL_NAMES);
  const testAgent: Json = byName.test_agent;
  t.same(testAgent.inputSchema.required, ['agent']);
  t.equal(testAgent.inputSchema.properties.agent.maxLength, 128, 'the agent rule of the REST routes');
  for (const field of ['line', 'session_id', 'locale', 'device_ref', 'time_zone', 'run_label', 'time_offset']) {
    t.ok(testAgent.inputSchema.properties[field], `test_agent takes ${field}`);
  }
  t.match(testAgent.inputSchema.properties.session_id.pattern, /\[0-9a-fA-F\]\{8\}/);
  t.ok(testAgent.outputSchema.properties.turn, 'the result is the REST TurnResult');
  t.equal(testAgent.annotations.openWorldHint, true);
  t.equal(byName.snapshot_memory!.annotations!.readOnlyHint, true);
  t.equal(byName.list_conversations!.annotations!.readOnlyHint, true);
  t.equal(byName.restore_memory!.annotations!.destructiveHint, true);
  t.equal(byName.end_conversation!.annotations!.destructiveHint, true);
  for (const tool of tools) t.ok(tool.outputSchema, `${tool.name} declares its output schema`);
});

t.test('three turns of one conversation over one engine socket', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const { first, third, sessionId } = await threeTurns(t, client);
  t.match(sessionId, UUID);
  t.equal(first.structuredContent.turn.line, '#intro', 'a new conversation opens with #intro');
  t.match(first.structuredContent.turn.text, /Hi, I'm coach/);
  t.match(textOf(first), /coach said: Hi, I'm coach/);
  t.match(textOf(first), new RegExp(`session_id: ${sessionId}`));
  t.equal(third.structuredContent.conversation.reconnected, false);
  t.equal(third.structuredContent.conversation.device_ref, 'mcp:alice');
  t.equal(s.engine.record.connections.length, 1, 'one engine socket for the whole conversation');

  const list: Json = await client.callTool({ name: 'list_conversations', arguments: {} });
  t.equal(list.structuredContent.conversations.length, 1);
  t.equal(list.structuredContent.conversations[0].session_id, sessionId);

  const ended: Json = await client.callTool({ name: 'end_conversation', arguments: { agent: 'coach', session_id: sessionId } });
  t.equal(ended.structuredContent.connection, 'closed');
  t.equal(ended.structuredContent.close_cause, 'caller');
  await eventually(() => s.engine.record.connections[0]!.closeCode !== undefined);
  t.equal(s.engine.record.connections[0]!.closeCode, 1000, 'a plain close');
  t.notOk(s.engine.record.connections[0]!.frames.includes('#exit'), 'never #exit');
});

t.test('a refused line is a tool error with the gateway code and rule; nothing reaches the engine', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const first: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach' } });
  const sessionId = first.structuredContent.session_id;
  const refused: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', session_id: sessionId, line: '#exit' } });
  t.equal(refused.isError, true);
  t.equal(
    textOf(refused),
    'invalid_request: line may start with # only as exactly #intro: other # lines are engine actions (#exit, #ready:…) ' +
      'and are never sent; nothing was sent to the engine',
    "the gateway's code and whole sentence, never the SDK's protocol words",
  );
  t.same(s.engine.record.connections[0]!.frames, ['#intro'], 'the engine got only the opening');

  const noLine: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', session_id: sessionId } });
  t.equal(textOf(noLine), 'invalid_request: line is required to continue a conversation (with session_id); nothing was sent to the engine');

  const badZone: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', time_zone: 'Mars/Olympus' } });
  t.equal(badZone.isError, true);
  t.match(textOf(badZone), /^invalid_request: time_zone must be an IANA time zone/);

  const unknown: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', lines: 'Hi' } });
  t.equal(
    textOf(unknown),
    'invalid_request: lines is not a known field; did you mean line? the fields here are line, locale, device_ref, time_zone, ' +
      'run_label, time_offset, agent, session_id; nothing was sent to the engine',
    'the start body rules: no unknown field',
  );
  t.equal(testAgentSchema(await client.listTools()).additionalProperties, false);

  const draft: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'draft-only' } });
  t.match(textOf(draft), /^no_published_revision: The agent draft-only has only a Draft .*promote it to Preview/);
  t.equal(s.engine.record.connections.length, 1, 'no other socket was opened');
});

t.test("another caller's session_id is refused as conversation_not_yours", async (t) => {
  const s = await startStack(t);
  const demo = await mcpClient(t, s);
  const bob = await mcpClient(t, s, { token: 'bob-token' });
  const first: Json = await demo.callTool({ name: 'test_agent', arguments: { agent: 'coach' } });
  const sessionId = first.structuredContent.session_id;
  const stolen: Json = await bob.callTool({ name: 'test_agent', arguments: { agent: 'coach', session_id: sessionId, line: 'Hi' } });
  t.equal(stolen.isError, true);
  t.match(textOf(stolen), /^conversation_not_yours: This conversation belongs to another caller/);
  const end: Json = await bob.callTool({ name: 'end_conversation', arguments: { agent: 'coach', session_id: sessionId } });
  t.match(textOf(end), /^conversation_not_yours:/);
  const list: Json = await bob.callTool({ name: 'list_conversations', arguments: {} });
  t.same(list.structuredContent.conversations, [], "bob sees none of demo's conversations");
  t.equal(s.engine.record.connections[0]!.frames.length, 1, 'bob sent nothing');
});

t.test("progress notifications carry the agent's speech before the result", async (t) => {
  const s = await startStack(t, { engine: { replyDelayMs: 30 } });
  const client = await mcpClient(t, s);
  const events: string[] = [];
  const result: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', line: 'Which size fits?' } }, undefined, {
    onprogress: (progress) => events.push(`progress ${progress.progress}: ${progress.message}`),
  });
  events.push('result');
  t.notOk(result.isError);
  t.same(events, ['progress 1: You said: Which size fits?', 'progress 2: Anything else?', 'result']);
});

t.test('cancelling a running test_agent closes its socket plainly, never #exit', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const cancel = new AbortController();
  const call = client.callTool({ name: 'test_agent', arguments: { agent: 'coach', line: 'sim:hang' } }, undefined, {
    signal: cancel.signal,
    onprogress: () => cancel.abort('the user stopped it'),
  });
  await t.rejects(call, /the user stopped it|abort/i);
  await eventually(() => s.engine.record.connections[0]?.closeCode !== undefined);
  const conn = s.engine.record.connections[0]!;
  t.equal(conn.closeCode, 1000, 'a plain close, like a caller hanging up');
  t.equal(conn.closedBy, 'client');
  t.same(conn.frames, ['sim:hang'], 'no #exit');
  const list: Json = await client.callTool({ name: 'list_conversations', arguments: {} });
  t.equal(list.structuredContent.conversations[0].close_cause, 'cancelled');
});

t.test('without a token: 401 with WWW-Authenticate and the protected resource metadata', async (t) => {
  const s = await startStack(t, { env: { MCP_AUTHORIZATION_SERVERS: 'https://auth.example/realms/a, https://auth2.example/' } });
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '0' } },
  };
  const headers = { accept: 'application/json, text/event-stream' };
  for (const token of [null, 'no-such-token']) {
    const answer = await s.call('POST', '/mcp', { token, body: init, headers });
    t.equal(answer.status, 401);
    t.equal(answer.headers['www-authenticate'], `Bearer resource_metadata="${s.url}/.well-known/oauth-protected-resource"`);
    t.equal(answer.body.error, 'unauthenticated');
  }
  const metadata = await s.call('GET', '/.well-known/oauth-protected-resource', { token: null });
  t.equal(metadata.status, 200);
  t.same(metadata.body, {
    resource: `${s.url}/mcp`,
    authorization_servers: ['https://auth.example/realms/a', 'https://auth2.example'],
    bearer_methods_supported: ['header'],
    resource_name: 'agent-test-gateway',
    resource_documentation: `${s.url}/openapi.json`,
  });
  const proxied = await s.call('POST', '/mcp', {
    token: null,
    body: init,
    headers: { ...headers, 'x-forwarded-proto': 'https', host: 'gw.example' },
  });
  t.equal(
    proxied.headers['www-authenticate'],
    'Bearer resource_metadata="https://gw.example/.well-known/oauth-protected-resource"',
    'behind a TLS proxy',
  );
  t.notOk(s.logs.join('').includes('no-such-token'), 'the token is never logged');
});

t.test('MCP sessions: bound to their user, refused without one, ended by DELETE', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const transport = client.transport as unknown as { sessionId: string; terminateSession(): Promise<void> };
  const sessionId = transport.sessionId;
  t.match(sessionId, UUID);
  const headers = { accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
  const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
  const asBob = await s.call('POST', '/mcp', { token: 'bob-token', body: list, headers });
  t.equal(asBob.status, 404, "another user's MCP session is unknown to them");
  const noSession = await s.call('POST', '/mcp', { body: list, headers: { accept: headers.accept } });
  t.equal(noSession.status, 400);
  t.match(noSession.body.error.message, /Mcp-Session-Id/);
  await transport.terminateSession();
  const afterDelete = await s.call('POST', '/mcp', { body: list, headers });
  t.equal(afterDelete.status, 404, 'a deleted session is gone');
  t.equal(s.logs.join('').includes('demo-token'), false, 'the token is never logged');
});

t.test('an idle MCP session expires; its conversations stay', async (t) => {
  const s = await startStack(t, { env: { MCP_SESSION_IDLE_MS: '1000' } });
  const client = await mcpClient(t, s);
  const first: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach' } });
  const sessionId = (client.transport as unknown as { sessionId: string }).sessionId;
  const headers = { accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
  const list = { jsonrpc: '2.0', id: 9, method: 'tools/list' };
  // Any request would keep it alive: wait past the idle time once, then ask.
  await new Promise((resolve) => setTimeout(resolve, 1300));
  const status = (await s.call('POST', '/mcp', { body: list, headers })).status;
  t.equal(status, 404, 'the expired session is gone');
  const again = await mcpClient(t, s);
  const next: Json = await again.callTool({
    name: 'test_agent',
    arguments: { agent: 'coach', session_id: first.structuredContent.session_id, line: 'planning?' },
  });
  t.match(next.structuredContent.turn.text, /This socket has carried 1 of my turns/, 'a new MCP session continues the same conversation');
});

t.test('MCP_AUTHORIZATION_SERVERS must list absolute URLs', async (t) => {
  const { loadConfig } = await import('../src/ops/config.js');
  const base = { PROMETHIST_MCP_ENGINE_URL: 'https://engine.example', PROMETHIST_PLATFORM_URL: 'https://platform.example/' };
  t.same(loadConfig(base).mcpAuthorizationServers, ['https://platform.example']);
  t.same(loadConfig({ ...base, MCP_AUTHORIZATION_SERVERS: ' ' }).mcpAuthorizationServers, ['https://platform.example']);
  t.throws(() => loadConfig({ ...base, MCP_AUTHORIZATION_SERVERS: 'https://a.example,auth.example' }), {
    message: /MCP_AUTHORIZATION_SERVERS must list absolute http:\/\/ or https:\/\/ URLs, separated by commas/,
  });
  t.equal(loadConfig(base).mcpSessionIdleMs, 1_800_000);
});
