/**
 * `agent-test-gateway run …` as CI runs it: a child process against a stack's URL, its exit
 * status, its transcript and its JUnit XML; and the examples in examples/ passing.
 */

import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import t from 'tap';
import { cli, readJunit } from './support/cli.js';
import { startStack, type Stack } from './support/stack.js';
import { type Json } from './support/http.js';
import { scaled } from './support/time.js';

const noEngine = (s: Stack) => s.engine.record.connections.length + s.engine.record.memoryRequests.length;

t.test('the examples pass against the demo world', async (t) => {
  const s = await startStack(t, { model: true });
  const dir = t.testdir();
  const out = join(dir, 'reports', 'junit.xml');
  const examples = [
    'examples/basic.yaml',
    'examples/returning-user.yaml',
    'examples/memory-fixture.yaml',
    'examples/simulated-user.yaml',
    'examples/simulated-returning-user.yaml',
  ];
  const [html, json] = [join(dir, 'reports', 'agents.html'), join(dir, 'reports', 'agents.json')];
  const result = await cli('run', [...examples, '--gateway', s.url, '--junit', out, '--html', html, '--json', json]);
  t.equal(result.code, 0, 'exits 0', { output: result.stdout + result.stderr });
  // One HTML page and one JSON array for the five suites; each suite's element ids kept apart.
  const page = await readFile(html, 'utf8');
  t.equal(page.match(/<!doctype html>/g)?.length, 1, 'one HTML document');
  t.equal(page.match(/Suite run report/g)?.length, 5, "every suite's report on the page");
  t.match(page, /id="s5-conv-0"/);
  t.equal(new Set(page.match(/ id="[^"]+"/g)).size, page.match(/ id="[^"]+"/g)?.length, 'no element id twice');
  t.equal((JSON.parse(await readFile(json, 'utf8')) as unknown[]).length, 5);
  t.match(result.stdout, /basic \(examples\/basic\.yaml\) — agent:coach · revision 2 \(Published\) · run label run-[0-9a-f]{8} · seed \d+/);
  t.match(result.stdout, /✓ tool lookup_order/);
  t.notMatch(result.stdout, /✗/);
  t.match(result.stdout, /✓ 5 of 5 suites passed/);
  // Simulated lines are marked as such; each criterion with ✓ and the judge's reasoning.
  t.match(result.stdout, /> \[simulated\] My order number is 12345\./);
  t.match(result.stdout, /✓ delivery_date: The agent gave a delivery date — The agent named a date/);
  t.match(result.stdout, /✓ turn_1: The agent remembered Dana's order from the earlier visit — The agent recalled the earlier visit/);

  const { valid, doc: report } = await readJunit(out);
  t.equal(valid, true, 'the JUnit file is well-formed XML');
  t.match(report, { tests: '23', failures: '0', errors: '0', skipped: '0' });
  t.same(
    report.testsuite.map((suite: Json) => [suite.name, suite.tests, suite.failures]),
    [
      ['basic', '4', '0'],
      ['returning user', '4', '0'],
      ['memory fixture', '2', '0'],
      ['simulated user', '5', '0'],
      ['simulated returning user', '8', '0'],
    ],
  );
  t.same(
    report.testsuite[3].testcase.map((c: Json) => c.name),
    [
      'delivery date / turn 1: #intro',
      'delivery date / turn 2: [simulated] Find out when my order will be delivered.',
      'delivery date / turn 3: [simulated] My order number is 12345.',
      'delivery date / criterion delivery_date: The agent gave a delivery date',
      'delivery date / criterion criterion_2: The agent said "delivered"',
    ],
    'a testcase per turn and per criterion',
  );
  t.same(
    report.testsuite[0].testcase.map((c: Json) => c.name),
    [
      'order and size / turn 1: #intro',
      'order and size / turn 2: Where is my order?',
      'order and size / turn 3: Which size fits me?',
      'order and size / turn 4: Thanks, bye',
    ],
  );
  t.equal(report.testsuite[0].testcase[0].classname, 'basic');

  // The returning user: one device, twice, the first visit backdated.
  const alice = s.engine.record.connections.filter((c) => c.settings.deviceId === 'mcp:example-returning-alice');
  t.same(
    alice.map((c) => c.settings.timeOffset),
    ['-P10D', undefined],
  );
  t.same(
    alice.map((c) => c.settings.timeZone),
    ['Europe/Prague', 'Europe/Prague'],
  );
  // The memory fixture was restored before its conversation.
  const fixture = JSON.parse(await readFile('examples/fixtures/alice-memory.json', 'utf8'));
  const restore = s.engine.record.memoryRequests.find((r) => r.path === '/api/memory/restore');
  t.same(restore?.body, { units: fixture.units });
});

t.test('a failing suite: ✗ with the evidence, exit 1, escaped JUnit', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(300)) } });
  const dir = t.testdir({
    'failing.yaml': `agent: coach
name: cartoons & <friends>
conversations:
  - name: chase "scene"
    turns:
      - line: "#intro"
        expect:
          text_matches: "How can I help"
      - line: Tom & Jerry <3 "quotes" 'apos'
        expect:
          text_contains: Spike
          tool: lookup_order
  - name: stuck
    turns:
      - line: sim:hang
      - line: never sent
`,
  });
  const out = join(dir, 'junit.xml');
  const result = await cli('run', [join(dir, 'failing.yaml'), `--gateway=${s.url}`, `--junit=${out}`]);
  t.equal(result.code, 1, result.stderr);
  t.match(result.stdout, /✓ text_matches \/How can I help\//);
  const lacksSpike = `the text "You said: Tom & Jerry <3 \\"quotes\\" 'apos' Anything else?" lacks "Spike"`;
  t.match(result.stdout, `✗ text_contains "Spike" — ${lacksSpike}`);
  t.match(result.stdout, /✗ tool "?lookup_order"? — tools called: none/);
  t.match(result.stdout, /never sent +\(skipped: turn 1 did not end with its own exit \(outcome timeout\)\)/);
  t.match(result.stdout, /✗ FAILED · 2 conversations \(2 failed\)/);
  t.match(result.stdout, /✗ 0 of 1 suite passed/);

  const { valid, doc: report } = await readJunit(out);
  t.equal(valid, true, 'the JUnit file is well-formed XML');
  t.match(report, { tests: '4', failures: '2', errors: '0', skipped: '1' });
  const suite = report.testsuite[0];
  t.equal(suite.name, 'cartoons & <friends>');
  const [intro, tom, hang, skipped] = suite.testcase;
  t.equal(intro.classname, 'cartoons & <friends>');
  t.notOk(intro.failure, 'a passing turn has no failure');
  t.equal(tom.name, `chase "scene" / turn 2: Tom & Jerry <3 "quotes" 'apos'`);
  t.equal(tom.failure.message, `text_contains "Spike": ${lacksSpike}; tool lookup_order: tools called: none`);
  t.equal(tom.failure.type, 'expectation');
  t.match(tom.failure['#text'], /agent: You said: Tom & Jerry <3/);
  t.match(hang.failure.message, /the turn ends with its own exit: the turn ended with outcome timeout/);
  t.match(skipped.skipped.message, /did not end with its own exit/);
  t.equal(skipped.name, 'stuck / turn 2: never sent');
});

