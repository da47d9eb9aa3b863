/**
 * Invalid arguments of every MCP tool, through the SDK's own client: a tool result (`isError:
 * true`) whose text is the gateway's code and sentence, as the REST API answers the same input,
 * never the SDK's protocol words; the tool does not run and nothing reaches the engine. tools/list
 * still shows each tool's real input schema.
 */

import t from 'tap';
import { startStack } from './support/stack.js';
import { mcpClient, textOf } from './support/mcp.js';
import { type Json } from './support/http.js';

const SENT_NOTHING = 'nothing was sent to the engine';
const HASH_RULE = 'line may start with # only as exactly #intro: other # lines are engine actions (#exit, #ready:…) and are never sent';

/** A judge-check whose `votes` is even. */
const LABELLED = { agent: 'coach', votes: 2, items: [{ transcript: [{ user: 'Hi', agent: 'Hello' }], criteria: ['Polite'], labels: {} }] };

interface Case {
  name: string;
  arguments: Record<string, unknown>;
  text: string;
  /** The same input to the REST API: method, path and body. */
  rest?: [string, string, Record<string, unknown>?];
}

const cases: Case[] = [
  {
    name: 'test_agent',
    arguments: { agent: 'coach', line: '#exit' },
    text: `invalid_request: ${HASH_RULE}; ${SENT_NOTHING}`,
    rest: ['POST', '/v1/agents/coach/conversations', { line: '#exit' }],
  },
  {
    name: 'end_conversation',
    arguments: { agent: 'coach', session_id: 'not-a-session' },
    text: `invalid_request: session_id must be the engine session id, a UUID; ${SENT_NOTHING}`,
    rest: ['DELETE', '/v1/agents/coach/conversations/not-a-session'],
  },
  {
    name: 'list_conversations',
    arguments: { agent: 'coach' },
    text: `invalid_request: agent is not a known field; ${SENT_NOTHING}`,
  },
  {
    name: 'snapshot_memory',
    arguments: { agent: 'coach', device_ref: 'mcp:' },
    text: `invalid_request: device_ref must name a device after mcp:; ${SENT_NOTHING}`,
    rest: ['GET', '/v1/agents/coach/memory/mcp:'],
  },
  {
    name: 'restore_memory',
    arguments: { agent: 'coach', device_ref: 'alice', snapshot: { units: 'none' }, confirm: true },
    text: `invalid_request: snapshot.units must be an array of JSON objects; ${SENT_NOTHING}`,
    rest: ['PUT', '/v1/agents/coach/memory/alice', { confirm: true, snapshot: { units: 'none' } }],
  },
  {
    name: 'run_suite',
    arguments: { agent: 'coach!', suite: { conversations: [{ turns: [{ line: 'Hi' }] }] } },
    text: `invalid_request: agent must be an agent ref such as coach, or ref.N for revision N such as coach.7; ${SENT_NOTHING}`,
    rest: ['POST', '/v1/agents/coach!/runs', { conversations: [{ turns: [{ line: 'Hi' }] }] }],
  },
  {
    name: 'compare_revisions',
    arguments: { baseline: 'coach', candidate: 'coach.3', suite: { conversations: [{ turns: [{ line: '#exit' }] }] } },
    text: `invalid_request: conversations[0].turns[0].${HASH_RULE}; ${SENT_NOTHING}`,
    rest: ['POST', '/v1/agents/coach.3/comparisons', { baseline: 'coach', conversations: [{ turns: [{ line: '#exit' }] }] }],
  },
  {
    name: 'check_judge',
    arguments: { labels: LABELLED },
    text: 'invalid_request: votes must be 1, 3 or 5 (odd, at most 5); nothing was sent to the model',
    rest: ['POST', '/v1/judge-checks', LABELLED],
  },
  {
    name: 'plan_comparison',
    arguments: { conversations: 3, baseline_rate: 0.9, drop: 0 },
    text: `invalid_request: drop must be more than 0; ${SENT_NOTHING}`,
    rest: ['POST', '/v1/comparisons/plan', { conversations: 3, baseline_rate: 0.9, drop: 0 }],
  },
  {
    name: 'get_run',
    arguments: { run_id: 'not-a-run' },
    text: `invalid_request: run_id must be the id of a run, a UUID; ${SENT_NOTHING}`,
    rest: ['GET', '/v1/runs/not-a-run'],
  },
  {
    name: 'cancel_run',
    arguments: { run_id: '12345' },
    text: `invalid_request: run_id must be the id of a run, a UUID; ${SENT_NOTHING}`,
    rest: ['DELETE', '/v1/runs/12345'],
  },
];

