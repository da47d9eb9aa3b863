/**
 * Test suites: the format (validated with the line of each problem), and
 * POST /v1/agents/{agent}/runs against the real simulators.
 */

import t from 'tap';
import { request } from 'undici';
import { parseFieldPath } from '../src/suites/spec/problems.js';
import { parseHttpSuite } from '../src/suites/spec/schema.js';
import type { RunReport } from '../src/suites/report/run-report.js';
import { formatProblem, loadSuite } from '../src/suites/spec/yaml.js';
import { eventually, startStack, UUID, type Stack } from './support/stack.js';
import { scaled } from './support/time.js';
import { runPath } from './support/http.js';

const problemsOf = (text: string, file = 'suite.yaml'): string[] => {
  const loaded = loadSuite(text, file);
  return loaded.ok ? [] : loaded.problems.map(formatProblem);
};

const intro = { line: '#intro', expect: { text_matches: "^Hi, I'm coach" } };

t.test('format: problems name the field and the line', async (t) => {
  t.test('the line of a wrong type', async (t) => {
    const yaml = [
      'agent: coach',
      'conversations:',
      '  - name: shopping',
      '    turns:',
      '      - line: "#intro"',
      '      - line: hello',
      '        expect:',
      '          text_contains: hello',
      '      - line: Where is my order?',
      '        expect:',
      '          text_contains: order',
      '          tool: 42',
      '',
    ].join('\n');
    t.same(problemsOf(yaml), ['suite.yaml:12: conversations[0].turns[2].expect.tool must be a string']);
  });

  t.test('unknown fields, missing ones, YAML comments and bad values', async (t) => {
    const yaml = `agent: coach
time_offset: P10D
conversations:
  - name: a
    run_label: mine
    device_ref: "a/b"
    turns:
      - line: #intro
      - line: hi
        expct:
          tool: x
      - lin: hi
      - line: ok
        expect:
          text_matches: "(unclosed"
          text_contans: x
          exit_within_ms: -5
          ended_by_agent: "yes"
          text_contains: []
  - turns: []
  - turns:
      - line: "#exit"
`;
    const problems = problemsOf(yaml);
    const expected = [
      /^suite\.yaml:2: time_offset must be negative, e\.g\. -P10D .* date the session in the future$/,
      /^suite\.yaml:5: conversations\[0\]\.run_label can be set only at the top of the suite/,
      /^suite\.yaml:6: conversations\[0\]\.device_ref may use only letters, digits and \. _ : @ -$/,
      /^suite\.yaml:8: conversations\[0\]\.turns\[0\]\.line must be a string \(an unquoted # starts a YAML comment: .* in quotes\)$/,
      /^suite\.yaml:10: conversations\[0\]\.turns\[1\]\.expct is not a known field; did you mean expect\? .* line, expect$/,
      /^suite\.yaml:12: conversations\[0\]\.turns\[2\]\.line is required$/,
      /^suite\.yaml:12: conversations\[0\]\.turns\[2\]\.lin is not a known field; did you mean line\?/,
      /^suite\.yaml:15: conversations\[0\]\.turns\[3\]\.expect\.text_matches must be a valid regular expression/,
      /^suite\.yaml:16: conversations\[0\]\.turns\[3\]\.expect\.text_contans is not a known field; did you mean text_contains\?/,
      /^suite\.yaml:17: conversations\[0\]\.turns\[3\]\.expect\.exit_within_ms must be a positive number of milliseconds$/,
      /^suite\.yaml:18: conversations\[0\]\.turns\[3\]\.expect\.ended_by_agent must be true or false$/,
      /^suite\.yaml:19: conversations\[0\]\.turns\[3\]\.expect\.text_contains must list at least one word$/,
      /^suite\.yaml:20: conversations\[1\]\.turns must list at least one turn$/,
      /^suite\.yaml:22: conversations\[2\]\.turns\[0\]\.line may start with # only as exactly #intro/,
    ];
    t.equal(problems.length, expected.length, 'one problem per broken rule', { problems });
    for (const pattern of expected)
      t.ok(
        problems.some((p) => pattern.test(p)),
        `${pattern}`,
      );
  });

  t.test('rules that span fields', async (t) => {
    const yaml = `agent: coach
memory:
  restore: snapshot.json
conversations:
  - name: a
    turns:
      - line: "#intro"
        expect:
          ended_by_agent: true
      - line: "#intro"
  - name: a
    turns:
      - line: hi
`;
    t.same(problemsOf(yaml), [
      'suite.yaml:2: memory needs device_ref at the top of the suite: the simulated user whose memory is restored or saved',
      "suite.yaml:2: memory.confirm must be true to restore: the engine's restore is delete-then-write, " +
        "it clears the simulated user's memory before loading the snapshot",
      'suite.yaml:9: conversations[0].turns[0].expect.ended_by_agent can be true only in the last turn of a conversation: ' +
        'the turns after it could not run',
      "suite.yaml:10: conversations[0].turns[1].line may be #intro only in the first turn of a conversation: it is the agent's opening",
      'suite.yaml:11: conversations[1].name must be unique within the suite: conversations[0] is also called "a"',
    ]);
  });

  t.test('every problem at once: a duplicate name beside problems of single fields', async (t) => {
    const yaml = `agent: coach
memory:
  save: 7
conversations:
  - name: a
    turns:
      - line: hi
        expect: { tool: 3 }
      - line: "#intro"
  - name: " a "
    wait_ms: -1
    turns:
      - line: hi
`;
    t.same(problemsOf(yaml), [
      'suite.yaml:2: memory needs device_ref at the top of the suite: the simulated user whose memory is restored or saved',
      'suite.yaml:3: memory.save must be a file path: where to write the snapshot taken after the run, relative to the suite file',
      'suite.yaml:8: conversations[0].turns[0].expect.tool must be a string',
      "suite.yaml:9: conversations[0].turns[1].line may be #intro only in the first turn of a conversation: it is the agent's opening",
      'suite.yaml:10: conversations[1].name must be unique within the suite: conversations[0] is also called "a"',
      'suite.yaml:11: conversations[1].wait_ms must not be negative',
    ]);
  });

  t.test('YAML errors, an empty file, a list, a missing agent', async (t) => {
    t.match(problemsOf('agent: coach\nconversations:\n  - turns:\n      - line: "x\n'), [/^suite\.yaml:\d+: YAML: Missing closing "quote/]);
    t.match(problemsOf('agent: coach\nagent: coach\n'), [/^suite\.yaml:2: YAML: Map keys must be unique/]);
    t.same(problemsOf(''), ['suite.yaml: the file holds no suite: write agent and conversations']);
    t.match(problemsOf('- a\n'), [/^suite\.yaml:1: the suite must be an object/]);
    t.same(problemsOf('conversations:\n  - turns:\n      - line: hi\n'), ['suite.yaml:1: agent is required']);
    t.same(problemsOf('agent: coach/x\nconversations:\n  - turns:\n      - line: hi\n'), [
      'suite.yaml:1: agent must be an agent ref such as coach, or ref.N for revision N such as coach.7',
    ]);
  });

  t.test('a valid suite, normalized', async (t) => {
    const loaded = loadSuite(
      `agent: coach.3
name: shop
locale: de_DE
device_ref: alice
time_zone: Europe/Prague
run_label: nightly-1
memory: { restore: fixtures/a.json, confirm: true, save: out/a.json, wait_ms: 100 }
conversations:
  - turns:
      - line: " #intro "
        expect: { text_contains: order, text_matches: /hi/i }
  - name: bob today
    device_ref: client:bob
    time_offset: -P1D
    time_zone: null
    wait_ms: 5
    turns:
      - line: hi
        expect:
`,
      'suite.yaml',
    );
    t.ok(loaded.ok);
    if (!loaded.ok) return;
    t.match(loaded.suite, {
      agent: { ref: 'coach', revision: 3, key: 'coach.3' },
      name: 'shop',
      runLabel: 'nightly-1',
      memory: { deviceRef: 'mcp:alice', restore: 'fixtures/a.json', save: 'out/a.json', waitMs: 100 },
      conversations: [
        {
          name: 'conversation 1',
          connect: { locale: 'de-DE', device_ref: 'mcp:alice', time_zone: 'Europe/Prague', time_offset: undefined },
          waitMs: 0,
          turns: [{ line: '#intro', expect: { text_contains: ['order'], text_matches: '/hi/i' } }],
        },
        {
          name: 'bob today',
          connect: { locale: 'de-DE', device_ref: 'mcp:client:bob', time_zone: null, time_offset: '-P1D' },
          waitMs: 5,
          turns: [{ line: 'hi', expect: {} }],
        },
      ],
    });
    t.equal(loaded.lineOf(['conversations', 1, 'wait_ms']), 16);
  });

  t.test('the HTTP form takes the snapshot inline and save as a flag', async (t) => {
    const ok = parseHttpSuite({
      device_ref: 'alice',
      memory: { restore: { units: [{ kind: 'fact' }] }, confirm: true, save: true },
      conversations: [{ turns: [{ line: 'hi' }] }],
    });
    t.ok(ok.ok);
    if (ok.ok) t.match(ok.suite.memory, { restore: { units: [{ kind: 'fact' }] }, save: true, waitMs: 0 });
    const bad = parseHttpSuite({
      device_ref: 'alice',
      memory: { restore: 'x.json', confirm: true },
      conversations: [{ turns: [{ line: 'hi' }] }],
    });
    t.match(bad, { ok: false, problems: [{ field: 'memory.restore', rule: /^memory\.restore must be a snapshot/ }] });
  });
});

t.test('a passing run: transcript, evidence, totals, sessions, run label, plain closes', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', runPath(), {
    body: {
      agent: 'coach',
      name: 'shop',
      conversations: [
        {
          name: 'order',
          turns: [
            intro,
            {
              line: 'Where is my order?',
              expect: { tool: 'lookup_order', text_contains: ['order', 'anything else'], not_shown: 'size_chart' },
            },
            { line: 'Which size fits?', expect: { shown: 'size_chart', exit_within_ms: scaled(1000) } },
            { line: 'bye', expect: { ended_by_agent: true, text_matches: '/goodbye/i' } },
          ],
        },
        { name: 'plain', turns: [{ line: 'hello there', expect: { text_matches: 'You said: hello there', ended_by_agent: false } }] },
      ],
    },
  });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const report = answer.body as RunReport;
  t.equal(report.passed, true);
  t.match(report, { agent: 'agent:coach', name: 'shop', memory: null, parallelism: 2 });
  t.match(report.run_id, UUID);
  t.equal(report.run_label, `run-${report.run_id.slice(0, 8)}`, 'a default run label from the run id');
  t.same(report.totals, {
    conversations: { total: 2, passed: 2, flaky: 0, failed: 0, error: 0, cancelled: 0 },
    attempts: { total: 2, passed: 2, failed: 0, error: 0, invalid: 0, cancelled: 0 },
    turns: { total: 5, passed: 5, failed: 0, skipped: 0 },
    expectations: { total: 10, passed: 10, failed: 0, skipped: 0 },
    criteria: { total: 0, passed: 0, failed: 0, skipped: 0 },
  });
  t.match(report, { repeat: 1, pass_rate: 1, revision: { ref: 'coach', revision: 2, state: 'Published' } });
  t.type(report.seed, 'number');
  t.same(report.model_usage, { calls: 0, prompt_tokens: 0, completion_tokens: 0, duration_ms: 0 });
  t.match(report.conversations[0], { name: 'order', index: 0, status: 'passed', passed: true, pass_rate: 1, attempts_total: 1 });
  const [order, plain] = report.conversations.map((c) => c.attempts[0]!);
  t.match(order!.turns[0], {
    index: 1,
    line: '#intro',
    source: 'script',
    status: 'passed',
    outcome: 'exit',
    text: "Hi, I'm coach. How can I help?",
    tools: [],
    shown: [],
  });
  t.type(order!.turns[0]!.duration_ms, 'number');
  t.match(order!.turns[1], {
    tools: ['lookup_order'],
    text: 'You said: Where is my order? Anything else?',
    expectations: [
      { kind: 'text_contains', expected: ['order', 'anything else'], passed: true, evidence: /the text contains "order", "anything else"/ },
      { kind: 'tool', expected: 'lookup_order', passed: true, evidence: 'tools called: lookup_order', actual: ['lookup_order'] },
      { kind: 'not_shown', passed: true, evidence: 'shown: none' },
    ],
  });
  t.match(order!.turns[2], {
    shown: ['size_chart'],
    expectations: [
      { kind: 'shown', passed: true },
      { kind: 'exit_within_ms', passed: true },
    ],
  });
  t.match(order!.turns[3], { ended_by_agent: true, text: 'Goodbye!' });
  t.match(order, { ended_by_agent: true, status: 'passed', stop_reason: 'agent_ended', attempt: 1 });
  t.match(order!.device_ref, /^mcp:[0-9a-f-]{36}$/);
  t.match(plain!.turns[0]!.expectations, [
    { kind: 'text_matches', passed: true },
    { kind: 'ended_by_agent', expected: false, passed: true },
  ]);
  t.same(report.session_ids, [order!.session_id, plain!.session_id]);
  t.ok(report.notes.some((n) => /plain socket close, never #exit/.test(n)));

  const connections = s.engine.record.connections;
  t.equal(connections.length, 2, 'one socket per conversation');
  t.same(connections.map((c) => c.sessionId).sort(), [...report.session_ids].sort());
  for (const c of connections) t.equal(c.query.runLabel, report.run_label, 'the run label tags every session');
  await eventually(() => connections.every((c) => c.closeCode !== undefined));
  const plainConn = connections.find((c) => c.sessionId === plain!.session_id)!;
  t.equal(plainConn.closeCode, 1000, 'the run closed its conversation plainly');
  t.equal(plainConn.closedBy, 'client');
  t.notOk(
    connections.some((c) => c.frames.includes('#exit')),
    'never #exit',
  );
  t.same(
    s.app.conversationRegistry.list('u-demo').filter((c) => c.state !== 'closed'),
    [],
    'nothing left open',
  );
});

t.test('failing expectations are reported with their evidence, still 200', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', runPath('coach'), {
    body: {
      run_label: 'ci-42',
      conversations: [
        {
          name: 'wrong',
          turns: [
            { line: '#intro', expect: { text_matches: '^Goodbye', exit_within_ms: 1 } },
            {
              line: 'Where is my order?',
              expect: { tool: 'refund', shown: 'size_chart', text_contains: ['order', 'refund'], ended_by_agent: true },
            },
          ],
        },
      ],
    },
  });
  t.equal(answer.status, 200);
  const report = answer.body as RunReport;
  t.equal(report.passed, false);
  t.equal(report.run_label, 'ci-42');
  t.equal(s.engine.record.connections[0]!.query.runLabel, 'ci-42');
  const [first, second] = report.conversations[0]!.attempts[0]!.turns;
  t.match(first!.expectations[0], {
    kind: 'text_matches',
    passed: false,
    evidence: `the text "Hi, I'm coach. How can I help?" does not match /^Goodbye/`,
    actual: "Hi, I'm coach. How can I help?",
  });
  t.equal(first!.status, 'failed');
  t.match(second!.expectations, [
    { kind: 'text_contains', passed: false, evidence: 'the text "You said: Where is my order? Anything else?" lacks "refund"' },
    { kind: 'tool', passed: false, evidence: 'tools called: lookup_order' },
    { kind: 'shown', passed: false, evidence: 'shown: none' },
    { kind: 'ended_by_agent', passed: false, evidence: 'the agent did not end the conversation' },
  ]);
  t.equal(report.totals.expectations.failed, first!.expectations.filter((e) => !e.passed).length + 4);
  t.equal(report.totals.conversations.failed, 1);
});

