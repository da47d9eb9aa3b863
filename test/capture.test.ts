// "Turn this failure into a test": GET /v1/runs/{id}/capture and `agent-test-gateway capture` write
// a failed attempt as a suite (checked here against the suite schema) that replays its lines, the
// simulated user's too, with the checks that failed; `agent-test-gateway run` runs that YAML as it
// is against the engine simulator, where the demo agent fails again on the same line. Bad input is
// refused naming the field and the rule; the team reads a capture as it reads the run.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { loadSuite } from '../src/suites/spec/yaml.js';
import { cli } from './support/cli.js';
import { comparePath, runPath, type Json } from './support/http.js';
import { startStack, type Stack } from './support/stack.js';

/**
 * Two conversations the demo agent fails every time: it looks the order up where the suite expects
 * a cancellation, and a simulated user's conversation where it calls the tool the suite forbids.
 */
const failing = {
  seed: 7,
  conversations: [
    {
      name: 'cancel order',
      turns: [
        { line: '#intro' },
        { line: 'Where is my order?', expect: { tool: 'cancel_order', text_contains: 'order' } },
        { line: 'Which size fits me?' },
      ],
    },
    {
      name: 'delivery date',
      simulated_user: {
        persona: 'Dana, a busy parent who ordered running shoes last week and writes short messages.',
        goal: 'Find out when my order will be delivered.',
        facts: { order_number: '12345' },
        max_turns: 5,
      },
      expect: { not_tools: 'lookup_order' },
    },
  ],
};

const capturePath = (id: string, query: Record<string, string>) => `/v1/runs/${id}/capture?${new URLSearchParams(query)}`;

/** The attempt of the conversation named, in a run report. */
const attemptOf = (report: Json, name: string, attempt = 1): Json =>
  report.conversations.find((c: Json) => c.name === name).attempts.find((a: Json) => a.attempt === attempt);

/** A failed expectation's kind and value, per turn: what a replay must fail on again. */
const failures = (attempt: Json) => ({
  turns: attempt.turns.map((turn: Json) =>
    turn.expectations.filter((e: Json) => e.passed === false).map((e: Json) => [e.kind, e.expected]),
  ),
  conversation: attempt.expectations.filter((e: Json) => e.passed === false).map((e: Json) => [e.kind, e.expected]),
});

async function runFailing(s: Stack): Promise<{ id: string; report: Json }> {
  const answer = await s.call('POST', runPath(), { body: failing });
  if (answer.status !== 200) throw new Error(`the run answered ${answer.status}: ${answer.text}`);
  return { id: answer.body.run_id as string, report: answer.body };
}

