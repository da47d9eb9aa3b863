// MCP tasks ("call now, fetch later") over runs, with the SDK's own clients: compare_revisions
// called as a task answers the task at once; tasks/get shows its progress, tasks/result the report,
// tasks/cancel cancels the run; the task is the run (same id), so it is found through another pod
// and another MCP session of the same caller, also after the pod that started it drained and handed
// it over; a teammate with Viewer reads it, a caller without does not find it. A call without a task answers as before.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, type Task } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { mcpClient, textOf } from './support/mcp.js';
import { startPods } from './support/peers.js';
import type { Json } from './support/http.js';
import { eventually, UUID } from './support/stack.js';

/** Three conversations whose agent answers after a pause: long enough to be polled and moved. */
const suite = (maxAttempts: number) => ({
  max_attempts: maxAttempts,
  concurrency: 2,
  conversations: ['a', 'b', 'c'].map((name) => ({
    name,
    turns: [{ line: 'sim:delay:100' }, { line: 'sim:chance:0.8', expect: { text_matches: 'Yes' } }],
  })),
});

const compare = (maxAttempts: number) => ({
  name: 'compare_revisions',
  arguments: { suite: suite(maxAttempts), baseline: 'coach', candidate: 'coach.3' },
});

/** Starts a tool call as a task and answers the task the call answered at once. */
async function startTask(client: Client, params: { name: string; arguments: Record<string, unknown> }): Promise<Task> {
  for await (const message of client.experimental.tasks.callToolStream(params, CallToolResultSchema, { task: {} })) {
    if (message.type === 'taskCreated') return message.task;
    throw new Error(`expected the task first, got ${JSON.stringify(message)}`);
  }
  throw new Error('the call answered nothing');
}

/** Polls tasks/get until the task ends; answers every status seen. */
async function pollToEnd(client: Client, taskId: string): Promise<Task[]> {
  const seen: Task[] = [];
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    seen.push(task);
    if (['completed', 'failed', 'cancelled'].includes(task.status)) return seen;
    await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 50));
  }
}

