/**
 * `expect.memory`: what a conversation left in the simulated user's memory, checked through the
 * runs route against the engine simulator, whose aggregation delay (how long after a plain close
 * a session lands in memory) and the gateway's poll interval (MEMORY_POLL_MS) are set short.
 */

import t from 'tap';
import type { RunReport } from '../src/suites/report/run-report.js';
import { startStack, type Stack } from './support/stack.js';
import { comparePath, runPath } from './support/http.js';
import { scaled } from './support/time.js';
import { cli } from './support/cli.js';
import { mcpClient, textOf } from './support/mcp.js';
import type { Json } from './support/http.js';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { runReportHtml } from '../src/suites/report/html/render.js';
import { junitXml } from '../src/suites/report/junit.js';
import { renderReport } from '../src/suites/report/text.js';

const POLL_MS = '20';
const WAIT_MS = scaled(3000);

const memoryStack = (t: Parameters<typeof startStack>[0], aggregationMs = 50) =>
  startStack(t, { env: { MEMORY_POLL_MS: POLL_MS }, engine: { sessionEndDelayMs: aggregationMs } });

const run = async (s: Stack, body: Record<string, unknown>, agent = 'coach'): Promise<RunReport> => {
  const answer = await s.call('POST', runPath(agent), { body });
  if (answer.status !== 200) throw new Error(`expected 200, got ${answer.status}: ${answer.text}`);
  return answer.body as RunReport;
};

t.test('a fact left behind passes contains; a card number fails not_contains; removed units are in the diff', async (t) => {
  const s = await memoryStack(t);
  const fixture = { units: [{ kind: 'fact', text: 'wears shoe size 42' }] };
  const report = await run(s, {
    device_ref: 'dana',
    memory: { restore: fixture, confirm: true },
    conversations: [
      {
        name: 'tells the size',
        turns: [{ line: '#intro' }, { line: 'sim:remember:wears shoe size 44' }, { line: 'sim:forget:size 42' }],
        expect: { memory: { contains: ['shoe size 44'], not_contains: 'size 42', added_at_least: 1, added_at_most: 2, wait_ms: WAIT_MS } },
      },
      {
        name: 'reads out a card',
        device_ref: 'eve',
        turns: [{ line: 'sim:remember:card 4111 1111 1111 1111' }],
        expect: { memory: { not_contains: ['4111'], wait_ms: WAIT_MS } },
      },
    ],
  });
  const [size, card] = report.conversations.map((c) => c.attempts[0]!);
  t.equal(size!.status, 'passed', 'the fact was remembered', { memory: size!.memory });
  t.match(size!.memory, {
    status: 'aggregated',
    units_before: 1,
    added: [
      { kind: 'fact', text: 'wears shoe size 44', sessionId: size!.session_id },
      { kind: 'summary', sessionId: size!.session_id },
    ],
    removed: [{ kind: 'fact', text: 'wears shoe size 42' }],
    error: null,
  });
  t.same(
    size!.memory!.expectations.map((e) => [e.kind, e.expected, e.passed]),
    [
      ['memory_contains', 'shoe size 44', true],
      ['memory_not_contains', 'size 42', true],
      ['memory_added_at_least', 1, true],
      ['memory_added_at_most', 2, true],
    ],
  );
  t.match(size!.memory!.expectations[0]!.evidence, /^the added unit \{"kind":"fact","text":"wears shoe size 44".*\} holds "shoe size 44"$/);
  t.equal(size!.memory!.units_after, 2, 'the fixture unit is gone, two were added');

  t.equal(card!.status, 'failed');
  t.match(card!.memory!.expectations, [
    {
      kind: 'memory_not_contains',
      expected: '4111',
      passed: false,
      evidence: /^the added unit .*card 4111 1111 1111 1111.* holds "4111"$/,
    },
  ]);
  t.match(card!.memory!.expectations[0]!.actual, { kind: 'fact', text: 'card 4111 1111 1111 1111' });
  t.equal(report.passed, false);
  t.same(report.totals.expectations, { total: 5, passed: 4, failed: 1, skipped: 0 }, 'memory checks count as expectations');
});

t.test('a memory that never changes within the wait fails with "nothing was aggregated"', async (t) => {
  const s = await memoryStack(t, 60_000);
  const report = await run(s, {
    device_ref: 'frank',
    conversations: [{ turns: [{ line: 'sim:remember:likes tea' }], expect: { memory: { contains: 'tea', wait_ms: 300 } } }],
  });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.equal(attempt.status, 'failed');
  t.match(attempt.memory, {
    status: 'nothing_aggregated',
    added: [],
    removed: [],
    expectations: [
      { kind: 'memory_aggregated', passed: false, evidence: 'nothing was aggregated within 300 ms' },
      { kind: 'memory_contains', expected: 'tea', passed: false, evidence: 'not met: nothing was aggregated within 300 ms' },
    ],
  });
  t.ok(attempt.memory!.waited_ms >= 300, 'it waited the whole wait');
  t.ok(attempt.memory!.polls >= 2, 'polling all along');
});

