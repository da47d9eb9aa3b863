// MCP sessions across the pods of a release: gateways built in this process, peers of each other,
// and the SDK's own client whose every request goes to the next pod (round-robin, not sticky).
import { createServer as createHttpServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { PEER_HEADER } from '../src/peers/secret.js';
import { textOf, threeTurns } from './support/mcp.js';
import { PEER_SECRET, startHangingPeer, startPods, type Pods } from './support/peers.js';
import { eventually, UUID } from './support/stack.js';
import { freePort, type Json } from './support/http.js';
import { scaled } from './support/time.js';

/** An MCP client behind a round-robin balancer: request n goes to pod n mod the number of pods. */
async function roundRobinClient(t: { teardown(fn: () => unknown): void }, pods: Pods, token = 'demo-token') {
  const hits = pods.urls.map(() => 0);
  let next = 0;
  const roundRobin = (input: string | URL, init?: RequestInit): Promise<Response> => {
    const pod = next++ % pods.urls.length;
    hits[pod]! += 1;
    const url = new URL(String(input));
    return fetch(new URL(url.pathname + url.search, pods.urls[pod]), init);
  };
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${pods.urls[0]}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: roundRobin,
  });
  await client.connect(transport);
  t.teardown(() => client.close());
  return { client, transport, hits, sessionId: transport.sessionId! };
}

/** Which pods hold an MCP session, as each answers its peers. */
const holders = async (pods: Pods, mcpSessionId: string): Promise<boolean[]> =>
  Promise.all(
    pods.urls.map(async (_, pod) => {
      const answer = await pods.call(pod, 'GET', `/internal/peer/mcp-sessions/${mcpSessionId}`, {
        headers: { [PEER_HEADER]: PEER_SECRET },
      });
      return answer.body.held as boolean;
    }),
  );

const mcpHeaders = (mcpSessionId: string) => ({
  accept: 'application/json, text/event-stream',
  'mcp-session-id': mcpSessionId,
  'mcp-protocol-version': '2025-06-18',
});
const toolsList = { jsonrpc: '2.0', id: 7, method: 'tools/list' };

t.test('one MCP session over three pods behind round-robin: tools, a conversation on one socket, ownership', async (t) => {
  const pods = await startPods(t, 3);
  const { client, transport, hits, sessionId } = await roundRobinClient(t, pods);
  t.match(sessionId, UUID);
  t.same(await holders(pods, sessionId), [true, false, false], 'the pod that answered initialize holds the session');

  const { tools } = await client.listTools();
  t.ok(
    tools.some((tool) => tool.name === 'test_agent'),
    'tools/list answered through any pod',
  );

  await threeTurns(t, client);
  t.equal(pods.engine.record.connections.length, 1, 'one engine socket for the whole conversation');
  t.ok(
    hits.every((n) => n > 0),
    `every pod was reached (${hits.join(', ')})`,
  );

  for (const pod of [0, 1, 2]) {
    const asBob = await pods.call(pod, 'POST', '/mcp', { token: 'bob-token', body: toolsList, headers: mcpHeaders(sessionId) });
    t.equal(asBob.status, 404, `another user's MCP session is unknown to them on pod ${pod}`);
    t.equal(asBob.body.error.code, -32001);
  }
  const unknown = await pods.call(1, 'POST', '/mcp', { body: toolsList, headers: mcpHeaders('00000000-1111-4222-8333-444444444444') });
  t.equal(unknown.status, 404, 'a session no pod holds: the 404 of a single pod');

  const forwarded = await pods.call(1, 'POST', '/mcp', {
    body: toolsList,
    headers: { ...mcpHeaders(sessionId), [PEER_HEADER]: PEER_SECRET },
  });
  t.equal(forwarded.status, 404, 'a request already forwarded is never forwarded again');

  await transport.terminateSession();
  t.same(await holders(pods, sessionId), [false, false, false], 'DELETE through any pod ends the session on its holder');
  const afterDelete = await pods.call(2, 'POST', '/mcp', { body: toolsList, headers: mcpHeaders(sessionId) });
  t.equal(afterDelete.status, 404);
});

t.test('through a forwarded request, progress arrives event by event before the result', async (t) => {
  const pods = await startPods(t, 2, { engine: { replyDelayMs: 30 } });
  const { client } = await roundRobinClient(t, pods);
  const events: string[] = [];
  const result: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', line: 'Which size fits?' } }, undefined, {
    onprogress: (progress) => events.push(`progress ${progress.progress}: ${progress.message}`),
  });
  events.push('result');
  t.notOk(result.isError, textOf(result));
  t.same(events, ['progress 1: You said: Which size fits?', 'progress 2: Anything else?', 'result']);

  // The turn hangs on the engine: only a stream passed on event by event shows its first progress.
  const cancel = new AbortController();
  const call = client.callTool({ name: 'test_agent', arguments: { agent: 'coach', line: 'sim:hang' } }, undefined, {
    signal: cancel.signal,
    onprogress: () => cancel.abort('the user stopped it'),
  });
  await t.rejects(call, /the user stopped it|abort/i);
  const conn = pods.engine.record.connections.at(-1)!;
  await eventually(() => conn.closeCode !== undefined);
  t.equal(conn.closeCode, 1000, 'the cancellation reached the holder: a plain close');
  t.same(conn.frames, ['sim:hang']);
});