t.test('a turn that fails fails its expectations and skips the rest of its conversation', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(300)) } });
  const answer = await s.call('POST', runPath(), {
    body: {
      conversations: [
        {
          name: 'hangs',
          turns: [intro, { line: 'sim:hang', expect: { text_contains: 'think' } }, { line: 'still there?', expect: { tool: 'x' } }],
        },
        { name: 'engine closes', turns: [{ line: 'sim:close-1011' }, { line: 'after' }] },
        { name: 'agent leaves early', turns: [{ line: 'bye' }, { line: 'one more thing' }] },
        { name: 'fine', turns: [intro] },
      ],
    },
  });
  t.equal(answer.status, 200);
  const report = answer.body as RunReport;
  t.equal(report.passed, false);
  const [hangs, closes, early, fine] = report.conversations.map((c) => c.attempts[0]!);
  t.match(hangs!.turns[1], {
    status: 'failed',
    outcome: 'timeout',
    text: 'Let me think about that…',
    expectations: [
      {
        kind: 'turn_completed',
        passed: false,
        evidence: new RegExp(`^the turn ended with outcome timeout after \\d+ ms, not with its own exit: .*${scaled(300)} ms budget`),
      },
      { kind: 'text_contains', passed: false, evidence: 'not met: the turn did not end with its own exit (outcome timeout)' },
    ],
  });
  t.match(hangs!.turns[2], {
    status: 'skipped',
    outcome: null,
    skipped_reason: 'turn 2 did not end with its own exit (outcome timeout)',
    expectations: [{ kind: 'tool', passed: null }],
  });
  t.match(closes!.turns, [{ status: 'failed', outcome: 'engine_closed' }, { status: 'skipped' }]);
  t.match(early!.turns[0], {
    status: 'failed',
    ended_by_agent: true,
    expectations: [{ kind: 'conversation_continues', passed: false, evidence: 'the agent ended the conversation here' }],
  });
  t.match(early!.turns[1], { status: 'skipped', skipped_reason: 'the agent ended the conversation at turn 1' });
  t.equal(fine!.status, 'passed');
  t.match(hangs, { status: 'failed', stop_reason: 'turn_failed' });
  t.same(report.totals.turns, { total: 8, passed: 2, failed: 3, skipped: 3 });
  t.same(report.totals.expectations, { total: 7, passed: 2, failed: 4, skipped: 1 });
  const hangConn = s.engine.record.connections.find((c) => c.sessionId === hangs!.session_id)!;
  t.same(hangConn.frames, ['#intro', 'sim:hang'], 'nothing sent after the failed turn');
  await eventually(() => hangConn.closeCode !== undefined);
  t.equal(hangConn.closeCode, 1000);
});