t.test('a conversation without memory checks does not wait', async (t) => {
  const s = await memoryStack(t, 60_000);
  const report = await run(s, { device_ref: 'gina', conversations: [{ turns: [{ line: 'sim:remember:likes tea' }] }] });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.equal(attempt.memory, null);
  t.equal(s.engine.record.memoryRequests.filter((r) => r.path === '/api/memory').length, 0, 'the memory was never read');
});

t.test('a journey: the second visit starts after the first visit’s memory checks and uses what it left', async (t) => {
  const s = await memoryStack(t, scaled(200));
  const suite = {
    device_ref: 'hana',
    memory: { restore: { units: [] }, confirm: true },
    conversations: [
      {
        name: 'gives the order',
        turns: [{ line: 'My order number is 12345' }],
        expect: { memory: { contains: '12345', wait_ms: WAIT_MS } },
      },
      {
        name: 'comes back',
        turns: [{ line: '#intro', expect: { text_contains: 'order 12345' } }],
      },
    ],
  };
  const report = await run(s, suite);
  t.equal(report.passed, true, 'the returning user is welcomed back with the order', { report });
  const [first, second] = report.conversations.map((c) => c.attempts[0]!);
  t.ok(Date.parse(second!.started_at!) >= Date.parse(first!.started_at!) + first!.duration_ms, 'after the first visit, its wait included');
  t.ok(first!.memory!.waited_ms >= scaled(200), 'the first visit waited for the aggregation');
  t.equal(report.memory!.restores, 1, 'the fixture was restored before the journey, not between its visits');

  // coach.3 forgets order numbers: the first visit's memory check fails, and so does the second visit.
  // (Another device: this one's last visit, without memory checks, is still to be aggregated.)
  const forgetful = await run(s, { ...suite, device_ref: 'ida' }, 'coach.3');
  const [taught, used] = forgetful.conversations.map((c) => c.attempts[0]!);
  t.match(taught!.memory!.expectations, [{ kind: 'memory_contains', passed: false, evidence: /^none of the 1 unit added holds "12345"$/ }]);
  t.equal(used!.status, 'failed', 'nothing to welcome back with');
});

t.test('ten journeys at concurrency 10 wait about one aggregation per visit, not ten', async (t) => {
  const aggregationMs = scaled(250);
  const s = await memoryStack(t, aggregationMs);
  const journeys = Array.from({ length: 10 }, (_, j) => [
    {
      name: `journey ${j + 1}: teaches`,
      device_ref: `walker-${j + 1}`,
      turns: [{ line: `sim:remember:fact ${j + 1}` }],
      expect: { memory: { contains: `fact ${j + 1}`, wait_ms: WAIT_MS } },
    },
    {
      name: `journey ${j + 1}: comes back`,
      device_ref: `walker-${j + 1}`,
      turns: [{ line: 'hello again' }],
      expect: { memory: { added_at_least: 1, wait_ms: WAIT_MS } },
    },
  ]).flat();
  const report = await run(s, { concurrency: 10, conversations: journeys });
  t.equal(report.passed, true, { report });
  t.equal(report.parallelism, 10);
  const firsts = report.conversations.filter((_, i) => i % 2 === 0).map((c) => c.attempts[0]!);
  const starts = firsts.map((a) => Date.parse(a.started_at!));
  const ends = firsts.map((a) => Date.parse(a.started_at!) + a.duration_ms);
  t.ok(Math.max(...starts) < Math.min(...ends), 'the first visits of all ten devices waited at the same time');
  for (const a of firsts) t.ok(a.memory!.waited_ms >= aggregationMs, 'each waited for the aggregation');
  t.ok(report.duration_ms >= 2 * aggregationMs, `two aggregations in a row at least (${report.duration_ms} ms)`);
  t.ok(report.duration_ms < 10 * aggregationMs, `far from twenty in a row (${report.duration_ms} ms)`);
});