t.test('the client hanging up ends the forwarded request on the holder', async (t) => {
  const pods = await startPods(t, 2);
  const { sessionId } = await roundRobinClient(t, pods);
  t.same(await holders(pods, sessionId), [true, false]);
  const cutShort: string[] = [];
  pods.apps[0]!.server.on('request', (req, res) => {
    if (req.method !== 'POST' || req.headers[PEER_HEADER] === undefined) return;
    res.on('close', () => {
      if (!res.writableFinished) cutShort.push(String(req.url));
    });
  });
  const hangUp = new AbortController();
  const call = {
    jsonrpc: '2.0',
    id: 9,
    method: 'tools/call',
    params: { name: 'test_agent', arguments: { agent: 'coach', line: 'sim:hang' }, _meta: { progressToken: 1 } },
  };
  const res = await fetch(`${pods.urls[1]}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders(sessionId), authorization: 'Bearer demo-token', 'content-type': 'application/json' },
    body: JSON.stringify(call),
    signal: hangUp.signal,
  });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/event-stream/);
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('notifications/progress')) seen += new TextDecoder().decode((await reader.read()).value);
  t.match(seen, /Let me think about that/, 'the progress of a turn still running came through');
  hangUp.abort();
  await eventually(() => cutShort.length > 0);
  t.same(cutShort, ['/mcp'], 'the request forwarded to the holder ended with the caller');
});

t.test('a peer that hangs changes no answer', async (t) => {
  const hanging = await startHangingPeer(t);
  const port = hanging.port;
  const pods = await startPods(t, 2, { env: { PEER_TIMEOUT_MS: String(scaled(150)) }, extraPeers: [`127.0.0.1:${port}`] });
  const { client, sessionId } = await roundRobinClient(t, pods);
  const held = await pods.call(0, 'POST', '/mcp', { body: toolsList, headers: mcpHeaders(sessionId) });
  t.equal(held.status, 200, 'a session held here is answered here, no peer asked');
  const { tools } = await client.listTools();
  t.ok(tools.length > 0, 'a session held on a peer is still found while another peer hangs');
  const answer: Json = await client.callTool({ name: 'test_agent', arguments: { agent: 'coach', line: 'planning?' } });
  t.match(answer.structuredContent.turn.text, /^This socket is new \(0 turns\)/, 'a new conversation on the holder');
  const unknown = await pods.call(1, 'POST', '/mcp', { body: toolsList, headers: mcpHeaders('00000000-1111-4222-8333-444444444444') });
  t.equal(unknown.status, 404, 'no pod answering in time: the 404 of a single pod');
  t.ok(hanging.connections() > 0, 'the hanging peer was asked');
});

t.test('a holder that goes away before answering, and a session id no peer is asked about: the 404', async (t) => {
  const asked: string[] = [];
  // Claims every MCP session, then drops the forwarded request.
  const vanishing = createHttpServer((req, res) => {
    asked.push(String(req.url));
    if (req.url?.startsWith('/internal/peer/mcp-sessions/')) res.setHeader('content-type', 'application/json').end('{"held":true}');
    else req.socket.destroy();
  });
  const port = await freePort();
  await new Promise<void>((resolve) => vanishing.listen(port, '127.0.0.1', resolve));
  t.teardown(() => vanishing.close());
  const pods = await startPods(t, 1, { extraPeers: [`127.0.0.1:${port}`] });
  const gone = await pods.call(0, 'POST', '/mcp', { body: toolsList, headers: mcpHeaders('00000000-1111-4222-8333-444444444444') });
  t.equal(gone.status, 404, 'the holder went away, and its sessions with it');
  t.same(asked, ['/internal/peer/mcp-sessions/00000000-1111-4222-8333-444444444444', '/mcp']);
  const tooLong = await pods.call(0, 'POST', '/mcp', { body: toolsList, headers: mcpHeaders('x'.repeat(300)) });
  t.equal(tooLong.status, 404);
  t.equal(asked.length, 2, 'an id no MCP server hands out is not looked up');
  const lookup = await pods.call(0, 'GET', `/internal/peer/mcp-sessions/${'x'.repeat(300)}`, { headers: { [PEER_HEADER]: PEER_SECRET } });
  t.equal(lookup.status, 400, 'nor answered by the peer route');
  const noSecret = await pods.call(0, 'GET', '/internal/peer/mcp-sessions/00000000-1111-4222-8333-444444444444');
  t.equal(noSecret.status, 401, 'the peer route answers only the pods of the release');
});
