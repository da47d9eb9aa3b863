import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { main as judgeCheckCommand } from '../src/cli/judge-check.js';
import type { Io } from '../src/cli/io.js';
import { cohenKappa } from '../src/stats/index.js';
import { parseJudgeCheck } from '../src/suites/judge-check/input.js';
import { runPath, type Json } from './support/http.js';
import { mcpClient, textOf } from './support/mcp.js';
import { startStack } from './support/stack.js';

/**
 * Calibrating a judge against a person (`judge-check`): the gateway's judge rules again on
 * labelled transcripts, and agreement, Cohen's κ with its interval and the error rates match a
 * hand computation over a judge that errs on known transcripts (the model simulator's `misjudge`).
 */

t.test('κ and its interval: the large-sample SE of Fleiss, Cohen & Everitt (1969), against a published example', async (t) => {
  // Bonett's statpsych (R), ci.kappa(.05, 31, 12, 4, 58), after Fleiss & Paik (2003), Statistical Methods for Rates and
  // Proportions, 3rd ed.: Cohen's kappa 0.6756757, SE 0.07344761, 95 % interval [0.5317210, 0.8196303]
  // (https://dgbonett.github.io/statpsych/reference/ci.kappa.html).
  const k = cohenKappa([
    [31, 12],
    [4, 58],
  ]);
  t.ok(Math.abs(k.estimate! - 0.6756757) < 5e-8, `κ ${k.estimate}`);
  t.ok(Math.abs(k.standardError! - 0.07344761) < 5e-9, `SE ${k.standardError}`);
  t.ok(Math.abs(k.low! - 0.531721) < 5e-8, `low ${k.low}`);
  t.ok(Math.abs(k.high! - 0.8196303) < 5e-8, `high ${k.high}`);
  t.same(
    cohenKappa([
      [5, 0],
      [0, 5],
    ]),
    { estimate: 1, standardError: 0, low: 1, high: 1 },
    'full agreement: κ 1, the interval collapses',
  );
  const undefinedKappa = { estimate: null, standardError: null, low: null, high: null };
  t.same(
    cohenKappa([
      [7, 3],
      [0, 0],
    ]),
    undefinedKappa,
    'every label one class: undefined',
  );
  t.same(
    cohenKappa([
      [0, 0],
      [0, 0],
    ]),
    undefinedKappa,
    'nothing compared: undefined',
  );
  t.same(
    cohenKappa([
      [6, 0],
      [4, 0],
    ]),
    { estimate: 0, standardError: null, low: null, high: null },
    'a judge that always passes agrees no better than chance: κ 0, and no interval (the SE formula would give 0)',
  );
});

/** A command's output, in-process. */
function capture(env: Record<string, string>): Io & { out: string; err: string } {
  const io = {
    env,
    out: '',
    err: '',
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    progress: false,
    progressEveryMs: 60_000,
    onInterrupt: () => () => undefined,
  };
  return io;
}

const REFUND = 'The agent says "refund"';
const ORDER = 'The agent says "order"';

/**
 * Twenty transcripts: ten where the agent offers a refund (labelled passed), ten where it does not
 * (labelled failed), every one about an order (labelled passed). The judge errs on the four marked
 * [tricky]: three of the refunds, one of the others.
 */
function labelledItems(): Json[] {
  return Array.from({ length: 20 }, (_, i) => {
    const refund = i < 10;
    const tricky = i === 0 || i === 1 || i === 2 || i === 10;
    const said = refund ? 'Your order is late: I have issued a refund.' : 'Your order ships on Monday.';
    return {
      name: `case ${i + 1}`,
      transcript: [{ user: 'Where is my order?', agent: tricky ? `${said} [tricky]` : said }],
      criteria: [REFUND, { id: 'order', text: ORDER }],
      labels: { criterion_1: refund ? 'passed' : 'failed', order: 'passed' },
    };
  });
}