t.test('conversations sharing a device_ref run one after the other, in order, with their settings', async (t) => {
  const s = await startStack(t);
  const answer = await s.call('POST', runPath(), {
    body: {
      device_ref: 'alice',
      time_zone: 'Europe/Prague',
      locale: 'de_DE',
      conversations: [
        { name: 'ten days ago', time_offset: '-P10D', turns: [intro, { line: 'sim:delay:50' }] },
        { name: 'someone else', device_ref: 'bob', turns: [{ line: 'sim:delay:50' }] },
        { name: 'today', turns: [intro] },
      ],
    },
  });
  const report = answer.body as RunReport;
  t.equal(report.passed, true, 'the run passed', { report });
  const [past, other, today] = report.conversations.map((c) => c.attempts[0]!);
  t.match(past, { device_ref: 'mcp:alice', time_offset: '-P10D', time_zone: 'Europe/Prague', locale: 'de-DE' });
  t.match(other, { device_ref: 'mcp:bob', time_offset: null });
  t.match(today, { device_ref: 'mcp:alice', time_offset: null });
  const pastEnd = Date.parse(past!.started_at!) + past!.duration_ms;
  t.ok(Date.parse(today!.started_at!) >= pastEnd, 'the returning conversation started after the first ended');
  t.ok(Date.parse(other!.started_at!) < pastEnd, 'another device ran alongside');
  const bySession = new Map(s.engine.record.connections.map((c) => [c.sessionId, c]));
  t.match(bySession.get(past!.session_id!)!.settings, {
    deviceId: 'mcp:alice',
    timeOffset: '-P10D',
    timeZone: 'Europe/Prague',
    locale: 'de-DE',
  });
  t.match(bySession.get(today!.session_id!)!.settings, { deviceId: 'mcp:alice', timeOffset: undefined });
  t.equal(s.engine.devices.size, 2, 'alice is one engine user, coming back');
});