t.test('--json -: a monitored run as its CronJob runs it prints the text report, then its JSON, then the verdict', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir({
    'smoke.yaml':
      'agent: coach\nname: smoke\nconversations:\n  - name: greets\n    turns:\n' +
      '      - line: hello\n        expect:\n          text_matches: "You said"\n',
  });
  const result = await cli('run', [
    join(dir, '*.yaml'),
    '--json',
    '-',
    '--agent',
    'coach',
    '--gateway',
    s.url,
    '--monitor',
    'coach-smoke',
    '--repeat',
    '2',
  ]);
  t.equal(result.code, 0, result.stderr);
  const lines = result.stdout.split('\n');
  const [open, close] = [lines.indexOf('['), lines.indexOf(']')];
  t.ok(open > 0 && close > open, 'the JSON array stands on lines of its own');
  t.match(lines.slice(0, open).join('\n'), /smoke \(.*smoke\.yaml\) — agent:coach/, 'the text report first');
  const [report] = JSON.parse(lines.slice(open, close + 1).join('\n')) as Json[];
  t.equal(report!.name, 'smoke');
  t.same(report!.monitor, { name: 'coach-smoke', recorded: 2, dropped: 0 }, 'the monitored run, as the gateway recorded it');
  t.equal(report!.conversations[0].attempts.length, 2);
  t.equal(lines.slice(close + 1).join('\n'), '✓ 1 of 1 suite passed\n', 'the verdict last');
  t.notMatch(result.stderr, /wrote/, 'no file named');
});