t.test('judge-check over labelled transcripts: agreement and κ as computed by hand; exit 1 below --min-agreement', async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.misjudge = { share: 1, when: /\[tricky\]/ };
  const dir = await mkdtemp(join(tmpdir(), 'judge-check-'));
  const file = join(dir, 'labels.yaml');
  await writeFile(file, stringify({ agent: 'coach', seed: 7, items: labelledItems() }));
  const env = { AGENT_TEST_GATEWAY_TOKEN: 'demo-token', AGENT_TEST_GATEWAY_URL: s.url };

  const json = capture(env);
  t.equal(await judgeCheckCommand([file, '--json'], json), 0, 'checked, no threshold: exit 0', { err: json.err });
  const report = JSON.parse(json.out);

  // By hand. The refund criterion: of the 10 labelled passed the judge failed 3 (false fails), of the 10 labelled
  // failed it passed 1 (a false pass).
  const [a, b, c, d] = [7, 3, 1, 9]; // both passed, false fails, false passes, both failed
  const n = a + b + c + d;
  const observed = (a + d) / n; // 0.8
  const chance = ((a + b) / n) * ((a + c) / n) + ((c + d) / n) * ((b + d) / n); // 0.5·0.4 + 0.5·0.6 = 0.5
  const kappa = (observed - chance) / (1 - chance); // 0.6
  t.ok(Math.abs(kappa - 0.6) < 1e-12, `κ by hand: ${kappa}`);
  const refund = report.criteria.find((x: Json) => x.id === 'criterion_1');
  t.match(refund.statistics, {
    compared: 20,
    not_judged: 0,
    both_passed: a,
    false_fails: b,
    false_passes: c,
    both_failed: d,
    false_pass_rate: 1 / 10,
    false_fail_rate: 3 / 10,
  });
  t.equal(refund.statistics.agreement, observed);
  t.ok(Math.abs(refund.statistics.kappa.estimate - kappa) < 1e-12, `κ ${refund.statistics.kappa.estimate} = ${kappa}`);
  const interval = cohenKappa([
    [a, b],
    [c, d],
  ]);
  t.match(refund.statistics.kappa, { low: interval.low, high: interval.high, note: null });
  t.ok(refund.statistics.kappa.low < kappa && kappa < refund.statistics.kappa.high);
  t.same(
    refund.disagreements.map((x: Json) => [x.item, x.label, x.verdict]),
    [
      ['items[0] "case 1"', 'passed', 'failed'],
      ['items[1] "case 2"', 'passed', 'failed'],
      ['items[2] "case 3"', 'passed', 'failed'],
      ['items[10] "case 11"', 'failed', 'passed'],
    ],
    'every disagreement, in input order',
  );
  t.match(refund.disagreements[0].reasoning, /^The judge erred: /, "with the judge's reasoning");

  // Every "order" label is passed: κ is undefined, the false-fail rate still tells.
  const order = report.criteria.find((x: Json) => x.id === 'order');
  t.match(order.statistics, { both_passed: 16, false_fails: 4, agreement: 0.8, false_pass_rate: null, false_fail_rate: 0.2 });
  t.match(order.statistics.kappa, { estimate: null, low: null, high: null, note: /^undefined: every label is passed/ });
  t.match(report.overall, { compared: 40, both_passed: 23, false_fails: 7, false_passes: 1, both_failed: 9 });
  t.match(report, { agents: ['agent:coach'], seed: 7, labelled: 40, min_agreement: null, meets_min_agreement: null });
  t.equal(report.model_usage.calls, 20, 'one judge call per transcript, counted');
  const seeds = s.model!.requests.map((r) => r.body.seed);
  t.same([...new Set(seeds)], [7], "every call carried the check's seed");

  const below = capture(env);
  t.equal(await judgeCheckCommand([file, '--min-agreement', '0.85'], below), 1, 'below --min-agreement: exit 1');
  t.match(below.out, /✗ criterion_1: The agent says "refund"/);
  t.match(below.out, /agreement 80 % \(16 of 20\), κ 0\.60 \[0\.\d\d, 0\.\d\d\], false-pass 10 % \(1 of 10\), false-fail 30 % \(3 of 10\)/);
  t.match(below.out, /✗ items\[10\] "case 11": labelled failed, the judge ruled passed: The judge erred: /);
  t.match(below.out, /κ undefined \(every label is passed, so chance agreement is the judge's own rate; label rulings of both kinds\)/);
  t.match(below.out, /✗ below min agreement 85 %: criterion_1 \(80 %\), order \(80 %\)/);

  const met = capture(env);
  t.equal(await judgeCheckCommand([file, '--min-agreement=0.8'], met), 0, 'at --min-agreement: exit 0');
  t.match(met.out, /✓ every criterion agrees at least 80 % of the time/);

  // With three votes each transcript is asked three times; the simulated judge errs alike on each, so nothing splits.
  const voted = capture(env);
  t.equal(await judgeCheckCommand([file, '--json', '--votes', '3'], voted), 0);
  t.match(JSON.parse(voted.out), { model_usage: { calls: 60 }, overall: { compared: 40, agreement: 0.8 } });
});

t.test('a labelled run report: the labelled rulings are ruled on again, each over its transcript', async (t) => {
  const s = await startStack(t, { model: true });
  const suite = {
    repeat: 2,
    seed: 11,
    conversations: [
      {
        name: 'order',
        turns: [{ line: '#intro' }, { line: 'Where is my order?', expect: { judge: 'The agent says "order"' } }, { line: 'Thanks' }],
        expect: { criteria: [REFUND] },
      },
    ],
  };
  const run = await s.call('POST', runPath(), { body: suite });
  t.equal(run.status, 200, run.text);
  const report = run.body;
  const [first, second] = report.conversations[0].attempts;
  // A person checked three rulings: the judge failed "refund" both times (the agent never offers one).
  first.criteria[0].label = 'failed';
  second.criteria[0].label = 'passed';
  first.turns[1].criteria[0].label = 'passed';
  const before = s.model!.requests.length;
  const checked = await s.call('POST', '/v1/judge-checks', { body: { reports: [report] } });
  t.equal(checked.status, 200, checked.text);
  t.match(checked.body, { agents: ['agent:coach'], seed: 11, labelled: 3 });
  t.equal(s.model!.requests.length - before, 3, 'one call per labelled transcript');
  const turnCall = s.model!.requests.slice(before).find((r) => JSON.stringify(r.body.messages).includes('turn_2'));
  t.notMatch(JSON.stringify(turnCall!.body.messages), /Turn 3 /, "a turn's criterion is ruled on over the transcript up to its turn");
  const refund = checked.body.criteria.find((c: Json) => c.id === 'criterion_1');
  t.match(refund.statistics, { compared: 2, both_failed: 1, false_fails: 1, agreement: 0.5 });
  t.same(
    refund.disagreements.map((d: Json) => d.item),
    ['reports[0] "order" attempt 2'],
  );
  t.match(checked.body.criteria.find((c: Json) => c.id === 'turn_2').statistics, { compared: 1, both_passed: 1 });

  delete first.criteria[0].label;
  delete second.criteria[0].label;
  delete first.turns[1].criteria[0].label;
  const unlabelled = await s.call('POST', '/v1/judge-checks', { body: { reports: [report] } });
  t.match(unlabelled.body, { error: 'invalid_request', message: /^reports\[0\] holds no label: set "label"/ });
});

t.test('bad input names the field and the rule; nothing reaches the model', async (t) => {
  const s = await startStack(t, { model: true });
  const item = labelledItems()[0];
  const bad = async (body: unknown, field: string, rule: RegExp) => {
    const answer = await s.call('POST', '/v1/judge-checks', { body });
    t.equal(answer.status, 400, field);
    t.match(answer.body.details.problems, [{ field, rule }], field);
  };
  await bad(
    { agent: 'coach', items: [{ ...item, labels: { ...item.labels, tone: 'passed' } }] },
    'items[0].labels.tone',
    /names no criterion/,
  );
  await bad(
    { agent: 'coach', items: [{ ...item, labels: { order: 'passed' } }] },
    'items[0].labels.criterion_1',
    /is required: label every/,
  );
  await bad(
    { agent: 'coach', items: [{ ...item, labels: { ...item.labels, order: 'yes' } }] },
    'items[0].labels.order',
    /passed or failed/,
  );
  await bad({ agent: 'coach', items: [{ ...item, transcript: [] }] }, 'items[0].transcript', /at least one turn/);
  await bad({ agent: 'coach', items: [item], min_agreement: 80 }, 'min_agreement', /at most 1/);
  await bad({ agent: 'coach', items: [item], votes: 2 }, 'votes', /1, 3 or 5/);
  await bad({ items: [item] }, 'agent', /required/);
  await bad({ agent: 'coach' }, 'items', /required/);
  await bad({ reports: [{ agent: 'coach', seed: 1, conversations: [] }] }, 'reports[0].agent', /agent key/);
  await bad({ transcripts: [] }, 'body', /reports .* or with agent and items/);
  await bad({ agent: 'coach', items: [item], extra: 1 }, 'extra', /not a known field/);
  t.equal(s.model!.requests.length, 0, 'nothing reached the model');

  // The command checks the file first: the same rule, named, exit 2, nothing sent.
  const dir = await mkdtemp(join(tmpdir(), 'judge-check-'));
  const file = join(dir, 'bad.yaml');
  await writeFile(file, stringify({ agent: 'coach', items: [{ ...item, labels: { ...item.labels, tone: 'passed' } }] }));
  const io = capture({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token', AGENT_TEST_GATEWAY_URL: s.url });
  t.equal(await judgeCheckCommand([file], io), 2);
  t.match(io.err, `${file}: items[0].labels.tone names no criterion of this item (its criteria: criterion_1, order)`);
  const usage = capture({});
  t.equal(await judgeCheckCommand([file, '--votes'], usage), 2, 'a usage mistake: exit 2');
  t.match(usage.err, /--votes needs a number/);
  t.equal(await judgeCheckCommand([join(dir, 'missing.yaml')], capture({})), 2, 'a missing file: exit 2');
  t.equal(s.model!.requests.length, 0);
  t.equal(parseJudgeCheck([]).ok, false);
});

t.test('access, a gateway without a model, and model answers outside the schema: never a 500', async (t) => {
  const s = await startStack(t, { model: true });
  const items = labelledItems().slice(0, 3);
  const forbidden = await s.call('POST', '/v1/judge-checks', { body: { agent: 'hidden', items } });
  t.match(forbidden, { status: 403, body: { error: 'forbidden' } }, "Viewer on the agent's project");
  const anonymous = await s.call('POST', '/v1/judge-checks', { body: { agent: 'coach', items }, token: null });
  t.equal(anonymous.status, 401);
  t.equal(s.model!.requests.length, 0);

  // The judge names a criterion it was not asked about, twice (the adapter's retry): that transcript is not judged.
  s.model!.faults = { fault: 'wrong_ids', role: 'judge', times: 2 };
  const wrong = await s.call('POST', '/v1/judge-checks', { body: { agent: 'coach', items: items.slice(0, 1) } });
  t.equal(wrong.status, 200, wrong.text);
  t.match(wrong.body, {
    labelled: 2,
    overall: { compared: 0, not_judged: 2, agreement: null, kappa: { estimate: null, note: 'undefined: no ruling was compared' } },
    notes: [/^items\[0\] "case 1": not judged: The judge could not answer: the judge named an unknown criterion "not_asked"/],
  });
  s.model!.faults = { fault: 'non_json', role: 'judge' };
  const garbled = await s.call('POST', '/v1/judge-checks', { body: { agent: 'coach', items } });
  t.equal(garbled.status, 200);
  t.match(garbled.body.overall, { compared: 0, not_judged: 6 });
  t.equal(garbled.body.notes.length, 3, 'a note per transcript');
  t.match(garbled.body.notes[2], /^items\[2\] "case 3": not judged: The judge could not answer: the model's answer is not JSON/);
  const dir = await mkdtemp(join(tmpdir(), 'judge-check-'));
  const file = join(dir, 'labels.yaml');
  await writeFile(file, stringify({ agent: 'coach', items: items.slice(0, 1) }));
  s.model!.faults = { fault: 'http_503', role: 'judge' };
  const io = capture({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token', AGENT_TEST_GATEWAY_URL: s.url });
  t.equal(await judgeCheckCommand([file], io), 2, 'no ruling to compare: exit 2');
  t.match(io.out, /the judge gave no ruling to compare/);

  const bare = await startStack(t);
  const noModel = await bare.call('POST', '/v1/judge-checks', { body: { agent: 'coach', items } });
  t.match(noModel, { status: 409, body: { error: 'model_not_configured' } });
});

t.test('the check_judge tool: the same check over MCP, its answer validated against JudgeCheckReport', async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.misjudge = { share: 1, when: /\[tricky\]/ };
  const client = await mcpClient(t, s);
  const labels = stringify({ agent: 'coach', seed: 3, min_agreement: 0.9, items: labelledItems().slice(0, 11) });
  const result: Json = await client.callTool({ name: 'check_judge', arguments: { labels } });
  t.notOk(result.isError, textOf(result));
  // The refund criterion: 7 both passed, 3 false fails, 1 false pass, 0 both failed.
  t.match(result.structuredContent, {
    seed: 3,
    labelled: 22,
    meets_min_agreement: false,
    criteria: [{ id: 'criterion_1', statistics: { both_passed: 7, false_fails: 3, false_passes: 1, both_failed: 0 } }, { id: 'order' }],
  });
  t.match(textOf(result), /✗ below min agreement 90 %: criterion_1 \(63\.6 %\), order \(63\.6 %\)/);
  const bad: Json = await client.callTool({ name: 'check_judge', arguments: { labels: 'agent: [coach' } });
  t.match(textOf(bad), /^invalid_request: labels must be valid YAML or JSON/);
  const unlabelled: Json = await client.callTool({
    name: 'check_judge',
    arguments: { labels: { agent: 'coach', items: [{ ...labelledItems()[0], labels: {} }] } },
  });
  t.match(textOf(unlabelled), /^invalid_request: items\[0\]\.labels\.criterion_1 is required: label every criterion/);
  const outsider: Json = await (
    await mcpClient(t, s)
  ).callTool({
    name: 'check_judge',
    arguments: { labels: { agent: 'hidden', items: labelledItems().slice(0, 1) } },
  });
  t.match(textOf(outsider), /^forbidden: /);
});