t.test('a memory answer against the contract fails that attempt’s memory checks with the reason, never the run', async (t) => {
  const s = await memoryStack(t);
  const cases: Array<[NonNullable<Stack['engine']['faults']['memoryRead']>, RegExp]> = [
    ['http_500', /^the memory could not be read: The engine answered the memory read with HTTP 500\.$/],
    [
      'units_not_list',
      /^the memory could not be read: The engine's memory answer is not what its contract says: units is a string, not a list\.$/,
    ],
    [
      'unit_not_object',
      /^the memory could not be read: The engine's memory answer is not what its contract says: units\[\d+\] is a string, not a JSON object\.$/,
    ],
  ];
  for (const [fault, why] of cases) {
    s.engine.faults.memoryRead = fault;
    const answer = await s.call('POST', runPath(), {
      body: {
        device_ref: `faulty-${fault.replace(/_/g, '-')}`,
        conversations: [
          { name: 'checked', turns: [{ line: 'sim:remember:likes tea' }], expect: { memory: { contains: 'tea', wait_ms: WAIT_MS } } },
          { name: 'unchecked', device_ref: 'bystander', turns: [{ line: 'hi', expect: { text_contains: 'hi' } }] },
        ],
      },
    });
    t.equal(answer.status, 200, `${fault}: the run answers`);
    const report = answer.body as RunReport;
    const [checked, unchecked] = report.conversations.map((c) => c.attempts[0]!);
    t.equal(checked!.status, 'failed', fault);
    t.match(checked!.memory, { status: 'unreadable', error: { error: 'engine_unavailable' } }, fault);
    t.match(checked!.memory!.expectations, [{ kind: 'memory_aggregated', passed: false, evidence: why }], fault);
    t.equal(unchecked!.status, 'passed', `${fault}: the other conversation ran on`);
  }
});

t.test('bad memory checks are refused with the field and the rule; nothing is sent', async (t) => {
  const s = await memoryStack(t);
  const conv = (memory: unknown, extra: Record<string, unknown> = {}) => ({
    device_ref: 'ivy',
    ...extra,
    conversations: [{ turns: [{ line: 'hi' }], expect: { memory } }],
  });
  const cases: Array<[unknown, RegExp]> = [
    [
      conv({ added_at_least: 3, added_at_most: 1 }),
      /^conversations\[0\]\.expect\.memory\.added_at_least must be at most added_at_most \(1\)/,
    ],
    [conv({ contains: ['tea', ''] }), /^conversations\[0\]\.expect\.memory\.contains\[1\] must not be empty/],
    [conv({ contains: 'tea', wait_ms: 0 }), /^conversations\[0\]\.expect\.memory\.wait_ms must be at least 1/],
    [conv({ contains: 'tea', wait_ms: 600_001 }), /^conversations\[0\]\.expect\.memory\.wait_ms must be at most 600000/],
    [conv({ wait_ms: 1000 }), /^conversations\[0\]\.expect\.memory must check something/],
    [
      { conversations: [{ turns: [{ line: 'hi' }], expect: { memory: { contains: 'tea' } } }] },
      /^conversations\[0\]\.expect\.memory needs a device_ref/,
    ],
    [
      conv({ criteria: ['keeps the size', { id: 'memory_criterion_1', text: 'again' }] }),
      /^conversations\[0\]\.expect\.memory\.criteria\[1\]\.id must be unique within the conversation/,
    ],
  ];
  for (const [body, message] of cases) {
    const answer = await s.call('POST', runPath(), { body });
    t.equal(answer.status, 400, JSON.stringify(body));
    t.equal(answer.body.error, 'invalid_request');
    t.match(answer.body.message, message);
  }
  t.equal(s.engine.record.memoryRequests.length + s.engine.record.connections.length, 0, 'nothing reached the engine');
});