t.test('memory: restore before (confirmed), snapshot after', async (t) => {
  const s = await startStack(t);
  const fixture = { units: [{ kind: 'fact', text: 'likes tea' }] };
  const unconfirmed = await s.call('POST', runPath(), {
    body: { device_ref: 'carol', memory: { restore: fixture }, conversations: [{ turns: [intro] }] },
  });
  t.equal(unconfirmed.status, 400);
  t.equal(unconfirmed.body.error, 'confirmation_required');
  t.match(unconfirmed.body.message, /"confirm": true.*delete-then-write.*Nothing was sent/);
  t.equal(s.engine.record.memoryRequests.length + s.engine.record.connections.length, 0, 'nothing reached the engine');

  const answer = await s.call('POST', runPath(), {
    body: {
      device_ref: 'carol',
      memory: { restore: fixture, confirm: true, save: true, wait_ms: 300 },
      conversations: [{ name: 'remembers', turns: [intro, { line: 'sim:remember:owns a cat' }] }],
    },
  });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const report = answer.body as RunReport;
  t.equal(report.passed, true);
  t.match(report.memory, { device_ref: 'mcp:carol', restored: 1, error: null });
  t.ok(
    report.memory!.notes.some((n) => /never connected/.test(n)),
    'the warm-up session is reported',
  );
  const facts = report.memory!.snapshot!.units.filter((u) => u.kind === 'fact').map((u) => u.text);
  t.same(facts, ['likes tea', 'owns a cat'], 'the restored unit, then what the run left behind');
  t.equal(report.memory!.snapshot!.unit_count, report.memory!.snapshot!.units.length);

  const requests = s.engine.record.memoryRequests.map((r) => `${r.method} ${r.path}`);
  t.same(
    requests.slice(0, 3).map(decodeURIComponent),
    ['GET /api/devices/mcp:carol/user', 'GET /api/devices/mcp:carol/user', 'POST /api/memory/restore'],
    'an unknown device, the device after the warm-up, the restore',
  );
  const restoreAt = s.engine.record.memoryRequests[2]!.at;
  const [warmUp, conversation] = s.engine.record.connections;
  t.same(warmUp!.frames, [], 'the warm-up session sent no line');
  t.equal(warmUp!.query.runLabel, report.run_label);
  t.ok(conversation!.openedAt >= restoreAt, 'the conversation started after the restore');

  // A device that has connected before is restored directly.
  s.engine.reset();
  const again = await s.call('POST', runPath(), {
    body: { device_ref: 'carol', memory: { restore: fixture, confirm: true }, conversations: [{ turns: [intro] }] },
  });
  t.equal(again.body.passed, true);
  t.equal(s.engine.record.connections.length, 1, 'no warm-up for a known device');
  t.equal(again.body.memory.snapshot, null);
});

