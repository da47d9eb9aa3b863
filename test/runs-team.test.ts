// Runs are readable by the team, across pods: a teammate with Viewer on the projects of all a run's
// agents reads it, follows its events and finds it under `?agent=` through another pod than the one
// running it, but may not cancel it (403 run_not_yours); a caller without Viewer gets 404, as for
// an unknown run; `GET /v1/runs` stays the caller's own. Over MCP alike: get_run and tasks/get read
// a teammate's run, cancel_run and tasks/cancel are refused, tasks/list is the caller's own.
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { request } from 'undici';
import { comparePath, runPath, type Json } from './support/http.js';
import { mcpClient, textOf } from './support/mcp.js';
import { startPods, type Pods } from './support/peers.js';

/** A run whose agent answers after a pause: it is still running while the team reads it. */
const slowSuite = {
  repeat: 3,
  conversations: [{ name: 'order', turns: [{ line: '#intro' }, { line: 'sim:delay:150' }, { line: 'Where is my order?' }] }],
};

/** The run's lines from a pod, read to the end of the stream. */
async function events(pods: Pods, pod: number, id: string, token: string): Promise<{ status: number; lines: Json[] }> {
  const res = await request(`${pods.urls[pod]}/v1/runs/${id}/events`, { headers: { authorization: `Bearer ${token}` } });
  const text = (await res.body.text()).trim();
  return { status: res.statusCode, lines: text.split('\n').map((line) => JSON.parse(line)) };
}

t.test('a teammate reads a run through another pod, but does not cancel it; a stranger gets 404', async (t) => {
  const pods = await startPods(t, 2);
  const started = await pods.call(0, 'POST', runPath(), { body: slowSuite, headers: { prefer: 'respond-async' } });
  t.equal(started.status, 202);
  const id = started.body.id as string;
  t.same(started.body.started_by, { id: 'u-demo', email: 'demo@example.com' }, 'who started it, as users/me says');

  const read = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token' });
  t.equal(read.status, 200, 'bob has Viewer on the project of coach: he reads it through the other pod');
  t.match(read.body, { id, agent: 'agent:coach', started_by: { id: 'u-demo', email: 'demo@example.com' } });
  t.notMatch(JSON.stringify(read.body), /demo-token/, 'never a token');

  const refused = await pods.call(1, 'DELETE', `/v1/runs/${id}`, { token: 'bob-token' });
  t.equal(refused.status, 403);
  t.equal(refused.body.error, 'run_not_yours');
  t.match(refused.body.message, /Only the caller who started this run cancels it/);

  for (const [method, path] of [
    ['GET', `/v1/runs/${id}`],
    ['GET', `/v1/runs/${id}/events`],
    ['DELETE', `/v1/runs/${id}`],
  ] as const) {
    for (const pod of [0, 1]) {
      const stranger = await pods.call(pod, method, path, { token: 'outsider-token' });
      t.equal(stranger.status, 404, `a caller without Viewer: ${method} ${path} on pod ${pod}`);
      t.equal(stranger.body.error, 'run_not_found', 'as for an unknown run');
    }
  }

  const followed = await events(pods, 1, id, 'bob-token');
  t.equal(followed.status, 200);
  t.match(followed.lines[0], { run: { id } });
  t.match(followed.lines.at(-1), { report: { run_id: id, passed: true } }, 'bob follows it to its report');

  t.same((await pods.call(1, 'GET', '/v1/runs', { token: 'bob-token' })).body.runs, [], 'GET /v1/runs stays the caller’s own');
  const mine = await pods.call(1, 'GET', '/v1/runs');
  t.same(
    mine.body.runs.map((r: Json) => r.id),
    [id],
    "the caller's own, from the other pod",
  );
  const byAgent = await pods.call(1, 'GET', '/v1/runs?agent=coach', { token: 'bob-token' });
  t.equal(byAgent.status, 200);
  t.same(
    byAgent.body.runs.map((r: Json) => [r.id, r.started_by.id]),
    [[id, 'u-demo']],
    "?agent=coach: the agent's runs for its Viewers",
  );
  t.same((await pods.call(1, 'GET', '/v1/runs?agent=coach.2', { token: 'bob-token' })).body.runs, [], 'another revision: none');
  const strangerList = await pods.call(0, 'GET', '/v1/runs?agent=coach', { token: 'outsider-token' });
  t.equal(strangerList.status, 403, 'an agent the caller may not view is refused as on every agent route');
  t.equal(strangerList.body.error, 'forbidden');
  const badAgent = await pods.call(0, 'GET', '/v1/runs?agent=no%20such', { token: 'bob-token' });
  t.equal(badAgent.status, 400);
  t.match(badAgent.body.details.problems[0], { field: 'agent' });

  const own = await pods.call(1, 'DELETE', `/v1/runs/${id}`, { token: 'demo-token-2' });
  t.equal(own.status, 200, 'its caller (with another token) may cancel it: it had ended, so it is answered as it is');
});