t.test("each tool answers invalid arguments as a tool error with the REST API's code and sentence", async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const { tools } = await client.listTools();
  t.same(cases.map((c) => c.name).sort(), tools.map((tool) => tool.name).sort(), 'a case for every tool');

  const asked = s.platform.requests.length;
  const texts = new Map<string, string>();
  for (const c of cases) {
    const result: Json = await client.callTool({ name: c.name, arguments: c.arguments });
    t.equal(result.isError, true, `${c.name}: a tool result with isError, not a protocol error`);
    t.equal(textOf(result), c.text, `${c.name}: the gateway's code and its whole sentence, naming the field`);
    t.notOk(result.structuredContent, `${c.name}: no structured result`);
    texts.set(c.name, textOf(result));
  }
  t.equal(s.platform.requests.length, asked, 'no tool ran: the platform was not even asked about the agent');
  t.same(s.engine.record, { connections: [], memoryRequests: [], endOfConversation: [] }, 'the engine saw nothing');

  for (const c of cases.filter((c) => c.rest !== undefined)) {
    const [method, path, body] = c.rest!;
    const answer = await s.call(method, path, body === undefined ? {} : { body });
    t.equal(answer.status, 400, `${method} ${path}: 400`);
    t.equal(texts.get(c.name), `${answer.body.error}: ${answer.body.message}`, `${c.name}: the code and sentence REST answers`);
  }
  t.same(s.engine.record.connections, [], 'nor did the REST calls reach it');
});

t.test('every field of every tool, of the wrong type, and an unknown field are refused by name', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const { tools } = await client.listTools();
  for (const tool of tools) {
    const unknown: Json = await client.callTool({ name: tool.name, arguments: { no_such_field: 1 } });
    t.equal(unknown.isError, true);
    t.match(textOf(unknown), /^invalid_request: /, `${tool.name}: invalid_request`);
    t.match(
      textOf(unknown),
      /(^invalid_request: |\nalso: )no_such_field is not a known field(;|$)/m,
      `${tool.name}: names the unknown field`,
    );
    for (const field of Object.keys(tool.inputSchema.properties ?? {})) {
      const wrong: Json = await client.callTool({ name: tool.name, arguments: { [field]: 12345 } });
      t.equal(wrong.isError, true);
      t.match(textOf(wrong), new RegExp(`(^invalid_request: |\\nalso: )${field} must `), `${tool.name}: ${field} must …`);
    }
  }
  const several: Json = await client.callTool({ name: 'end_conversation', arguments: {} });
  t.equal(
    textOf(several),
    `invalid_request: agent is required; ${SENT_NOTHING}\nalso: session_id is required`,
    'the first broken rule is the sentence (as in REST), every further one a line',
  );
  t.same(s.engine.record, { connections: [], memoryRequests: [], endOfConversation: [] }, 'the engine saw nothing');
});

const walk = (node: unknown, visit: (node: Json, path: string) => void, path = ''): void => {
  if (typeof node !== 'object' || node === null) return;
  visit(node, path);
  for (const [key, value] of Object.entries(node)) walk(value, visit, `${path}/${key}`);
};

t.test('tools/list shows the real input schemas: fields, rules and descriptions, in a portable spelling', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const { tools } = await client.listTools();
  const input = (name: string): Json => tools.find((tool) => tool.name === name)!.inputSchema;
  for (const tool of tools) {
    t.equal(tool.inputSchema.type, 'object');
    t.equal(tool.inputSchema.additionalProperties, false, `${tool.name}: no unknown field`);
  }
  t.same(input('list_conversations').properties, {}, 'list_conversations takes no argument');
  t.same(input('end_conversation').required, ['agent', 'session_id']);
  t.equal(input('end_conversation').properties.session_id.description, 'The conversation to close.');
  t.match(input('end_conversation').properties.session_id.pattern, /\[0-9a-fA-F\]\{8\}/);
  t.same(input('snapshot_memory').required, ['agent', 'device_ref']);
  t.match(input('snapshot_memory').properties.device_ref, { minLength: 1, description: /simulated user/ });
  t.same(input('restore_memory').required, ['agent', 'device_ref', 'snapshot']);
  t.match(input('restore_memory').properties.confirm, { type: 'boolean', description: /agreed/ });
  t.match(input('restore_memory').properties.snapshot, { type: 'object', required: ['units'] });
  t.same(input('run_suite').required, ['suite']);
  t.match(input('run_suite').properties.suite, { anyOf: [{ type: 'string' }, { type: 'object' }], description: /YAML/ });
  t.match(input('test_agent').properties.line.description, /one line/);
  t.same(input('test_agent').properties.time_zone, { anyOf: [{ type: 'string' }, { type: 'null' }] });

  for (const tool of tools) {
    walk(tool.inputSchema, (node, path) => {
      if (Array.isArray(node.type)) t.fail(`${tool.name}${path}: a type array`);
      const extra = node.additionalProperties;
      if (typeof extra === 'object' && extra !== null && Object.keys(extra).length === 0)
        t.fail(`${tool.name}${path}: additionalProperties {}`);
    });
  }
});
