/** The HTTP side of /mcp and its metadata, as the gateway answers it, against openapi.yaml. */

import t, { type Test } from 'tap';
import { startStack } from './support/stack.js';
import { mcpClient } from './support/mcp.js';
import { type Answer } from './support/http.js';
import { doc, escapePointer, resolveRef, validatorAt } from './support/openapi.js';

function conforms(t: Test, route: string, method: string, answer: Answer, status: number): void {
  t.equal(answer.status, status, `${method} ${route} answers ${status}`);
  const declared = doc.paths[route][method].responses[String(status)];
  t.ok(declared, `${method.toUpperCase()} ${route} ${status} is declared`);
  const { node: response, pointer = `/paths/${escapePointer(route)}/${method}/responses/${status}` } = resolveRef(declared);
  if (response?.content?.['application/json'] === undefined) return void t.equal(answer.text, '', 'no body, as declared');
  const validate = validatorAt(`${pointer}/content/application~1json/schema`);
  t.ok(validate(answer.body), `${method} ${route} ${status}: the body conforms`, { errors: validate.errors, body: answer.body });
}

const ACCEPT = 'application/json, text/event-stream';
const init = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '0' } },
};

t.test('/mcp and its metadata conform to openapi.yaml', async (t) => {
  const s = await startStack(t);
  const metadata = await s.call('GET', '/.well-known/oauth-protected-resource', { token: null });
  conforms(t, '/.well-known/oauth-protected-resource', 'get', metadata, 200);
  t.same(metadata.body.authorization_servers, [s.platform.url], 'the platform, by default');

  const anonymous = await s.call('POST', '/mcp', { token: null, body: init, headers: { accept: ACCEPT } });
  conforms(t, '/mcp', 'post', anonymous, 401);
  t.match(
    anonymous.headers['www-authenticate'],
    new RegExp(doc.components.responses.McpUnauthenticated.headers['WWW-Authenticate'].schema.pattern),
  );
  conforms(t, '/mcp', 'get', await s.call('GET', '/mcp', { token: null, headers: { accept: 'text/event-stream' } }), 401);
  conforms(t, '/mcp', 'delete', await s.call('DELETE', '/mcp', { token: 'nobody' }), 401);

  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
  conforms(t, '/mcp', 'post', await s.call('POST', '/mcp', { body: list, headers: { accept: ACCEPT } }), 400);
  conforms(t, '/mcp', 'get', await s.call('GET', '/mcp', { headers: { accept: 'text/event-stream' } }), 400);
  conforms(t, '/mcp', 'delete', await s.call('DELETE', '/mcp'), 400);
  const unknown = { accept: ACCEPT, 'mcp-session-id': '4b1f1e0e-0000-4000-8000-000000000000' };
  conforms(t, '/mcp', 'post', await s.call('POST', '/mcp', { body: list, headers: unknown }), 404);
  conforms(t, '/mcp', 'get', await s.call('GET', '/mcp', { headers: unknown }), 404);
  conforms(t, '/mcp', 'delete', await s.call('DELETE', '/mcp', { headers: unknown }), 404);
  conforms(
    t,
    '/mcp',
    'post',
    await s.call('POST', '/mcp', { body: 'hello', headers: { accept: ACCEPT, 'content-type': 'text/plain' } }),
    415,
  );
  conforms(t, '/mcp', 'post', await s.call('POST', '/mcp', { body: '{"jsonrpc":', headers: { accept: ACCEPT } }), 400);
  conforms(t, '/mcp', 'post', await s.call('POST', '/mcp', { body: init, headers: { accept: 'application/json' } }), 406);

  const opened = await s.call('POST', '/mcp', { body: init, headers: { accept: ACCEPT } });
  t.equal(opened.status, 200);
  t.ok(doc.paths['/mcp'].post.responses['200'].content['text/event-stream'], 'POST 200 text/event-stream is declared');
  t.match(opened.headers['content-type'], /^text\/event-stream/);
  t.equal(opened.headers['x-accel-buffering'], 'no', 'a proxy passes each event on at once');
  t.match(opened.headers['mcp-session-id'], /^[0-9a-f-]{36}$/);
  t.match(opened.text, /"serverInfo":\{"name":"agent-test-gateway"/);

  // A session of the SDK client: a notification is accepted, DELETE ends it.
  const client = await mcpClient(t, s);
  const sessionId = (client.transport as unknown as { sessionId: string }).sessionId;
  const mine = { accept: ACCEPT, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
  const note = { jsonrpc: '2.0', method: 'notifications/roots/list_changed' };
  conforms(t, '/mcp', 'post', await s.call('POST', '/mcp', { body: note, headers: mine }), 202);
  conforms(t, '/mcp', 'delete', await s.call('DELETE', '/mcp', { headers: mine }), 200);
});
