/**
 * An MCP client that runs a suite as a task ("call now, fetch later", docs/mcp.md), with the
 * official TypeScript SDK: the call answers the task at once, tasks/get polls its progress and
 * tasks/result answers the report. Against the demo (npm run demo):
 *
 *   AGENT_TEST_GATEWAY_TOKEN=demo-token npx tsx examples/mcp-task-client.ts examples/basic.yaml
 *   AGENT_TEST_GATEWAY_TOKEN=demo-token npx tsx examples/mcp-task-client.ts examples/release-gate/coach.yaml coach coach.3
 *
 * With one file it calls `run_suite`; with a baseline and a candidate, `compare_revisions`.
 * The gateway is AGENT_TEST_GATEWAY_URL (default http://127.0.0.1:8080). Exit status: 0 the run
 * passed (or nothing regressed), 1 it did not, 2 the task did not complete.
 */
import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const [file, baseline, candidate] = process.argv.slice(2);
const gateway = process.env.AGENT_TEST_GATEWAY_URL ?? 'http://127.0.0.1:8080';
const token = process.env.AGENT_TEST_GATEWAY_TOKEN;
if (file === undefined || token === undefined || (baseline === undefined) !== (candidate === undefined)) {
  console.error('usage: AGENT_TEST_GATEWAY_TOKEN=… npx tsx examples/mcp-task-client.ts SUITE.yaml [BASELINE CANDIDATE]');
  process.exit(2);
}

const client = new Client({ name: 'mcp-task-client', version: '1.0.0' });
await client.connect(
  new StreamableHTTPClientTransport(new URL('/mcp', gateway), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
);

// The suite goes as its YAML text; `task` makes the call answer the task at once instead of the report.
const suite = await readFile(file, 'utf8');
const call =
  baseline === undefined
    ? { name: 'run_suite', arguments: { suite } }
    : { name: 'compare_revisions', arguments: { suite, baseline, candidate } };
const { task } = await client.request({ method: 'tools/call', params: { ...call, task: { ttl: 60 * 60 * 1000 } } }, CreateTaskResultSchema);
console.log(`task ${task.taskId}: ${task.status}`); // the task is the run: GET /v1/runs/{taskId} reads it too

// tasks/get until the run ends, at the interval the server asks for.
let status = task.status;
while (status === 'working' || status === 'input_required') {
  await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 2000));
  const polled = await client.experimental.tasks.getTask(task.taskId);
  status = polled.status;
  console.log(`${status}: ${polled.statusMessage ?? ''}`);
}

// tasks/result: the tool's result, as the call without a task would have answered it.
const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
for (const part of result.content) if (part.type === 'text') console.log(part.text);
const report = result.structuredContent as { passed?: boolean; regressed?: boolean } | undefined;
await client.close();
if (status !== 'completed' || report === undefined) process.exit(2);
process.exit(report.passed === true || report.regressed === false ? 0 : 1);
