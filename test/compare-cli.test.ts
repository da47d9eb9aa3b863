/**
 * `agent-test-gateway compare …` as CI runs it: a regression is exit 1 and a JUnit <failure>, a
 * candidate that only fixes things is exit 0, and what cannot run is exit 2 with nothing sent.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { planBudget } from '../src/stats/plan.js';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { cli, readJunit } from './support/cli.js';
import type { Json } from './support/http.js';
import { startStack } from './support/stack.js';

const GATE = 'examples/release-gate/coach.yaml';

t.test('coach.3 regresses the order lookup: exit 1, the differing expectation, JUnit and JSON', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir();
  const [junit, json] = [join(dir, 'gate.xml'), join(dir, 'gate.json')];
  const result = await cli('compare', [
    GATE,
    '--baseline',
    'coach',
    '--candidate',
    'coach.3',
    '--gateway',
    s.url,
    '--junit',
    junit,
    '--json',
    json,
  ]);
  t.equal(result.code, 1, result.stderr);
  // Before it starts: what the suite's budget catches among its three conversations, and spends.
  const plan = await planBudget({
    conversations: 3,
    baselineRate: 0.9,
    mode: { kind: 'sequential', min: 5, max: 20 },
    confidence: 0.95,
    concurrency: 10,
    sessionSeconds: 30,
  });
  t.equal(plan.drop, 0.48);
  t.equal(
    result.stdout.split('\n')[0],
    `plan: max_attempts: 20 catches 0.9 → 0.42 80 % of the time among 3 conversations · sessions: about ` +
      `${Math.round(plan.sessions.unchanged)} if nothing changed, at most 120 · ` +
      `wall time at concurrency 10 and 30 s a session (assumed): about ${Math.round(plan.seconds.unchanged / 60)} min, at most 20 min`,
  );
  t.match(result.stderr, /^ {2}order status: stopped after 7 rounds \(decided: regressed\)$/m, 'each conversation as the gate stops it');
  t.match(result.stderr, /^ {2}size help: stopped after 7 rounds \(futile\)$/m);
  t.match(result.stdout, /agent:coach \(revision 2, Published\) → agent:coach\.3 \(revision 3, Preview\)/);
  t.match(result.stdout, /✗ order status · REGRESSED · baseline passed 7\/7 · candidate failed 0\/7 · replies diverged at turn 2/);
  t.match(
    result.stdout,
    /tool lookup_order at turn 2 — baseline 7\/7 \(tools called: lookup_order\), candidate 0\/7 \(tools called: none\)/,
  );
  t.match(result.stdout, /✓ refund · fixed/);
  t.match(result.stdout, /✓ size help · unchanged/);
  t.match(result.stdout, /✗ REGRESSED · 1 regressed, 1 fixed, 1 unchanged/);
  t.match(result.stdout, /✗ 1 conversation regressed in 1 of 1 suite compared \(coach → coach\.3\)/);

  const { valid, doc } = await readJunit(junit);
  t.equal(valid, true);
  const cases = doc.testsuite[0].testcase as Json[];
  const regression = cases.find((c) => c.name === 'order status / compared with agent:coach');
  t.equal(regression.failure.type, 'regression');
  t.match(regression.failure.message, /^regressed: tool lookup_order/);
  t.notOk(cases.find((c) => c.name === 'refund / compared with agent:coach').failure, 'a fix is no failure');
  t.same(
    cases.map((c) => c.name),
    [
      'order status / compared with agent:coach',
      'refund / compared with agent:coach',
      'size help / compared with agent:coach',
      'the suite as a whole / compared with agent:coach',
    ],
    "one testcase per conversation and one for the suite as a whole, none of the candidate's own turns",
  );
  t.match(doc.testsuite[0], { tests: '4', failures: '1', errors: '0' });
  t.match(result.stdout, /✓ the suite as a whole · unchanged · \d+ pairs: 7 only the baseline passed, 7 only the candidate\n/);
  t.ok(doc.testsuite[0].properties.property.some((p: Json) => p.name === 'baseline' && p.value === 'agent:coach'));

  const reports = JSON.parse(await readFile(json, 'utf8')) as ComparisonReport[];
  t.equal(reports.length, 1);
  t.match(reports[0], { regressed: true, repeat: 20, totals: { regressed: 1, fixed: 1, unchanged: 1 } });
  t.equal(reports[0]!.runs.candidate.conversations[0]!.attempts.length, 7, 'decided after 7 rounds of the 20 allowed');
  t.match(reports[0]!.sessions, { budget: 120 });
});

t.test('a candidate that only fixes a failing conversation: exit 0', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir();
  const suite = join(dir, 'refund.yaml');
  await writeFile(
    suite,
    'agent: coach\nconversations:\n  - name: refund\n    turns:\n      - line: I want a refund\n        expect: { tool: start_refund }\n',
  );
  const result = await cli('compare', [suite, '--baseline=coach', '--candidate=coach.3', `--gateway=${s.url}`]);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, /✓ refund · fixed · baseline failed 0\/5 · candidate passed 5\/5/);
  t.match(result.stdout, /✓ no regression · 0 regressed, 1 fixed, 0 unchanged/);
});

t.test('a conversation failing on both sides: exit 0, a passing JUnit testcase, and said so', async (t) => {
  const s = await startStack(t);
  const dir = t.testdir();
  const [suite, junit] = [join(dir, 'both.yaml'), join(dir, 'both.xml')];
  await writeFile(
    suite,
    'agent: coach\nconversations:\n  - name: zebra\n    turns:\n      - line: hi\n        expect: { text_contains: zebra }\n',
  );
  const result = await cli('compare', [suite, '--baseline=coach', '--candidate=coach.3', `--gateway=${s.url}`, `--junit=${junit}`]);
  t.equal(result.code, 0, 'not a regression: the gate lets it pass');
  t.match(result.stdout, /\n {2}! zebra · unchanged · fails on both sides · baseline failed 0\/(\d+) · candidate failed 0\/\1\n/);
  t.match(
    result.stdout,
    /\n {6}fails alike: text_contains "zebra" at turn 1 — baseline 0\/(\d+) \(the text .* lacks "zebra"\), candidate 0\/\1 /,
  );
  t.match(result.stdout, /✓ no regression · 0 regressed, 0 fixed, 1 unchanged · 1 fails on both sides · /);
  t.match(result.stdout, /✓ 0 conversations regressed in 1 of 1 suite compared \(coach → coach\.3\); 1 fails on both sides\n$/);

  const { valid, doc } = await readJunit(junit);
  t.equal(valid, true);
  t.match(doc, { tests: '1', failures: '0', errors: '0' }, 'CI reporters see what the exit status says');
  const [only] = doc.testsuite[0].testcase as Json[];
  t.equal(only.name, 'zebra / compared with agent:coach');
  t.notOk(only.failure ?? only.error);
  t.match(only['system-out'], /^fails on both sides — not a regression, but neither revision meets its pass_rate/);
  t.ok(doc.testsuite[0].properties.property.some((p: Json) => p.name === 'fails_on_both_sides' && p.value === '1'));
});

t.test('what cannot run is exit 2, and nothing reaches the engine', async (t) => {
  const s = await startStack(t);
  const noCandidate = await cli('compare', [GATE, '--baseline', 'coach', '--gateway', s.url]);
  t.equal(noCandidate.code, 2);
  t.match(noCandidate.stderr, /name both --baseline and --candidate/);
  const badRef = await cli('compare', [GATE, '--baseline', 'a b', '--candidate', 'coach.3', '--gateway', s.url]);
  t.equal(badRef.code, 2);
  t.match(badRef.stderr, /--baseline must be an agent ref/);
  const hidden = await cli('compare', [GATE, '--baseline', 'hidden', '--candidate', 'coach.3', '--gateway', s.url]);
  t.equal(hidden.code, 2);
  t.match(hidden.stderr, /HTTP 403 forbidden/);
  const help = await cli('compare', ['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /^usage: agent-test-gateway compare <suite\.yaml>… --baseline REF --candidate REF/);
  t.equal(s.engine.record.connections.length, 0);
});