t.test('suite problems stop the run before anything is sent: exit 2, the line named', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir({
    'good.yaml': 'agent: coach\nconversations:\n  - turns:\n      - line: "#intro"\n',
    'bad.yaml': 'agent: coach\nconversations:\n  - turns:\n      - line: hi\n        expect:\n          tool: [a, b]\n',
    'nofixture.yaml':
      'agent: coach\ndevice_ref: dora\nmemory:\n  confirm: true\n  restore: missing.json\nconversations:\n  - turns:\n      - line: hi\n',
  });
  const out = join(dir, 'reports', 'junit.xml');
  const result = await cli('run', [
    join(dir, 'good.yaml'),
    join(dir, 'bad.yaml'),
    join(dir, 'nofixture.yaml'),
    'nowhere.yaml',
    '--gateway',
    s.url,
    '--junit',
    out,
    '--html',
    join(dir, 'reports', 'run.html'),
    '--json',
    join(dir, 'reports', 'run.json'),
  ]);
  t.equal(result.code, 2);
  t.match(result.stderr, `${join(dir, 'bad.yaml')}:6: conversations[0].turns[0].expect.tool must be a string`);
  t.match(result.stderr, new RegExp(`nofixture\\.yaml:5: memory\\.restore: cannot read missing\\.json as JSON`));
  t.match(result.stderr, /nowhere\.yaml: cannot read the suite: ENOENT/);
  t.match(result.stderr, /3 problems in the suites; nothing was run\./);
  t.equal(result.stdout, '✗ could not run any of 4 suites: suite_invalid, not_run\n', 'the last line: could not run, never a ✓');
  // Every report asked for is written, and named.
  for (const file of ['junit.xml', 'run.html', 'run.json'])
    t.match(result.stderr, `wrote ${relative(process.cwd(), join(dir, 'reports', file))}\n`);
  const json = JSON.parse(await readFile(join(dir, 'reports', 'run.json'), 'utf8')) as Json[];
  t.match(
    json.map((r) => [r.name, r.error.error]),
    [
      ['good', 'not_run'],
      ['bad', 'suite_invalid'],
      ['nofixture', 'suite_invalid'],
      ['nowhere', 'suite_invalid'],
    ],
    'the JSON: each suite with why it did not run',
  );
  const page = await readFile(join(dir, 'reports', 'run.html'), 'utf8');
  t.match(page, /<title>✗ could not run · 4 of 4 suites could not run<\/title>/);
  t.match(page, /expect\.tool must be a string/);
  t.notMatch(page.split('<body>')[1], /✓/, 'nothing green');
  // CI's report step still finds a file: an <error> per suite, saying why it did not run.
  const { valid, doc } = await readJunit(out);
  t.equal(valid, true, 'the JUnit file is well-formed XML');
  t.match(doc, { tests: '4', errors: '4', failures: '0' });
  const errorOf = (name: string) => doc.testsuite.find((suite: Json) => suite.name === name).testcase[0].error;
  t.match(errorOf('bad'), { type: 'suite_invalid', message: /bad\.yaml:6: conversations\[0\]\.turns\[0\]\.expect\.tool must be a string/ });
  t.match(errorOf('nofixture'), { type: 'suite_invalid', message: /memory\.restore: cannot read missing\.json/ });
  t.match(errorOf('nowhere'), { type: 'suite_invalid', message: /cannot read the suite/ });
  t.match(errorOf('good'), { type: 'not_run', message: /problems in other suites/ });
  t.equal(noEngine(s), 0, 'nothing reached the engine');
  t.equal(s.platform.requests.length, 0, 'nor the platform');
});