t.test('a comparison is readable only with Viewer on both its sides', async (t) => {
  const pods = await startPods(t, 2);
  // The tenant's Editor sees every project; bob sees coach's project, not hidden's.
  const body = { ...slowSuite, repeat: undefined, max_attempts: 2, baseline: 'hidden' };
  const started = await pods.call(0, 'POST', comparePath('coach.3'), { body, headers: { prefer: 'respond-async' }, token: 'tenant-token' });
  t.equal(started.status, 202, JSON.stringify(started.body));
  const id = started.body.id as string;
  t.equal((await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'tenant-token' })).status, 200);
  const bob = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token' });
  t.equal(bob.status, 404, 'Viewer on the candidate alone is not enough');
  const listed = await pods.call(1, 'GET', '/v1/runs?agent=coach', { token: 'bob-token' });
  t.same(listed.body.runs, [], 'and it is not listed to him');
  const tenantList = await pods.call(1, 'GET', '/v1/runs?agent=hidden', { token: 'tenant-token' });
  t.same(
    tenantList.body.runs.map((r: Json) => [r.id, r.baseline]),
    [[id, 'agent:hidden']],
    'an agent on the baseline side lists the comparison',
  );
  await pods.call(0, 'DELETE', `/v1/runs/${id}`, { token: 'tenant-token' });
});

t.test('MCP: a teammate reads a run with get_run and tasks/get from another pod, and cancels it with neither', async (t) => {
  // A turn that hangs until the run is cancelled: the run is still running whatever the machine's pace.
  const pods = await startPods(t, 2, { env: { TURN_BUDGET_MS: '60000' } });
  const hanging = { conversations: [{ name: 'hang', turns: [{ line: '#intro' }, { line: 'sim:hang' }] }] };
  const started = await pods.call(0, 'POST', runPath(), { body: hanging, headers: { prefer: 'respond-async' } });
  const id = started.body.id as string;
  const bob = await mcpClient(t, { url: pods.urls[1]! }, { token: 'bob-token' });
  const read: Json = await bob.callTool({ name: 'get_run', arguments: { run_id: id } });
  t.notOk(read.isError, textOf(read));
  t.match(read.structuredContent, { id, started_by: { id: 'u-demo' } });
  const page = `${pods.urls[1]}/runs/${id}`;
  t.match(textOf(read), `page_url: ${page}`, 'the page URL, on the gateway as the client reaches it');
  t.match(read.content, [{}, {}, { type: 'resource_link', uri: page }], 'and as a resource link');
  const cancel: Json = await bob.callTool({ name: 'cancel_run', arguments: { run_id: id } });
  t.ok(cancel.isError);
  t.match(textOf(cancel), /^run_not_yours: /);
  const task = await bob.experimental.tasks.getTask(id);
  t.equal(task.taskId, id, 'tasks/get reads the teammate’s run');
  t.equal(task.status, 'working');
  t.match(task.statusMessage, `page_url: ${page}`, "the task's status says where its page is");
  await t.rejects(bob.experimental.tasks.cancelTask(id), /run_not_yours/, 'tasks/cancel is refused');
  t.same((await bob.experimental.tasks.listTasks()).tasks, [], "tasks/list is the caller's own");
  t.equal((await pods.call(0, 'GET', `/v1/runs/${id}`)).body.status, 'running', 'still running');

  const stranger = await mcpClient(t, { url: pods.urls[1]! }, { token: 'outsider-token' });
  const unknown: Json = await stranger.callTool({ name: 'get_run', arguments: { run_id: id } });
  t.match(textOf(unknown), /^run_not_found: /, 'a caller without Viewer: not found');
  await t.rejects(stranger.experimental.tasks.getTask(id), /not found/i);

  const owner = await mcpClient(t, { url: pods.urls[1]! });
  const cancelled: Json = await owner.callTool({ name: 'cancel_run', arguments: { run_id: id } });
  t.notOk(cancelled.isError, textOf(cancelled));
  t.match(cancelled.structuredContent, { id, status: 'cancelled' });
  const result: Json = await bob.experimental.tasks.getTaskResult(id, CallToolResultSchema);
  t.match(textOf(result), /cancelled/, "tasks/result: the teammate reads the cancelled run's report");
});

t.test('with RUNS_PAGE=false, MCP answers carry no page URL', async (t) => {
  const pods = await startPods(t, 1, { env: { RUNS_PAGE: 'false' } });
  const started = await pods.call(0, 'POST', runPath(), { body: slowSuite, headers: { prefer: 'respond-async' } });
  const client = await mcpClient(t, { url: pods.urls[0]! });
  const read: Json = await client.callTool({ name: 'get_run', arguments: { run_id: started.body.id } });
  t.notOk(read.isError, textOf(read));
  t.notMatch(textOf(read), /page_url/);
  t.equal(read.content.length, 1, 'no resource link either');
});
