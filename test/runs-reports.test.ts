// A run's JUnit and HTML reports through the API: `GET /v1/runs/{id}` with `Accept: application/xml`
// or `text/html` answers the very files `agent-test-gateway follow --junit / --html` writes, to every
// caller who may read the run and through any pod; 409 run_running before it has ended; 404 to a
// caller without Viewer, as the run itself.
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { memoryIo as io } from './support/cli.js';
import { comparePath, runPath } from './support/http.js';
import { startPods } from './support/peers.js';
import { eventually } from './support/stack.js';

/** The demo agent's revision 3 answers an order's delivery date without looking it up: a regression. */
const orderLookup = {
  name: 'order lookup',
  turns: [{ line: '#intro' }, { line: 'My order number is 12345', expect: { tool: 'lookup_order', text_contains: 'delivered' } }],
};

t.test('an ended comparison: its JUnit and HTML, the files follow writes, to a teammate through another pod', async (t) => {
  const pods = await startPods(t, 2);
  const body = { baseline: 'coach', max_attempts: 6, conversations: [orderLookup] };
  const started = await pods.call(0, 'POST', comparePath(), { body, headers: { prefer: 'respond-async' } });
  t.equal(started.status, 202, started.text);
  const id = started.body.id as string;
  await eventually(async () => (await pods.call(1, 'GET', `/v1/runs/${id}`)).body.status !== 'running', 60_000);

  const runs = await import('../src/cli/runs.js');
  const dir = t.testdir({});
  const followed = io();
  await runs.main('follow', [id, '--gateway', pods.urls[1]!, '--junit', `${dir}/r.xml`, '--html', `${dir}/r.html`], followed);

  const junit = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token', headers: { accept: 'application/xml' } });
  t.equal(junit.status, 200, junit.text);
  t.match(junit.headers['content-type'], /^application\/xml; charset=utf-8/);
  t.equal(junit.headers['content-disposition'], `attachment; filename="${id}.junit.xml"`);
  t.match(junit.headers.vary, /accept/i);
  t.equal(junit.text, await readFile(`${dir}/r.xml`, 'utf8'), 'the JUnit follow --junit writes');
  t.match(junit.text, /<failure/, 'the regressed conversation is a failure');

  const html = await pods.call(0, 'GET', `/v1/runs/${id}`, { token: 'bob-token', headers: { accept: 'text/html' } });
  t.equal(html.status, 200, html.text);
  t.match(html.headers['content-type'], /^text\/html; charset=utf-8/);
  t.equal(html.headers['content-disposition'], `attachment; filename="${id}.html"`);
  t.match(String(html.headers['content-security-policy']), /default-src 'none'/, 'no script, no request, as the file’s own policy');
  t.equal(html.text, await readFile(`${dir}/r.html`, 'utf8'), 'the HTML follow --html writes');

  const json = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token', headers: { accept: '*/*' } });
  t.equal(json.status, 200);
  t.match(json.body, { id, kind: 'comparison', report: { run_id: String } }, 'any other Accept: the run as JSON');

  for (const accept of ['application/xml', 'text/html']) {
    const stranger = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'outsider-token', headers: { accept } });
    t.equal(stranger.status, 404, `a caller without Viewer: ${accept}`);
    t.equal(stranger.body.error, 'run_not_found');
  }
});

t.test('a running run has no JUnit or HTML yet: 409 run_running; once cancelled, they say so', async (t) => {
  const pods = await startPods(t, 2, { env: { TURN_BUDGET_MS: '60000' } });
  const hanging = { conversations: [{ name: 'hang', turns: [{ line: '#intro' }, { line: 'sim:hang' }] }] };
  const started = await pods.call(0, 'POST', runPath(), { body: hanging, headers: { prefer: 'respond-async' } });
  const id = started.body.id as string;
  for (const accept of ['application/xml', 'text/html']) {
    const early = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token', headers: { accept } });
    t.equal(early.status, 409, accept);
    t.equal(early.body.error, 'run_running');
    t.match(early.body.message, `GET /v1/runs/${id}/events follows it`);
  }
  t.equal((await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token' })).body.status, 'running', 'JSON: the run as it stands');

  t.equal((await pods.call(0, 'DELETE', `/v1/runs/${id}`)).status, 200);
  const junit = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token', headers: { accept: 'application/xml' } });
  t.equal(junit.status, 200, junit.text);
  t.match(junit.text, /<error[^>]*type="cancelled"/, 'the conversation the cancel left undecided is an error, never green');
  const html = await pods.call(1, 'GET', `/v1/runs/${id}`, { token: 'bob-token', headers: { accept: 'text/html' } });
  t.match(html.text, /^<!doctype html>/);
  t.match(html.text, /cancelled/i);
});
