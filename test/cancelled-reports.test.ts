// A cancelled gate never reads as a pass. A comparison (and a run) cancelled at each point — before
// any session, mid-round after a conversation was decided, by a single pod's drain, by `cancel ID`
// and by the command's Ctrl-C — reports, in JSON, text, HTML and JUnit, that it was not decided,
// after how many sessions and why, first; a conversation decided before the cancel keeps its
// verdict, every other one is `undecided` (a JUnit <error> each); an attempt the cancel came before
// is not an attempt at all, one it cut short is `cancelled` and counted apart.
import { readFile } from 'node:fs/promises';
import { XMLParser } from 'fast-xml-parser';
import t from 'tap';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { comparisonReportHtml, runReportHtml } from '../src/suites/report/html/render.js';
import { junitXml } from '../src/suites/report/junit.js';
import type { RunReport } from '../src/suites/report/run-report.js';
import { renderComparison, renderReport } from '../src/suites/report/text.js';
import { cli, memoryIo as io } from './support/cli.js';
import { comparePath, runPath, type Json } from './support/http.js';
import { eventually, startStack, type Stack } from './support/stack.js';

/** Decided in 7 rounds: coach.3 answers without looking the order up. */
const orderStatus = {
  name: 'order status',
  turns: [{ line: '#intro' }, { line: 'My order number is 12345', expect: { tool: 'lookup_order', text_contains: 'delivered' } }],
};
/** Never answered: the cancel finds it mid-turn. */
const stuck = { name: 'stuck', turns: [{ line: 'sim:hang' }] };
/** Waits before each attempt: the cancel comes before it starts. */
const waiting = { name: 'waiting', wait_ms: 60_000, turns: [{ line: 'hi' }] };

const DELETE_REASON = 'DELETE /v1/runs/{id} cancelled it';

type Tap = Pick<typeof t, 'equal' | 'match' | 'same' | 'notOk' | 'notMatch'>;

/** The first conversation's verdict when the cancel found it decided (where the cancel falls is up to the machine). */
const decidedFirst = (report: ComparisonReport): Record<string, string> =>
  report.conversations[0]!.verdict === 'undecided' ? {} : { [report.conversations[0]!.name]: report.conversations[0]!.verdict };

/** The JUnit XML parsed: its one <testsuite>'s counts and cases. */
function junitOf(xml: string): { suite: Json; cases: Json[] } {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => ['testsuite', 'testcase'].includes(name),
  });
  const suite = parser.parse(xml).testsuites.testsuite[0];
  return { suite, cases: suite.testcase };
}

/**
 * Every report of a cancelled comparison leads with what it is; `decided` holds the verdicts kept,
 * every other conversation is undecided. Returns the JUnit cases for more checks.
 */