t.test('input is validated before anything is asked or sent', async (t) => {
  const s = await startStack(t);
  const cases: Array<[unknown, RegExp]> = [
    [
      { conversations: [{ turns: [{ line: 'hi', expect: { tool: 42 } }] }] },
      /^conversations\[0\]\.turns\[0\]\.expect\.tool must be a string; nothing was sent to the engine$/,
    ],
    [{ conversations: [] }, /^conversations must list at least one conversation/],
    [{ conversations: [{ turns: [{ line: '#exit' }] }] }, /^conversations\[0\]\.turns\[0\]\.line may start with # only as exactly #intro/],
    [{ agent: 'a b', conversations: [{ turns: [{ line: 'hi' }] }] }, /^agent /],
    [{ conversations: [{ turns: [{ line: 'hi' }] }], bogus: 1 }, /^bogus is not a known field/],
    [[1, 2], /^the suite must be an object/],
    [
      { device_ref: 'x', memory: { save: 'out.json' }, conversations: [{ turns: [{ line: 'hi' }] }] },
      /^memory\.save must be true or false/,
    ],
  ];
  for (const [body, message] of cases) {
    const answer = await s.call('POST', runPath(), { body });
    t.equal(answer.status, 400, JSON.stringify(body));
    t.equal(answer.body.error, 'invalid_request');
    t.match(answer.body.message, message);
    t.ok(Array.isArray(answer.body.details.problems) && answer.body.details.problems[0].field);
  }
  const empty = await s.call('POST', runPath(), {});
  t.equal(empty.status, 400);
  const first = (await s.call('POST', runPath(), { body: { conversations: [{ turns: [{ line: 'hi', expect: { tool: 42 } }] }] } })).body;
  t.same(first.details.problems[0], {
    field: 'conversations[0].turns[0].expect.tool',
    rule: 'conversations[0].turns[0].expect.tool must be a string',
  });
  t.same(parseFieldPath(first.details.problems[0].field), ['conversations', 0, 'turns', 0, 'expect', 'tool']);
  const badAgent = await s.call('POST', runPath('a b'), { body: { conversations: [{ turns: [{ line: 'hi' }] }] } });
  t.equal(badAgent.status, 400);
  t.equal(s.engine.record.connections.length, 0, 'nothing reached the engine');
  t.equal(s.platform.requests.length, 0, 'nor the platform');
});

t.test('authorization is as for conversations', async (t) => {
  const s = await startStack(t);
  const body = { conversations: [{ turns: [intro] }] };
  t.equal((await s.call('POST', runPath(), { body, token: null })).status, 401);
  const outsider = await s.call('POST', runPath(), { body, token: 'outsider-token' });
  t.equal(outsider.status, 403);
  const hidden = await s.call('POST', runPath('hidden'), { body });
  t.equal(hidden.status, 403);
  const draft = await s.call('POST', runPath('draft-only'), { body });
  t.equal(draft.status, 409);
  t.equal(draft.body.error, 'no_published_revision');
  t.equal(s.engine.record.connections.length, 0);
  const preview = await s.call('POST', runPath('coach.3'), { body });
  await s.app.conversationRegistry.drain(0);
  const draining = await s.call('POST', runPath(), { body });
  t.equal(draining.status, 503);
  t.equal(draining.body.error, 'shutting_down');
  t.equal(preview.status, 200);
  t.equal(preview.body.agent, 'agent:coach.3');
  t.equal(s.engine.record.connections[0]!.agentKey, 'coach.3');
});

t.test('a turn the gateway cannot run is an error in the report', async (t) => {
  const s = await startStack(t);
  s.engine.faults.handshake = 503;
  const answer = await s.call('POST', runPath(), { body: { conversations: [{ name: 'down', turns: [intro, { line: 'hi' }] }] } });
  t.equal(answer.status, 200);
  t.match(answer.body.conversations[0], {
    status: 'error',
    attempts: [{ status: 'error', stop_reason: 'error', error: { error: 'engine_unavailable' } }],
  });
  t.match(answer.body.conversations[0].attempts[0].turns, [
    {
      status: 'failed',
      outcome: 'error',
      error: { error: 'engine_unavailable' },
      expectations: [
        { kind: 'turn_completed', passed: false, evidence: /^the turn did not run: The engine answered/ },
        { kind: 'text_matches', passed: false },
      ],
    },
    { status: 'skipped', skipped_reason: 'turn 1 did not run (engine_unavailable)' },
  ]);
  t.same(answer.body.session_ids, []);
  t.equal(answer.body.passed, false);
});

/** POSTs with Accept: application/x-ndjson and returns the parsed lines. */
async function streamRun(s: Stack, body: unknown, signal?: AbortSignal) {
  const res = await request(s.url + runPath(), {
    method: 'POST',
    headers: { accept: 'application/x-ndjson', 'content-type': 'application/json', authorization: 'Bearer demo-token' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    type: String(res.headers['content-type']),
    location: res.headers.location,
    lines: text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  };
}

t.test('streamed: each turn as it is evaluated, then the report', async (t) => {
  const s = await startStack(t);
  const streamed = await streamRun(s, {
    conversations: [{ name: 'a', turns: [intro, { line: 'Where is my order?', expect: { tool: 'lookup_order' } }] }],
  });
  t.equal(streamed.status, 200);
  t.match(streamed.type, /application\/x-ndjson/);
  t.equal(streamed.lines.length, 4);
  t.match(streamed.lines[0], { run: { id: UUID, status: 'running', kind: 'run', conversations: 1, sessions_budget: 1 } }, 'the run first');
  t.equal(streamed.location, `/v1/runs/${streamed.lines[0].run.id}`, 'the answer names the run');
  t.match(streamed.lines[1], {
    turn: {
      conversation: 'a',
      conversation_index: 0,
      attempt: 1,
      session_id: UUID,
      turn: { index: 1, status: 'passed', source: 'script' },
    },
  });
  t.match(streamed.lines[2], { turn: { turn: { index: 2, tools: ['lookup_order'] } } });
  t.match(streamed.lines[3], { report: { run_id: streamed.lines[0].run.id, passed: true, totals: { turns: { total: 2 } } } });
  const invalid = await streamRun(s, { conversations: [] });
  t.equal(invalid.status, 400, 'errors before the first turn are plain JSON');
  t.match(invalid.lines[0], { error: 'invalid_request' });
});

t.test('a caller hanging up cancels the run when nobody follows it within the grace, and closes its conversations', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '10000', RUN_FOLLOW_GRACE_MS: '200' } });
  const abort = new AbortController();
  const pending = s
    .call('POST', runPath(), {
      body: { conversations: [{ turns: [intro, { line: 'sim:hang' }, { line: 'never sent' }] }] },
      signal: abort.signal,
    })
    .catch((err: Error) => err);
  await eventually(() => s.engine.record.connections[0]?.frames.includes('sim:hang') === true);
  abort.abort();
  t.type(await pending, Error);
  const conn = s.engine.record.connections[0]!;
  await eventually(() => conn.closeCode !== undefined);
  t.equal(conn.closeCode, 1000);
  await new Promise((r) => setTimeout(r, 50));
  t.same(conn.frames, ['#intro', 'sim:hang'], 'the rest was skipped');
  t.equal(s.engine.record.connections.length, 1);
  const [run] = (await s.call('GET', '/v1/runs')).body.runs;
  t.match(run, { status: 'cancelled', kind: 'run' });
  const report = (await s.call('GET', `/v1/runs/${run.id}`)).body.report;
  t.match(report.notes[0], /cancelled: nobody followed it for 0.2 s after its last follower hung up/);
});