t.test('tools/list offers run_suite and compare_revisions as optional tasks, and the server the tasks capability', async (t) => {
  const pods = await startPods(t, 1);
  const client = await mcpClient(t, { url: pods.urls[0]! });
  const { tools } = await client.listTools();
  const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
  t.equal(support.run_suite, 'optional');
  t.equal(support.compare_revisions, 'optional');
  t.equal(support.test_agent, 'forbidden', 'a turn is no task');
  t.same(client.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
});

t.test('compare_revisions as a task, started on one pod and polled to its report through another', async (t) => {
  const pods = await startPods(t, 3, { env: { MCP_TASK_POLL_MS: '50' } });
  const starter = await mcpClient(t, { url: pods.urls[0]! });
  const task = await startTask(starter, compare(8));
  t.match(task, { taskId: UUID, status: 'working', pollInterval: 50, ttl: 86_400_000 });
  t.match(task.statusMessage, /^run \S+ \(comparison\) running on /, 'the progress, in words');

  // Another MCP session of the same caller, on another pod, knows the task by the run's id.
  const poller = await mcpClient(t, { url: pods.urls[1]! });
  const first = await poller.experimental.tasks.getTask(task.taskId);
  t.equal(first.taskId, task.taskId);
  const rest = await pods.call(2, 'GET', `/v1/runs/${task.taskId}`);
  t.equal(rest.status, 200, 'the task is the run: REST reads it by the same id');

  // The pod that started it drains (SIGTERM): the run moves to a sibling, the task with it.
  await eventually(async () => (await pods.call(0, 'GET', `/v1/runs/${task.taskId}`)).body.progress.sessions > 0, 30_000);
  await pods.apps[0]!.runs.drain();
  const seen = await pollToEnd(poller, task.taskId);
  const last = seen.at(-1)!;
  t.equal(last.status, 'completed', 'identical agents: the comparison completed');
  t.ok(
    seen.some((s) => s.status === 'working' && /sessions/.test(s.statusMessage ?? '')),
    'tasks/get showed the progress while it ran',
  );

  const result: Json = await poller.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  t.notOk(result.isError, textOf(result));
  t.match(result.structuredContent, { run_id: task.taskId, regressed: false });
  const moved = await pods.call(1, 'GET', `/v1/runs/${task.taskId}`);
  t.equal(moved.body.moves.length, 1, 'the run moved once, the task with it');
  t.match(textOf(result), /unchanged/, "the report's text");

  const { tasks } = await poller.experimental.tasks.listTasks();
  t.ok(
    tasks.some((listed) => listed.taskId === task.taskId && listed.status === 'completed'),
    "tasks/list: the caller's runs from every pod",
  );

  const bob = await mcpClient(t, { url: pods.urls[2]! }, { token: 'bob-token' });
  t.equal((await bob.experimental.tasks.getTask(task.taskId)).status, 'completed', 'a teammate with Viewer reads the task');
  const bobs = await bob.experimental.tasks.listTasks();
  t.same(bobs.tasks, [], 'but it is not listed to them: tasks/list is the caller’s own');
  const outsider = await mcpClient(t, { url: pods.urls[2]! }, { token: 'outsider-token' });
  await t.rejects(outsider.experimental.tasks.getTask(task.taskId), /not found/i, 'a caller without Viewer: not found');
});

t.test('tasks/cancel cancels the run; the result is its report, marked cancelled', async (t) => {
  const pods = await startPods(t, 2, { env: { MCP_TASK_POLL_MS: '50' } });
  const client = await mcpClient(t, { url: pods.urls[0]! });
  const task = await startTask(client, compare(40));
  const other = await mcpClient(t, { url: pods.urls[1]! });
  const cancelled = await other.experimental.tasks.cancelTask(task.taskId);
  t.equal(cancelled.status, 'cancelled');
  const seen = await pollToEnd(other, task.taskId);
  t.equal(seen.at(-1)!.status, 'cancelled');
  const result: Json = await other.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  // A cancelled comparison decides nothing: its answer says so first, never "may be promoted".
  t.match(result.structuredContent, { run_id: task.taskId, regressed: null, cancelled: { reason: 'the MCP client cancelled the task' } });
  t.match(
    textOf(result),
    /^✗ not decided: the comparison of coach\.3 with coach was cancelled after \d+ of \d+ sessions \(the MCP client cancelled the task\)/,
  );
  t.notMatch(textOf(result), /may be promoted/);
  t.match(result.structuredContent.notes[0], /cancelled: the MCP client cancelled the task/, 'the report says why');
  const view = await pods.call(0, 'GET', `/v1/runs/${task.taskId}`);
  t.equal(view.body.status, 'cancelled', 'the run itself was cancelled');
  await t.rejects(other.experimental.tasks.cancelTask(task.taskId), /terminal/, 'an ended task cannot be cancelled again');
});

t.test('a refused call as a task fails at once, naming the field; an unknown task is not found', async (t) => {
  const pods = await startPods(t, 1, { env: { MCP_TASK_POLL_MS: '50' } });
  const client = await mcpClient(t, { url: pods.urls[0]! });
  const task = await startTask(client, {
    name: 'compare_revisions',
    arguments: { suite: suite(8), baseline: 'coach', candidate: 'coach.3', repeat: 3, max_attempts: 8 },
  });
  t.equal(task.status, 'failed');
  t.match(task.statusMessage, /^invalid_request: max_attempts cannot be given with repeat/);
  const result: Json = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  t.equal(result.isError, true);
  t.match(textOf(result), /max_attempts cannot be given with repeat/);
  t.equal(pods.engine.record.connections.length, 0, 'nothing reached the engine');
  await t.rejects(client.experimental.tasks.getTask('00000000-1111-4222-8333-444444444444'), /not found/i);
  await t.rejects(client.experimental.tasks.getTask('not-a-run'), /not found/i);
});

t.test('without a task: the report; past MCP_RUN_WAIT_MS the run id, then get_run through another pod', async (t) => {
  const pods = await startPods(t, 2, { env: { MCP_RUN_WAIT_MS: '0' } });
  const client = await mcpClient(t, { url: pods.urls[0]! });
  const pending: Json = await client.callTool(compare(4));
  t.equal(pending.isError, true);
  const text = textOf(pending);
  t.match(text, /^still running after 0 s, not failed: run \S+ \(comparison\) running/);
  const id = /run (\S+) \(comparison\)/.exec(text)![1]!;
  const later = await mcpClient(t, { url: pods.urls[1]! });
  let view: Json;
  await eventually(async () => {
    view = await later.callTool({ name: 'get_run', arguments: { run_id: id } });
    return view.structuredContent?.status !== 'running';
  }, 30_000);
  t.match(view!.structuredContent, { id, kind: 'comparison', status: 'passed', report: { run_id: id } });
});