function cancelledComparison(t: Tap, report: ComparisonReport, reason: string, decided: Record<string, string>): Json[] {
  t.equal(report.regressed, null, 'JSON: regressed is null: nothing was decided');
  t.match(report.cancelled, { reason, sessions: report.sessions.spent, sessions_budget: report.sessions.budget });
  const verdicts = Object.fromEntries(report.conversations.map((c) => [c.name, c.verdict]));
  const undecided = report.conversations.filter((c) => decided[c.name] === undefined).map((c) => c.name);
  t.same(
    verdicts,
    { ...Object.fromEntries(undecided.map((n) => [n, 'undecided'])), ...decided },
    'decided verdicts kept, the rest undecided',
  );
  t.equal(report.totals.undecided, undecided.length);
  for (const side of ['baseline', 'candidate'] as const) {
    const run = report.runs[side];
    t.equal(run.passed, null, `${side}: passed is null`);
    for (const conv of run.conversations) {
      t.equal(conv.status === 'cancelled', undecided.includes(conv.name), `${side} ${conv.name}: cancelled exactly when undecided`);
      for (const attempt of conv.attempts) {
        t.notOk(
          attempt.session_id === null && attempt.turns.every((turn) => turn.status === 'skipped'),
          `${side} ${conv.name} attempt ${attempt.attempt} started: none that never started is listed`,
        );
      }
      t.equal(conv.attempts_cancelled, conv.attempts.filter((a) => a.status === 'cancelled').length);
    }
  }
  const head = new RegExp(
    `^✗ not decided: the comparison of coach\\.3 with coach was cancelled after ${report.sessions.spent} of ${report.sessions.budget} ` +
      `sessions \\(${reason.replace(/[{}/()]/g, '\\$&')}\\)`,
  );
  const text = renderComparison(report, 'gate.yaml');
  t.match(text, head, 'text: the first line says not decided, how far and why');
  t.match(text, /^ {2}✗ NOT DECIDED \(cancelled\) · /m, 'text: the last line too');
  t.notMatch(text, /may be promoted|no regression/);
  const html = comparisonReportHtml(report);
  t.match(html, /<title>✗ NOT DECIDED: cancelled/, 'HTML: the title');
  t.match(html, /<p class="answer cancelled">not decided: the comparison of coach\.3 with coach was cancelled/, 'HTML: the answer');
  t.notMatch(html, /may be promoted|✓ no regressions/);
  const { suite, cases } = junitOf(junitXml([{ name: 'gate', file: 'gate.yaml', report: report.runs.candidate, comparison: report }]));
  const errors = cases.filter((c) => c.error !== undefined);
  const undecidedCases = [...undecided, ...(report.suite?.verdict === 'undecided' ? ['the suite as a whole'] : [])];
  t.same(
    errors.map((c) => [c.name.split(' / ')[0], c.error.type]),
    undecidedCases.map((n) => [n, 'cancelled']),
    'JUnit: an <error> for every undecided conversation',
  );
  t.equal(Number(suite.errors), errors.length);
  t.equal(
    Number(suite.failures),
    Object.values(decided).filter((v) => v === 'regressed').length,
    'JUnit: a failure per decided regression',
  );
  t.match(suite['system-out'], /^not decided: /, 'JUnit: the answer says not decided');
  return cases;
}

t.test('a comparison cancelled before any session: nothing was an attempt, every conversation undecided', async (t) => {
  const s = await startStack(t);
  const started = await s.call('POST', comparePath(), {
    body: { baseline: 'coach', agent: 'coach', conversations: [waiting, { ...orderStatus, wait_ms: 60_000 }] },
    headers: { prefer: 'respond-async' },
  });
  t.equal(started.status, 202, started.text);
  const id = started.body.id;
  const cancelled = await s.call('DELETE', `/v1/runs/${id}`);
  t.equal(cancelled.status, 200);
  await eventually(() => s.app.runs.get(id)!.ended);
  const view = (await s.call('GET', `/v1/runs/${id}`)).body;
  t.equal(view.status, 'cancelled');
  t.same(
    view.progress.conversations.map((c: Json) => [c.conversation, c.state, c.rounds, c.sessions]),
    [
      ['waiting', 'cancelled', 0, 0],
      ['order status', 'cancelled', 0, 0],
    ],
    'progress ends cancelled, not running',
  );
  t.equal(view.progress.decided, 0);
  const report = view.report as ComparisonReport;
  t.equal(s.engine.record.connections.length, 0, 'no session was opened');
  t.same(report.cancelled, { reason: DELETE_REASON, sessions: 0, sessions_budget: 80 });
  for (const side of ['baseline', 'candidate'] as const) {
    t.same(
      report.runs[side].conversations.map((c) => c.attempts.length),
      [0, 0],
      `${side}: no attempt that never started`,
    );
  }
  cancelledComparison(t, report, DELETE_REASON, {});
});

