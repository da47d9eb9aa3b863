// The command and a run it does not hold the connection of: `run --detach` prints the run's id,
// `follow ID` reads it to its report and exits as `run` would, `cancel ID` cancels a running one;
// a run the command starts has its page URL printed.
import t from 'tap';
import { memoryIo as io } from './support/cli.js';
import { eventually, startStack } from './support/stack.js';

t.test('run --detach prints the id; follow reads it to the report; cancel cancels', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '30000' } });
  const run = await import('../src/cli/run.js');
  const runs = await import('../src/cli/runs.js');
  const dir = t.testdir({
    'ok.yaml': 'agent: coach\nconversations:\n  - turns:\n      - line: "#intro"\n        expect: { text_matches: coach }\n',
    'hang.yaml': 'agent: coach\nconversations:\n  - turns:\n      - line: sim:hang\n',
  });

  const detached = io();
  t.equal(await run.main([`${dir}/ok.yaml`, '--gateway', s.url, '--detach'], detached), 0, detached.err());
  const id = /^([0-9a-f-]{36})\trun of ok/m.exec(detached.out())?.[1];
  t.ok(id, `the run's id is printed: ${detached.out()}`);
  t.match(detached.out(), new RegExp(`agent-test-gateway follow ${id} · ${s.url}/runs/${id}$`, 'm'), "and the run's page");
  t.equal((await s.call('GET', `/v1/runs/${id}`)).body.suite, 'ok', 'a suite file without a name: the run is listed by the file’s');

  const started = io();
  t.equal(await run.main([`${dir}/ok.yaml`, '--gateway', s.url], started), 0, started.err());
  t.match(started.err(), new RegExp(`^run ([0-9a-f-]{36}): ${s.url}/runs/\\1$`, 'm'), 'a run the command starts: its page URL first');

  const followed = io();
  t.equal(await runs.main('follow', [id!, '--gateway', s.url], followed), 0, followed.err());
  t.match(followed.out(), new RegExp(`✓ run ${id} passed`));

  const hanging = io();
  t.equal(await run.main([`${dir}/hang.yaml`, '--gateway', s.url, '--detach'], hanging), 0);
  const hangId = /^([0-9a-f-]{36})\t/m.exec(hanging.out())![1]!;
  await eventually(() => s.engine.record.connections.some((c) => c.frames.includes('sim:hang')));
  const cancelled = io();
  t.equal(await runs.main('cancel', [hangId, '--gateway', s.url], cancelled), 0, cancelled.err());
  t.equal(cancelled.out(), `run ${hangId}: cancelled\n`);

  // A Viewer of the agent's project follows the team's run: cancelled, it was not decided (exit 2, never 0).
  const viewer = io();
  viewer.env.AGENT_TEST_GATEWAY_TOKEN = 'bob-token';
  t.equal(await runs.main('follow', [hangId, '--gateway', s.url], viewer), 2, viewer.err());
  t.match(viewer.out(), /^✗ not decided: the run of coach was cancelled after 1 of 1 sessions \(DELETE \/v1\/runs\/\{id\} cancelled it\)/);
  t.match(viewer.out(), new RegExp(`✗ run ${hangId} was cancelled, not decided\n$`));
  const stranger = io();
  stranger.env.AGENT_TEST_GATEWAY_TOKEN = 'outsider-token';
  t.equal(await runs.main('follow', [hangId, '--gateway', s.url], stranger), 2, "a stranger's follow finds nothing");
  t.match(stranger.err(), /No run [0-9a-f-]{36} is known/);
  const bad = io();
  t.equal(await runs.main('follow', ['not-an-id'], bad), 2);
  t.match(bad.err(), /name the run id/);
});