t.test('a captured attempt is a valid suite that run replays, failing again on the same line', async (t) => {
  const s = await startStack(t, { model: true });
  const { id, report } = await runFailing(s);
  t.equal(report.passed, false);
  const dir = t.testdir();

  for (const name of ['cancel order', 'delivery date']) {
    const original = attemptOf(report, name);
    t.equal(original.status, 'failed', `${name} failed`);
    const answer = await s.call('GET', capturePath(id, { conversation: name, attempt: '1' }), { token: 'bob-token' });
    t.equal(answer.status, 200, `${name}: a teammate captures it`);
    t.match(answer.headers['content-type'], /^application\/yaml/);
    const loaded = loadSuite(answer.text, 'regression.yaml');
    t.ok(loaded.ok, `${name}: the suite schema accepts it`, { problems: loaded.ok ? [] : loaded.problems });
    const suite = parseYaml(answer.text);
    t.equal(suite.agent, 'coach');
    t.equal(suite.seed, report.seed, "the run's seed");
    const conversation = suite.conversations[0];
    t.same(
      conversation.turns.map((turn: Json) => turn.line),
      original.turns.map((turn: Json) => turn.line),
      `${name}: every line replayed as a scripted turn`,
    );
    t.notOk(conversation.simulated_user, 'no simulated user: its lines are scripted');

    const file = join(dir, `${name.replace(/ /g, '-')}.yaml`);
    await writeFile(file, answer.text);
    const json = join(dir, `${name.replace(/ /g, '-')}.json`);
    const replay = await cli('run', [file, '--gateway', s.url, '--json', json]);
    t.equal(replay.code, 1, `${name}: the replay fails`, { output: replay.stdout + replay.stderr });
    const written = JSON.parse(await readFile(json, 'utf8'));
    const replayed = attemptOf(Array.isArray(written) ? written[0] : written, name);
    t.same(
      replayed.turns.map((turn: Json) => turn.line),
      original.turns.map((turn: Json) => turn.line),
      'the same lines',
    );
    t.same(failures(replayed), failures(original), `${name}: the same checks fail on the same turns`);
  }

  const scripted = parseYaml((await s.call('GET', capturePath(id, { conversation: 'cancel order', attempt: '1' }))).text);
  t.same(
    scripted.conversations[0].turns[1],
    { line: 'Where is my order?', expect: { tool: 'cancel_order' } },
    'only the checks that failed',
  );
  const simulated = await s.call('GET', capturePath(id, { conversation: 'delivery date', attempt: '1' }));
  t.match(simulated.text, /the simulated user's too/);
  t.same(parseYaml(simulated.text).conversations[0].expect, { not_tools: ['lookup_order'] });

  const command = await cli('capture', [id, '--conversation', 'cancel order', '--attempt', '1', '--gateway', s.url]);
  t.equal(command.code, 0, command.stderr);
  t.equal(
    command.stdout,
    (await s.call('GET', capturePath(id, { conversation: 'cancel order', attempt: '1' }))).text,
    'the command writes the same YAML',
  );
});

t.test('bad input names the field and the rule; a stranger gets 404', async (t) => {
  const s = await startStack(t, { model: true });
  const { id } = await runFailing(s);
  const refused = async (query: Record<string, string>, field: string, rule: RegExp) => {
    const answer = await s.call('GET', capturePath(id, query));
    t.equal(answer.status, 400, JSON.stringify(query));
    t.equal(answer.body.error, 'invalid_request');
    t.match(answer.body.details.problems[0], { field, rule }, JSON.stringify(query));
  };
  await refused({ attempt: '1' }, 'conversation', /conversation is required/);
  await refused(
    { conversation: 'nope', attempt: '1' },
    'conversation',
    /must name a conversation of the run: "cancel order", "delivery date"/,
  );
  await refused({ conversation: 'cancel order' }, 'attempt', /attempt is required/);
  await refused({ conversation: 'cancel order', attempt: '0' }, 'attempt', /from 1/);
  await refused({ conversation: 'cancel order', attempt: '2' }, 'attempt', /at most 1/);
  await refused({ conversation: 'cancel order', attempt: '1', side: 'baseline' }, 'side', /comparison only/);
  await refused({ conversation: 'cancel order', attempt: '1', side: 'left' }, 'side', /baseline or candidate/);
  const stranger = await s.call('GET', capturePath(id, { conversation: 'cancel order', attempt: '1' }), { token: 'outsider-token' });
  t.equal(stranger.status, 404);
  t.equal(stranger.body.error, 'run_not_found');

  const passing = await s.call('POST', runPath(), { body: { conversations: [{ name: 'hello', turns: [{ line: '#intro' }] }] } });
  const passed = await s.call('GET', capturePath(passing.body.run_id, { conversation: 'hello', attempt: '1' }));
  t.equal(passed.status, 400);
  t.match(passed.body.details.problems[0], { field: 'attempt', rule: /passed: capture turns a failed/ });

  const command = await cli('capture', [id, '--conversation', 'nope', '--attempt', '1', '--gateway', s.url]);
  t.equal(command.code, 2);
  t.match(command.stderr, /agent-test-gateway capture: conversation must name a conversation of the run/);
  t.equal(command.stdout, '', 'nothing on stdout: no half a suite in regression.yaml');
});

t.test('a running run without the attempt yet is refused; a comparison captures the candidate unless side says', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '30000' } });
  const running = await s.call('POST', runPath(), {
    body: { conversations: [{ name: 'slow', turns: [{ line: '#intro' }, { line: 'sim:hang' }] }] },
    headers: { prefer: 'respond-async' },
  });
  const early = await s.call('GET', capturePath(running.body.id, { conversation: 'slow', attempt: '1' }));
  t.equal(early.status, 400);
  t.match(early.body.details.problems[0], {
    field: 'attempt',
    rule: /has not completed yet: the run is still running \(0 completed so far\)/,
  });
  await s.call('DELETE', `/v1/runs/${running.body.id}`);

  const compared = await s.call('POST', comparePath('coach.3'), {
    body: { baseline: 'coach', repeat: 1, conversations: [failing.conversations[0]] },
  });
  t.equal(compared.status, 200, compared.text);
  const id = compared.body.run_id as string;
  const candidate = parseYaml((await s.call('GET', capturePath(id, { conversation: 'cancel order', attempt: '1' }))).text);
  t.equal(candidate.agent, 'coach.3', 'the candidate by default');
  const baseline = await s.call('GET', capturePath(id, { conversation: 'cancel order', attempt: '1', side: 'baseline' }));
  t.equal(parseYaml(baseline.text).agent, 'coach');
  t.match(baseline.text, new RegExp(`captured from comparison ${id}`));
});