t.test('a comparison cancelled mid-round after a conversation was decided: it keeps its verdict', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '60000' } });
  const started = await s.call('POST', comparePath(), {
    body: { baseline: 'coach', agent: 'coach', concurrency: 4, conversations: [orderStatus, stuck] },
    headers: { prefer: 'respond-async' },
  });
  const id = started.body.id;
  const run = s.app.runs.get(id)!;
  await eventually(() => run.stops.has(0) && s.engine.record.connections.some((c) => c.frames.includes('sim:hang')), 60_000);
  const connections = s.engine.record.connections.length;
  await s.call('DELETE', `/v1/runs/${id}`);
  await eventually(() => run.ended);
  const view = (await s.call('GET', `/v1/runs/${id}`)).body;
  t.same(
    view.progress.conversations.map((c: Json) => [c.conversation, c.state]),
    [
      ['order status', 'decided'],
      ['stuck', 'cancelled'],
    ],
  );
  const report = view.report as ComparisonReport;
  cancelledComparison(t, report, DELETE_REASON, { 'order status': 'regressed' });
  const [order, hung] = report.conversations;
  t.match(order!.statistics, { stop: 'decided', sessions: 2 * order!.statistics.rounds }, 'the decided conversation as it was decided');
  t.ok(order!.statistics.rounds >= 5, 'decided after min_attempts');
  t.match(hung!.baseline, { attempts_total: 1, attempts_cancelled: 1, attempts_passed: 0, status: 'cancelled' }, 'cut mid-turn: cancelled');
  t.match(hung!.candidate, { attempts_total: 0 }, 'the candidate attempt the cancel came before is not one');
  t.equal(hung!.statistics.rounds, 0, 'a round the cancel cut is no round of the test');
  t.equal(report.sessions.spent, connections, 'the sessions counted are the sessions opened');
  t.equal(report.runs.baseline.totals.attempts.cancelled, 1);
  t.match(report.suite, { verdict: 'undecided' });
  t.match(
    renderComparison(report, 'gate.yaml'),
    /^✗ not decided: .*; decided before the cancel: order status regressed; stuck not decided: do not promote coach\.3 on what was found$/m,
  );
  // The suite names coach: said on the candidate's side only, where another agent ran.
  t.notMatch(report.runs.baseline.notes.join('\n'), /The suite names/);
  t.match(report.runs.candidate.notes.join('\n'), /The suite names coach; it ran against coach\.3, as the call asked\./);
  // JUnit times: each compared conversation its attempts' wall time, the suite its own.
  const cases = junitOf(junitXml([{ name: 'gate', file: 'gate.yaml', report: report.runs.candidate, comparison: report }])).cases;
  const orderMs = (['baseline', 'candidate'] as const).reduce(
    (ms, side) => ms + report.runs[side].conversations[0]!.attempts.reduce((n, a) => n + a.duration_ms, 0),
    0,
  );
  t.equal(cases[0].time, (orderMs / 1000).toFixed(3));
  t.ok(Number(cases[0].time) > 0, 'not 0.000');
});

t.test('a run cancelled mid-attempt: passed null, the finished conversation keeps its outcome', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '60000' } });
  const started = await s.call('POST', runPath(), {
    body: { concurrency: 2, conversations: [{ name: 'quick', turns: [{ line: '#intro' }] }, stuck, waiting] },
    headers: { prefer: 'respond-async' },
  });
  const id = started.body.id;
  await eventually(() => s.engine.record.connections.some((c) => c.frames.includes('sim:hang')) && s.app.runs.get(id)!.rounds.length >= 1);
  await s.call('DELETE', `/v1/runs/${id}`);
  await eventually(() => s.app.runs.get(id)!.ended);
  const view = (await s.call('GET', `/v1/runs/${id}`)).body;
  t.same(
    view.progress.conversations.map((c: Json) => [c.conversation, c.state]),
    [
      ['quick', 'passed'],
      ['stuck', 'cancelled'],
      ['waiting', 'cancelled'],
    ],
  );
  const report = view.report as RunReport;
  t.equal(report.passed, null);
  t.same(report.cancelled, { reason: DELETE_REASON, sessions: 2, sessions_budget: 3 });
  t.same(
    report.conversations.map((c) => [c.name, c.status, c.attempts.map((a) => a.status)]),
    [
      ['quick', 'passed', ['passed']],
      ['stuck', 'cancelled', ['cancelled']],
      ['waiting', 'cancelled', []],
    ],
  );
  t.same(report.totals.attempts, { total: 2, passed: 1, failed: 0, error: 0, invalid: 0, cancelled: 1 });
  const text = renderReport(report, 'run.yaml');
  t.match(
    text,
    /^✗ not decided: the run of coach was cancelled after 2 of 3 sessions \(DELETE \/v1\/runs\/\{id\} cancelled it\); decided before the cancel: quick passed; stuck and waiting not decided$/m,
  );
  t.match(text, /^ {2}✗ NOT DECIDED \(cancelled\) · /m);
  t.match(runReportHtml(report), /<title>✗ NOT DECIDED: cancelled/);
  const { suite, cases } = junitOf(junitXml([{ name: 'run', file: 'run.yaml', report }]));
  t.same(
    cases.filter((c) => c.error !== undefined).map((c) => [c.name, c.error.type]),
    [
      ['stuck / not decided', 'cancelled'],
      ['waiting / not decided', 'cancelled'],
    ],
  );
  t.equal(Number(suite.failures), 0, 'the turn the cancel cut is no failure');
  t.ok(
    cases.some((c) => c.name === 'stuck / cancelled' && c.skipped !== undefined),
    'the attempt cut short is skipped',
  );
});