t.test('usage and HTTP problems: exit 2', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir({ 'ok.yaml': 'agent: coach\nconversations:\n  - turns:\n      - line: "#intro"\n' });
  const suite = join(dir, 'ok.yaml');

  const help = await cli('run', ['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: agent-test-gateway run <suite\.yaml>…/);
  const none = await cli('run', []);
  t.equal(none.code, 2);
  t.match(none.stderr, /name at least one suite file/);
  const unknown = await cli('run', [suite, '--junt', 'x.xml']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown option --junt/);
  const noTokenOut = join(dir, 'no-token.xml');
  const noToken = await cli('run', [suite, '--gateway', s.url, '--junit', noTokenOut], { AGENT_TEST_GATEWAY_TOKEN: '' });
  t.equal(noToken.code, 2);
  t.match(noToken.stderr, /set AGENT_TEST_GATEWAY_TOKEN/);
  t.match((await readJunit(noTokenOut)).doc.testsuite[0].testcase[0].error, { type: 'no_token' });
  const badUrl = await cli('run', [suite, '--gateway', 'localhost:8080']);
  t.equal(badUrl.code, 2);
  t.match(badUrl.stderr, /--gateway must be an http:\/\/ or https:\/\/ URL/);

  const out = join(dir, 'junit.xml');
  const forbidden = await cli('run', [suite, '--gateway', s.url, '--junit', out], { AGENT_TEST_GATEWAY_TOKEN: 'outsider-token' });
  t.equal(forbidden.code, 2);
  t.match(forbidden.stderr, /ok\.yaml: HTTP 403 forbidden: /);
  const { valid, doc: report } = await readJunit(out);
  t.equal(valid, true, 'the JUnit file is well-formed XML');
  t.match(report, { tests: '1', errors: '1' });
  t.match(report.testsuite[0].testcase[0].error, { type: 'forbidden' });

  await s.app.close();
  const unreachable = await cli('run', [suite, '--gateway', s.url]);
  t.equal(unreachable.code, 2);
  t.match(unreachable.stderr, new RegExp(`cannot reach the gateway at ${s.url.replace(/\./g, '\\.')}: ECONNREFUSED`));
});

t.test('memory fixtures: restored from a file beside the suite, the snapshot after written to one', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir({
    suites: {
      'memory.yaml': `agent: coach
device_ref: erin
memory:
  restore: ../fixtures/erin.json
  confirm: true
  save: out/erin-after.json
  wait_ms: 300
conversations:
  - turns:
      - line: sim:remember:plays chess
`,
    },
    fixtures: { 'erin.json': JSON.stringify({ units: [{ kind: 'fact', text: 'likes jazz' }] }) },
  });
  const result = await cli('run', [join(dir, 'suites', 'memory.yaml'), '--gateway', s.url]);
  t.equal(result.code, 0, 'exits 0', { output: result.stdout + result.stderr });
  t.match(result.stdout, /memory of mcp:erin: restored 1 unit before the run/);
  // The path as it opens from where the command ran (the test's cwd is the repository), not relative to the suite.
  t.match(result.stdout, `memory snapshot written to ${relative(process.cwd(), join(dir, 'suites', 'out', 'erin-after.json'))}\n`);
  t.match(
    result.stdout,
    /note: The device had never connected, so the run first opened one engine session for it/,
    'the warm-up session is reported',
  );
  t.match(result.stdout, /note: Each restore was the engine's own delete-then-write/, 'the memory notes are in the report');
  t.match(result.stdout, /note: The engine aggregates a session into memory about 30 s after its connection closes.*set memory\.wait_ms/);
  const saved = JSON.parse(await readFile(join(dir, 'suites', 'out', 'erin-after.json'), 'utf8'));
  t.match(saved, { device_ref: 'mcp:erin', user_id: /^u-/ });
  t.same(
    saved.units.filter((u: { kind: string }) => u.kind === 'fact').map((u: { text: string }) => u.text),
    ['likes jazz', 'plays chess'],
    'the fixture, then what the run left behind',
  );
});

t.test("the gateway's own 400 is reported at the line of each problem", async (t) => {
  // A gateway of another version may refuse what this CLI accepts: its field paths still point at lines.
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: 'invalid_request',
          message: 'conversations[0].turns[1].line is too polite; nothing was sent to the engine',
          details: {
            problems: [
              { field: 'conversations[0].turns[1].line', rule: 'conversations[0].turns[1].line is too polite' },
              { field: 'locale', rule: 'locale is not served here' },
            ],
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const dir = t.testdir({
    'polite.yaml':
      'agent: coach\nlocale: en-GB\nconversations:\n  - turns:\n      - line: "#intro"\n      - line: Would you kindly help?\n',
  });
  const result = await cli('run', [join(dir, 'polite.yaml'), '--gateway', `http://127.0.0.1:${port}/`]);
  t.equal(result.code, 2);
  t.match(result.stderr, 'polite.yaml: HTTP 400 invalid_request:\n');
  t.match(result.stderr, `${join(dir, 'polite.yaml')}:6: conversations[0].turns[1].line is too polite`);
  t.match(result.stderr, `${join(dir, 'polite.yaml')}:2: locale is not served here`);
});

t.test('in process: main() with its output captured', async (t) => {
  const { main } = await import('../src/cli/run.js');
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(300)) } });
  const dir = t.testdir({
    'mixed.yaml': `agent: coach
conversations:
  - name: fine
    turns:
      - line: "#intro"
        expect: { text_matches: /coach/i, exit_within_ms: 5000 }
      - line: Which size?
        expect: { shown: size_chart, not_shown: size_chart }
  - name: gone
    turns:
      - line: bye
      - line: still there?
`,
  });
  let stdout = '';
  let stderr = '';
  const io = {
    env: { AGENT_TEST_GATEWAY_TOKEN: 'demo-token' },
    stdout: (text: string) => void (stdout += text),
    stderr: (text: string) => void (stderr += text),
    progress: true,
    progressEveryMs: 60_000,
    onInterrupt: () => () => undefined,
  };
  const out = join(dir, 'nested', 'junit.xml');
  const code = await main([join(dir, 'mixed.yaml'), '--gateway', s.url, '--junit', out], io);
  t.equal(code, 1, stderr);
  t.match(stdout, /✓ text_matches \/coach\/i/);
  t.match(stdout, /✗ not_shown size_chart — shown: size_chart/);
  t.match(stdout, /✗ the conversation stays open — the agent ended the conversation here/);
  t.match(stdout, /still there\? +\(skipped: the agent ended the conversation at turn 1\)/);
  t.match(stderr, /✗ mixed: fine \/ turn 2: Which size\?/, 'progress lines on a terminal');
  const { valid, doc } = await readJunit(out);
  t.equal(valid, true);
  t.match(doc, { tests: '4', failures: '2', skipped: '1' });
  t.match(doc.testsuite[0].testcase[1].failure.message, /^not_shown size_chart: shown: size_chart$/);

  t.equal(await main(['--help'], io), 0);
  t.equal(await main([join(dir, 'mixed.yaml'), '--gateway'], io), 2);
  t.match(stderr, /--gateway needs a value/);
});