t.test('memory criteria: the judge rules over the added units', async (t) => {
  const s = await startStack(t, { env: { MEMORY_POLL_MS: POLL_MS }, model: true });
  const report = await run(s, {
    device_ref: 'jo',
    conversations: [
      {
        turns: [{ line: 'sim:remember:wears shoe size 44' }],
        expect: {
          memory: {
            criteria: ['The memory holds "shoe size 44"', { id: 'no_card', text: 'The memory holds "card"' }],
            wait_ms: WAIT_MS,
          },
        },
      },
    ],
  });
  const attempt = report.conversations[0]!.attempts[0]!;
  t.match(attempt.memory!.criteria, [
    { id: 'memory_criterion_1', verdict: 'passed' },
    { id: 'no_card', verdict: 'failed' },
  ]);
  const judged = s.model!.requests.at(-1)!.body.messages!.find((m) => m.role === 'user')!.content;
  t.match(judged, /Memory units added:\n\{"kind":"fact","text":"wears shoe size 44"/);
  t.equal(report.totals.criteria.total, 2);
});

t.test('a comparison: the memory check is the differing expectation, and the gate follows its pass rates', async (t) => {
  const s = await memoryStack(t);
  const answer = await s.call('POST', comparePath(), {
    body: {
      baseline: 'coach',
      device_ref: 'kim',
      repeat: 12,
      conversations: [
        {
          name: 'remembers the size',
          turns: [{ line: 'sim:remember-chance:0.9,0.2:shoe size 44', expect: { text_contains: 'You said' } }],
          expect: { memory: { contains: 'shoe size 44', wait_ms: WAIT_MS } },
        },
      ],
    },
  });
  t.equal(answer.status, 200, answer.text);
  const report = answer.body as ComparisonReport;
  const conv = report.conversations[0]!;
  t.same(
    conv.differences.map((d) => [d.kind, d.name, d.description]),
    [['expectation', 'memory_contains', 'memory_contains "shoe size 44"']],
    'only the memory check differs',
  );
  const [difference] = conv.differences;
  t.equal(difference!.baseline.passed, conv.baseline.attempts_passed, 'the baseline passes exactly when it remembered');
  t.equal(difference!.candidate.passed, conv.candidate.attempts_passed, 'the candidate too');
  t.ok(difference!.baseline.passed > difference!.candidate.passed, 'the candidate remembered less often');
  t.equal(conv.verdict, 'regressed', `baseline ${difference!.baseline.passed}/12, candidate ${difference!.candidate.passed}/12`);
});

t.test('text, JUnit and HTML show the diff shortened, each memory check with its evidence, the units escaped', async (t) => {
  const s = await memoryStack(t);
  const report = await run(s, {
    name: 'memory',
    device_ref: 'lou',
    conversations: [
      {
        name: 'leaves markup',
        turns: [{ line: `sim:remember:<script>alert(1)</script> ${'x'.repeat(200)}` }],
        expect: { memory: { contains: 'alert', not_contains: 'script', wait_ms: WAIT_MS } },
      },
    ],
  });
  const text = renderReport(report, 'memory.yaml');
  t.match(text, /^ {4}memory: 2 units added, 0 removed · settled after .* \(\d+ reads\)$/m);
  t.match(text, /^ {6}\+ \{"kind":"fact","text":"<script>alert\(1\)<\/script> x+…$/m, 'a unit shortened to a line');
  t.match(text, /^ {4}✓ memory_contains "alert"$/m);
  t.match(text, /^ {4}✗ memory_not_contains "script" — the added unit .* holds "script"$/m);

  const xml = junitXml([{ name: 'memory', file: 'memory.yaml', report }]);
  t.match(
    xml,
    /<testcase classname="memory" name="leaves markup \/ memory" time="[\d.]+">\n {6}<failure message="memory_not_contains &quot;script&quot;: the added unit/,
  );
  t.match(xml, /<system-out>memory: 2 units added, 0 removed · settled after [^\n]*\n\+ \{"kind":"fact","text":"&lt;script&gt;/);

  const page = runReportHtml(report);
  t.match(page, /What it left in memory/);
  t.match(page, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'the unit escaped');
  t.notMatch(page, /<script>alert/, 'never as markup');
  t.match(page, /memory_not_contains &quot;script&quot;/);
});

t.test('the example: coach remembers the order and welcomes the user back; coach.3 forgets it, a memory regression', async (t) => {
  const s = await memoryStack(t);
  const example = 'examples/remembering-user.yaml';
  const ran = await cli('run', [example, '--gateway', s.url]);
  t.equal(ran.code, 0, 'coach passes', { output: ran.stdout + ran.stderr });
  t.match(ran.stdout, /✓ memory_contains "order 12345"/);

  const compared = await cli('compare', [example, '--baseline', 'coach', '--candidate', 'coach.3', '--gateway', s.url]);
  t.equal(compared.code, 1, 'coach.3 regressed', { output: compared.stdout + compared.stderr });
  t.match(compared.stdout, /✗ gives the order number · REGRESSED/);
  t.match(compared.stdout, /memory_contains "order 12345" — baseline (\d+)\/\1 \(the added unit .*\), candidate 0\/\d+ \(none of the/);
  t.match(compared.stdout, /✗ comes back · REGRESSED/);
  t.match(compared.stdout, /text_contains "Welcome back" at turn 1 — baseline/);
});

t.test('MCP run_suite: the memory diff in the structured report, a failed memory check in the text', async (t) => {
  const s = await memoryStack(t);
  const client = await mcpClient(t, s);
  const suite = {
    agent: 'coach',
    name: 'card',
    device_ref: 'max',
    conversations: [
      {
        name: 'reads out a card',
        turns: [{ line: 'sim:remember:card 4111 1111 1111 1111' }],
        expect: { memory: { not_contains: '4111', wait_ms: WAIT_MS } },
      },
    ],
  };
  const result: Json = await client.callTool({ name: 'run_suite', arguments: { suite } });
  t.notOk(result.isError, textOf(result));
  const attempt = result.structuredContent.conversations[0].attempts[0];
  t.match(attempt.memory, { status: 'aggregated', added: [{ kind: 'fact', text: 'card 4111 1111 1111 1111' }, { kind: 'summary' }] });
  t.match(textOf(result), /^- reads out a card: memory: 2 units added, 0 removed · settled after .*$/m);
  t.match(textOf(result), /^- reads out a card: memory_not_contains failed: the added unit .* holds "4111"$/m);
});