t.test("a single pod's drain: the comparison ends cancelled, not decided, saying why", async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '60000' } });
  const started = await s.call('POST', comparePath(), {
    body: { baseline: 'coach', concurrency: 4, conversations: [orderStatus, stuck] },
    headers: { prefer: 'respond-async' },
  });
  const id = started.body.id;
  const run = s.app.runs.get(id)!;
  await eventually(() => s.engine.record.connections.some((c) => c.frames.includes('sim:hang')) && run.rounds.length >= 1, 60_000);
  await s.app.runs.drain();
  t.equal(run.status, 'cancelled');
  const reason = 'the pod running it shut down, and no other pod of the release could take it over';
  const report = run.report as unknown as ComparisonReport;
  cancelledComparison(t, report, reason, decidedFirst(report));
});

const GATE_YAML = `agent: coach
concurrency: 4
conversations:
  - name: order status
    turns:
      - line: "#intro"
      - line: My order number is 12345
        expect: { tool: lookup_order, text_contains: delivered }
  - name: stuck
    turns:
      - line: sim:hang
`;

/** The gate's sides, against the stack. */
const gate = (s: Stack): string[] => ['--baseline', 'coach', '--candidate', 'coach.3', '--gateway', s.url];

/** Until the stack's engine holds the stuck conversation's turn: the moment to cancel. */
async function hanging(s: Stack): Promise<void> {
  await eventually(() => s.engine.record.connections.some((c) => c.frames.includes('sim:hang')), 60_000);
}

t.test('cancel ID: the command following the comparison writes reports that say not decided, and exits 2', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '60000' } });
  const dir = t.testdir({ 'gate.yaml': GATE_YAML });
  const compare = await import('../src/cli/compare.js');
  const runs = await import('../src/cli/runs.js');
  const detached = io();
  t.equal(await compare.main([`${dir}/gate.yaml`, ...gate(s), '--detach'], detached), 0);
  const id = /^([0-9a-f-]{36})\t/m.exec(detached.out())![1]!;
  await hanging(s);
  const cancel = io();
  t.equal(await runs.main('cancel', [id, '--gateway', s.url], cancel), 0, cancel.err());
  const followed = io();
  const junit = `${dir}/gate.xml`;
  t.equal(await runs.main('follow', [id, '--gateway', s.url, '--junit', junit], followed), 2, 'not decided: exit 2, never 0');
  t.match(followed.out(), /^✗ not decided: the comparison of coach\.3 with coach was cancelled after \d+ of \d+ sessions \(DELETE/);
  t.match(followed.out(), /cancelled before it was decided\n$/);
  const { suite } = junitOf(await readFile(junit, 'utf8'));
  t.ok(Number(suite.errors) >= 1, 'the JUnit has an error for the undecided conversation');
});

t.test('Ctrl-C on compare: exit 130, and every report it writes says not decided first', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: '60000' } });
  const dir = t.testdir({ 'gate.yaml': GATE_YAML });
  const files = { json: `${dir}/gate.json`, html: `${dir}/gate.html`, junit: `${dir}/gate.xml` };
  const result = await cli(
    'compare',
    [`${dir}/gate.yaml`, ...gate(s), ...Object.entries(files).flatMap(([kind, file]) => [`--${kind}`, file])],
    {},
    () => s.engine.record.connections.some((c) => c.frames.includes('sim:hang')),
  );
  t.equal(result.code, 130, result.stderr);
  t.match(result.stdout, /^✗ not decided: the comparison of coach\.3 with coach was cancelled after \d+ of \d+ sessions \(DELETE/m);
  t.notMatch(result.stdout, /may be promoted/);
  const [report] = JSON.parse(await readFile(files.json, 'utf8')) as ComparisonReport[];
  cancelledComparison(t, report!, DELETE_REASON, decidedFirst(report!));
  t.match(await readFile(files.html, 'utf8'), /<title>✗ NOT DECIDED: cancelled/);
  const { suite } = junitOf(await readFile(files.junit, 'utf8'));
  t.ok(Number(suite.errors) >= 1);
});