t.test('exit 2 only when nothing failed but something could not run; --repeat and --agent override the suite', async (t) => {
  const { main } = await import('../src/cli/run.js');
  const s = await startStack(t, { model: true });
  const dir = t.testdir({
    'listens.yaml': `agent: coach
conversations:
  - name: dana
    simulated_user:
      persona: Dana
      goal: Find out when my order will be delivered.
      facts: { order_number: "12345" }
    expect:
      criteria: [The agent gave a delivery date]
`,
    'fails.yaml': `agent: coach
conversations:
  - turns:
      - line: hi
        expect: { tool: refund }
`,
  });
  let stdout = '';
  const io = {
    env: { AGENT_TEST_GATEWAY_TOKEN: 'demo-token' },
    stdout: (text: string) => void (stdout += text),
    stderr: () => undefined,
    progress: false,
    progressEveryMs: 60_000,
    onInterrupt: () => () => undefined,
  };
  const junit = join(dir, 'junit.xml');
  s.model!.faults = { fault: 'http_503', role: 'simulator' };
  t.equal(await main([join(dir, 'listens.yaml'), '--gateway', s.url, '--junit', junit], io), 2, 'a model failure only: could not run');
  t.match(stdout, /✗ could not go on: The simulated user could not answer: the model answered HTTP 503 \(asked twice\)/);
  const { doc } = await readJunit(junit);
  t.match(doc, { errors: '1' });
  const error = doc.testsuite[0].testcase.find((c: Json) => c.error !== undefined);
  t.match(error, { name: 'dana / could not go on', error: { type: 'model_failed' } });
  t.match(
    doc.testsuite[0].testcase.find((c: Json) => /criterion/.test(c.name)),
    { name: 'dana / criterion criterion_1: The agent gave a delivery date', skipped: { message: /^not judged/ } },
  );
  t.equal(await main([join(dir, 'listens.yaml'), join(dir, 'fails.yaml'), '--gateway', s.url], io), 1, 'a failure counts over an error');

  s.model!.faults = {};
  stdout = '';
  s.engine.reset();
  t.equal(await main([join(dir, 'listens.yaml'), '--gateway', s.url, '--repeat', '2', '--agent', 'coach.3'], io), 0);
  t.match(stdout, /— agent:coach\.3 · revision 3 \(Preview\)/, 'the report names the revision that ran');
  t.match(stdout, /1\/1 attempts passed|2\/2 attempts passed/);
  t.same(new Set(s.engine.record.connections.map((c) => c.agentKey)), new Set(['coach.3']));
  t.equal(s.engine.record.connections.length, 2, 'two attempts');
  t.equal(await main([join(dir, 'listens.yaml'), '--gateway', s.url, '--repeat', '21'], io), 2, '--repeat is checked');
});
