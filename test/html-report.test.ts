/**
 * The HTML reports (src/suites/html.ts): real run and comparison reports from the stack, rendered
 * and opened from a file in a real headless Chromium (Debian's, see scripts/ensure-chromium.sh).
 * Hostile text — the demo agent echoes every line, "You said: …" — must stay text: no element, no
 * script, no dialog, no request, with the page's Content-Security-Policy and without it.
 */

import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join as joinPath, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { escapeHtml, html, join, raw } from '../src/suites/report/html/kit.js';
import { comparisonReportHtml, runReportHtml } from '../src/suites/report/html/render.js';
import type { ExpectationKind, RunReport } from '../src/suites/report/run-report.js';
import { describeExpectation } from '../src/suites/report/wording.js';
import { LAUNCH, REFRESH_DOCS } from './support/browser.js';
import { cli, readJunit } from './support/cli.js';
import { comparisonFixture } from './support/report-fixtures.js';
import { startStack, type Stack } from './support/stack.js';
import { comparePath, runPath } from './support/http.js';
import { needs } from './support/tools.js';
import { scaled } from './support/time.js';

// The file renders the reports in a real Chromium: longer than the runner's 120 s on a loaded machine.
t.setTimeout(scaled(300_000));

const NO_CHROMIUM = needs('chromium').skip;
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const shotPath = (name: string) => here(REFRESH_DOCS ? `../docs/${name}` : `./output/${name}`);
const CSP = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`;

const IMG = '<img src=x onerror=alert(1)>';
const SCRIPT = '</script><script>alert(1)</script>';
/** Lines the agent echoes back: each would be an element, a script, a navigation or a request if it were markup. */
const HOSTILE_LINES = [
  IMG,
  SCRIPT,
  `"><svg onload=alert(2)>`,
  `' onmouseover='alert(3)`,
  '<a href="https://evil.example/x">click</a> <link rel=stylesheet href=https://evil.example/x.css>',
  '<meta http-equiv="refresh" content="0;url=https://evil.example/"><style>body{display:none}</style>',
  '<iframe src="https://evil.example/"></iframe> &amp; &lt;b&gt; <!-- -->',
];
const echoOf = (line: string) => `You said: ${line}`;

/** A suite like a team's: a simulated user with a judge, a missing tool, a flaky answer, a turn that hangs. */
const showcaseRun = {
  name: 'Checkout assistant',
  repeat: 2,
  conversations: [
    {
      name: 'refund request',
      turns: [
        { line: '#intro', expect: { judge: 'The agent said "How can I help"' } },
        { line: 'I want a refund for my order', expect: { tool: 'start_refund', judge: 'The agent said "refund"' } },
      ],
      expect: { criteria: ['The agent was polite'] },
    },
    {
      name: 'delivery date',
      simulated_user: { persona: 'Dana, in a hurry', goal: 'Find out when my order will be delivered.', facts: { order_number: '12345' } },
      expect: { tools: ['lookup_order'], criteria: ['The agent gave a delivery date'] },
    },
    { name: 'availability', turns: [{ line: 'sim:flaky', expect: { text_contains: 'Yes' } }] },
    { name: 'size advice', turns: [{ line: 'What size should I take?', expect: { shown: 'size_chart' } }] },
    { name: 'slow answer', turns: [{ line: 'sim:hang' }, { line: 'bye', expect: { ended_by_agent: true } }] },
  ],
};

const orderLookup = {
  name: 'order lookup',
  turns: [{ line: '#intro' }, { line: 'My order number is 12345', expect: { tool: 'lookup_order', text_contains: 'delivered' } }],
};
const showcaseComparison = {
  baseline: 'coach',
  name: 'coach 3 release check',
  conversations: [
    orderLookup,
    { name: 'refund', turns: [{ line: 'I want a refund', expect: { tool: 'start_refund' } }] },
    { name: 'greeting', turns: [{ line: '#intro', expect: { text_contains: 'How can I help' } }] },
    {
      name: 'delivery date',
      simulated_user: { persona: 'Dana', goal: 'Find out when my order will be delivered.', facts: { order_number: '12345' } },
      expect: { tools: ['lookup_order'], criteria: ['The agent gave a delivery date'] },
    },
  ],
};

async function post<T>(s: Stack, path: string, body: unknown): Promise<T> {
  const answer = await s.call('POST', path, { body });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text}`);
  return answer.body as T;
}

/** Every tag of the page as written (escaped text holds no `<`, so each is markup the renderer wrote). */
const tagsOf = (page: string): string[] => page.match(/<[^>]*>/g) ?? [];
const ALLOWED_TAGS = new Set([
  ...['html', 'head', 'meta', 'link', 'title', 'style', 'body', 'div', 'span', 'header', 'section', 'footer', 'p', 'h1', 'h2', 'h4'],
  ...['dl', 'dt', 'dd', 'b', 'i', 'code', 'ul', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'a', 'details', 'summary'],
  // the comparison's pass-rate plot
  ...['svg', 'g', 'rect', 'line', 'circle', 'polygon', 'text'],
]);
const PLOT_OPEN = /^<svg class="plot" viewBox="0 0 \d+ \d+" role="group" aria-label="[^"<>]*">$/;

/** What the HTML string must hold, whatever the report says. */
function checkMarkup(t: Test, page: string) {
  t.ok(page.startsWith('<!doctype html>\n<html lang="en">'), 'a whole document');
  t.ok(page.includes(CSP), 'the Content-Security-Policy meta');
  t.ok(page.indexOf(CSP) < page.indexOf('<title>'), 'the policy comes before anything from the report');
  t.equal(page.match(/<style>/g)?.length, 1, 'one style sheet, inline');
  const tags = tagsOf(page);
  const names = new Set(tags.map((tag) => /^<\/?([a-z0-9!]+)/i.exec(tag)?.[1]?.toLowerCase()));
  names.delete('!doctype');
  t.same(
    [...names].filter((n) => n === undefined || !ALLOWED_TAGS.has(n)),
    [],
    'only the renderer’s own elements: no script, img, iframe',
  );
  const svgs = tags.filter((tag) => /^<svg\b/i.test(tag));
  t.ok(svgs.length <= 1, 'at most one svg: the plot');
  for (const svg of svgs) t.match(svg, PLOT_OPEN, 'the svg is the plot, as the renderer writes it');
  t.same(
    tags.filter((tag) => /\son[a-z]+\s*=/i.test(tag)),
    [],
    'no event handler attribute',
  );
  const links = tags.flatMap((tag) => [...tag.matchAll(/\s(?:href|src|action|srcset)\s*=\s*"([^"]*)"/gi)].map((m) => m[1]!));
  t.same(
    links.filter((link) => !link.startsWith('#') && link !== 'data:,'),
    [],
    'links only to places on the page (and the empty icon)',
  );
  for (const m of page.matchAll(/https?:\/\//gi)) {
    const before = page.slice(0, m.index);
    t.ok(before.lastIndexOf('>') > before.lastIndexOf('<'), `a URL only inside escaped text (at ${m.index})`);
  }
  t.notMatch(
    readFileSync(new URL('../public/report/report.css', import.meta.url), 'utf8'),
    /url\(|@import|@font-face/i,
    'the style sheet loads nothing',
  );
}

interface Opened {
  page: Page;
  /** every URL the page asked for, the document's own included */
  requests: string[];
  dialogs: string[];
  problems: string[];
  url: string;
}

/** Writes the page to test/output/ and opens it as a person would, from the file. */
async function open(browser: Browser, name: string, markup: string, options: BrowserContextOptions = {}): Promise<Opened> {
  const file = here(`./output/${name}`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, markup);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light', locale: 'en-GB', ...options });
  const page = await context.newPage();
  const opened: Opened = { page, requests: [], dialogs: [], problems: [], url: pathToFileURL(file).href };
  page.on('request', (req) => opened.requests.push(req.url()));
  page.on('dialog', (dialog) => {
    opened.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('console', (msg) => opened.problems.push(`${msg.type()}: ${msg.text()}`));
  page.on('pageerror', (err) => opened.problems.push(`page error: ${err.message}`));
  await page.goto(opened.url);
  await page.waitForLoadState('load');
  return opened;
}

const tiles = (page: Page) =>
  page.$$eval('.tile', (els) =>
    Object.fromEntries(els.map((el) => [el.querySelector('.l')!.textContent, Number(el.querySelector('.n')!.textContent)])),
  );
const openConversations = (page: Page) =>
  page.$$eval('details.conv', (els) =>
    Object.fromEntries(els.map((el) => [el.querySelector('.name')!.textContent, (el as HTMLDetailsElement).open])),
  );

/** A screenshot for the docs at a desktop width: the top of the page, down to the end of `until` (the first open attempt). */
async function screenshot(t: Test, page: Page, name: string, until: string) {
  const path = shotPath(name);
  const committed = existsSync(here(`../docs/${name}`)) ? readFileSync(here(`../docs/${name}`)) : undefined;
  mkdirSync(dirname(path), { recursive: true });
  const box = await page.locator(until).first().boundingBox();
  const height = Math.min(2200, Math.ceil((box?.y ?? 1800) + (box?.height ?? 0) + 24));
  await page.screenshot({ path, fullPage: true, clip: { x: 0, y: 0, width: 1280, height } });
  t.ok(statSync(path).size < 300_000, `${name} is under 300 KB`);
  if (!REFRESH_DOCS) {
    const now = existsSync(here(`../docs/${name}`)) ? readFileSync(here(`../docs/${name}`)) : undefined;
    t.ok(committed === undefined ? now === undefined : now?.equals(committed), `the committed docs/${name} is left as it is`);
  }
}

/** The page's text as a reader sees it: the body without its tags, entities read, spaces folded. */
const textOf = (page: string): string =>
  page
    .slice(page.indexOf('<body'))
    .replace(/<[^>]*>/g, ' ')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&')
    .replace(/\s+/g, ' ');

// Where Chromium is missing the browser tests below skip: these render the same reports as text, so the
// renderer's code is run and checked everywhere (its markup, titles, tiles, verdicts, escaping).
t.test('the reports rendered as text, without a browser: run, comparison, could not run, hostile text', async (t) => {
  const s = await startStack(t, { model: true });
  const run = await post<RunReport>(s, runPath(), showcaseRun);
  const runPage = runReportHtml(run);
  checkMarkup(t, runPage);
  t.match(runPage, /<title>✗ FAILED · Checkout assistant · agent:coach<\/title>/);
  const runText = textOf(runPage);
  for (const c of run.conversations) t.match(runText, c.name, `conversation ${c.name} shown`);
  t.match(runText, /The agent was polite/, 'a criterion');
  t.match(runText, /\[simulated\]|simulated/, 'the simulated user’s lines');

  const comparison = await post<ComparisonReport>(s, comparePath(), showcaseComparison);
  const comparisonPage = comparisonReportHtml(comparison);
  checkMarkup(t, comparisonPage);
  t.match(comparisonPage, /<title>✗ 2 regressions · coach 3 release check/);
  const comparisonText = textOf(comparisonPage);
  t.match(comparisonText, /regressed/);
  t.match(comparisonText, /fixed/);
  for (const c of comparison.conversations) t.match(comparisonText, c.name, `conversation ${c.name} shown`);

  const fixture = await comparisonFixture([
    { name: 'steady', baseline: [true, true, true], candidate: [true, true, true] },
    { name: 'broken', baseline: [true, true, true, true, true], candidate: [false, false, false, false, false] },
  ]);
  checkMarkup(t, comparisonReportHtml(fixture));

  const notRun = runReportHtml({
    name: 'nowhere',
    file: 'nowhere.yaml',
    error: { error: 'suite_invalid', message: 'cannot read the suite' },
  });
  checkMarkup(t, notRun);
  t.match(notRun, /<title>✗ could not run/);
  t.match(textOf(notRun), /suite_invalid.*cannot read the suite/);

  const hostile = await post<RunReport>(s, runPath(), {
    conversations: [{ name: 'echo <b>', turns: HOSTILE_LINES.map((line) => ({ line })) }],
  });
  const hostilePage = runReportHtml(hostile);
  checkMarkup(t, hostilePage);
  for (const line of HOSTILE_LINES) t.match(textOf(hostilePage), echoOf(line).replace(/\s+/g, ' '), 'the echo, as text');
  t.notMatch(hostilePage.slice(hostilePage.indexOf('<body')), /<script|<img|<iframe|<svg/i, 'none of it as markup: no raw tag in the body');
});

t.test('the kit escapes every interpolation unless it is markup', async (t) => {
  t.equal(escapeHtml(`<a href="x" title='y'>&amp;</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;');
  const name = '<b>"x"</b>';
  t.equal(html`<p title="${name}">${name}</p>`.markup, '<p title="&lt;b&gt;&quot;x&quot;&lt;/b&gt;">&lt;b&gt;&quot;x&quot;&lt;/b&gt;</p>');
  t.equal(html`<i>${html`<b>${'<'}</b>`}</i>`.markup, '<i><b>&lt;</b></i>', 'markup nests; its own values stay escaped');
  t.equal(
    html`${[1, '<', null, undefined, false, raw('<br>')]}`.markup,
    '1&lt;<br>',
    'lists joined; null, undefined and false are nothing',
  );
  t.equal(join(['a', '', null, '<c>'], html` · `).markup, 'a · &lt;c&gt;');
  t.equal(String(html`x`), 'x');
});

t.test('"Differs" has one quoting style: words quoted, tool names not, at the turn and the conversation level', async (t) => {
  const described = (kind: ExpectationKind, expected: unknown) =>
    describeExpectation({ kind, expected, passed: true, evidence: '', actual: null });
  t.equal(described('tool', 'lookup_order'), 'tool lookup_order');
  t.equal(described('tools', 'lookup_order'), 'tools lookup_order');
  t.equal(described('tools', ['lookup_order', 'start_refund']), 'tools lookup_order, start_refund');
  t.equal(described('not_tools', ['refund']), 'not_tools refund');
  t.equal(described('text_contains', 'order'), 'text_contains "order"');
  t.equal(described('text_contains', ['order', 'size']), 'text_contains "order", "size"');
});

t.test('the plot a comparison report opens with, from a report built by hand', { skip: NO_CHROMIUM }, async (t) => {
  const [T, F] = [true, false];
  const hostile = `"><svg onload=alert(5)><script>alert(6)</script>`;
  const report = await comparisonFixture([
    { name: 'order status', baseline: [T], candidate: [F] },
    { name: 'refund', baseline: [F], candidate: [T] },
    { name: hostile, baseline: [T, T, T, F], candidate: [T, T, F, T] },
    { name: 'nothing judged', baseline: [null], candidate: [T] },
  ]);
  t.match(
    report.conversations.map((c) => c.verdict),
    ['regressed', 'fixed', 'unchanged', 'error'],
  );
  const markup = comparisonReportHtml(report);
  checkMarkup(t, markup);
  t.notOk(markup.includes('<script') || markup.includes('<svg onload'), 'the hostile name is no markup');
  const plot = markup.slice(markup.indexOf('<svg class="plot"'), markup.indexOf('</svg>'));
  t.ok(plot.includes(escapeHtml(hostile)), 'the hostile name escaped in the plot');
  t.ok(markup.indexOf('<svg class="plot"') < markup.indexOf('class="card summary"'), 'the plot before the summary');

  const browser = await chromium.launch(LAUNCH);
  t.teardown(() => browser.close());
  const opened = await open(browser, 'plot-comparison.html', markup);
  const { page } = opened;
  await page.waitForTimeout(100);
  t.same(opened.requests, [opened.url], 'no request but the document itself');
  t.same(opened.dialogs, [], 'no dialog');
  t.same(opened.problems, [], 'no console message, no page error');
  t.equal(await page.$$eval('script', (els) => els.length), 0, 'no script');
  t.equal(await page.$$eval('svg', (els) => els.length), 1, 'one svg: the plot');

  const rows = await page.$$eval('svg.plot g.row', (els) =>
    els.map((el) => ({
      name: el.querySelector('.name title')!.textContent,
      verdict: el.querySelector('.verdict')!.textContent,
      label: el.querySelector('.name')!.lastChild!.textContent,
      title: el.querySelector('.name title')!.textContent,
      link: el.querySelector('a')!.getAttribute('href'),
      marks: [...el.querySelectorAll('.series')].map((g) => ({
        side: g.getAttribute('class'),
        shape: g.querySelector('circle, polygon')?.tagName ?? null,
        cx: Number(g.querySelector('circle')?.getAttribute('cx') ?? NaN),
        line: [
          Number(g.querySelector('line.ci')?.getAttribute('x1') ?? NaN),
          Number(g.querySelector('line.ci')?.getAttribute('x2') ?? NaN),
        ],
        text: g.textContent,
      })),
    })),
  );
  t.equal(rows.length, 4, 'one row per conversation');
  t.same(
    rows.map((r) => [r.name, r.verdict, r.link]),
    [
      ['order status', 'regressed', '#cmp-0'],
      ['refund', 'fixed', '#cmp-1'],
      [hostile, 'unchanged, both fail', '#cmp-2'],
      ['nothing judged', 'could not compare', '#cmp-3'],
    ],
    'each row names its conversation and verdict, linked to its section',
  );
  t.equal(rows[2]!.title, hostile, 'the hostile name whole, as text, in the tooltip');
  t.equal(rows[2]!.label, `${hostile.slice(0, 31)}…`, 'and cut in the label');
  t.same(
    rows[0]!.marks.map((m) => [m.side, m.shape]),
    [
      ['series baseline', 'circle'],
      ['series candidate', 'polygon'],
    ],
    'baseline a circle, candidate a diamond',
  );
  // 6/6 and 0/6 on a 0–100 % axis: the baseline's dot at 100 %, its interval from about 61 % on; the candidate's from 0 %.
  const [baselineMark, candidateMark] = rows[0]!.marks;
  const axis = await page.$$eval('svg.plot .axis line.grid', (els) => els.map((el) => Number(el.getAttribute('x1'))));
  const [zero, hundred] = [axis[0]!, axis[axis.length - 1]!];
  t.equal(baselineMark!.cx, hundred, 'a pass rate of 1 at 100 %');
  const share = (px: number) => (px - zero) / (hundred - zero);
  t.ok(
    Math.abs(share(baselineMark!.line[0]!) - report.conversations[0]!.baseline.pass_rate_interval.low) < 0.002,
    'its interval from its low',
  );
  t.same(
    candidateMark!.line.map(share).map((v) => Math.round(v * 100)),
    [0, 39],
    'the candidate’s 0/6: 0–39 %',
  );
  t.match(rows[3]!.marks[0]!.text, /baseline: no attempt could be judged/, 'a side without a judged attempt says so');

  const bands = await page.$$eval('svg.plot rect.band', (els) => els.map((el) => [el.getAttribute('class'), getComputedStyle(el).fill]));
  t.same(
    bands.map(([c]) => c),
    ['band regressed', 'band fixed', 'band unchanged', 'band error'],
  );
  t.equal(bands[0]![1], 'rgb(254, 226, 226)', 'the regressed row on red');
  t.equal(bands[1]![1], 'rgb(220, 252, 231)', 'the fixed row on green');
  t.equal(
    await page.$eval('svg.plot g.row.regressed .verdict', (el) => getComputedStyle(el).fill),
    'rgb(185, 28, 28)',
    'its verdict in red',
  );
  t.match((await page.locator('.plot-caption').textContent())!.replace(/\s+/g, ' '), /95 % confidence over all 4 conversations/);
  t.match(
    await page.locator('svg.plot').getAttribute('aria-label'),
    /^Pass rates with their 95 % intervals, .*: 1 regressed, 1 fixed, 1 unchanged, 1 could not be compared; 1 failing on both sides$/,
  );
  // 6 of 8 on each side under pass_rate 1: not a regression, but failing on both sides, marked where the verdict is.
  const both = page.locator('#cmp-2');
  const bothHead = page.locator('#cmp-2 > summary .badge');
  t.same(await bothHead.allTextContents(), ['unchanged', 'fails on both sides'], 'its section marks it');
  t.match(
    (await both.locator('.diffs .cap').textContent())!.replace(/\s+/g, ' '),
    /^Fails on both sides: not a regression, but neither revision meets its pass_rate — 1 check failing alike$/,
  );
  t.match(
    (await both.locator('.diffs tbody tr').textContent())!.replace(/\s+/g, ' '),
    /turn 1 expectation tool lookup_order 6\/8 passed ?tools called: none 6\/8 passed ?tools called: none/,
    'what fails alike, with both tallies',
  );
  t.same(
    await page.$$eval('.card.table tbody tr', (rows) => rows.map((r) => r.querySelectorAll('td .badge.both-fail').length)),
    [0, 0, 1, 0],
    'the overview marks it too',
  );
  t.match(
    (await page.locator('.summary .facts').textContent())!.replace(/\s+/g, ' '),
    /Fails on both sides 1 conversation not a regression, but neither revision meets its pass rate/,
    'and the summary counts it',
  );
  const legend = await page.$$eval('svg.plot .legend', (els) => els.map((el) => el.textContent));
  t.same(legend, ['baseline agent:coach', 'candidate agent:coach.3'], 'a legend');
  const marks = await page.$$eval('svg.plot .legend-row .dot', (els) => els.map((el) => getComputedStyle(el).fill));
  t.not(marks[0], marks[1], 'the sides in two colours');
});

t.test('a run report as HTML', { skip: NO_CHROMIUM }, async (t) => {
  const s = await startStack(t, { model: true });
  const report = await post<RunReport>(s, runPath(), showcaseRun);
  // `availability` is flaky when its two attempts get engine sessions of odd and even number: usually, not always.
  t.match(
    report.conversations,
    [{ status: 'failed' }, { status: 'passed' }, {}, { status: 'passed' }, { status: 'failed' }],
    'as designed',
  );
  const byName = Object.fromEntries(report.conversations.map((c) => [c.name, c]));
  const page = runReportHtml(report);
  checkMarkup(t, page);
  t.ok(page.includes('Checkout assistant'));

  const browser = await chromium.launch(LAUNCH);
  t.teardown(() => browser.close());
  const opened = await open(browser, 'report-run.html', page);
  t.same(opened.requests, [opened.url], 'no request but the document itself');
  t.same(opened.problems, [], 'no console message, no page error');
  t.equal(await opened.page.title(), '✗ FAILED · Checkout assistant · agent:coach');
  const { conversations: counts } = report.totals;
  t.same(
    await tiles(opened.page),
    { conversations: 5, passed: counts.passed, flaky: counts.flaky, failed: counts.failed, 'could not run': counts.error },
    'the summary counts',
  );
  const summary = (await opened.page.textContent('.summary'))!;
  for (const fact of [
    'agent:coach · revision 2 (Published)',
    `${report.seed}`,
    `· ${report.prompt_version}`,
    `${report.model_usage.calls} calls`,
    `${report.totals.attempts.passed}/${report.totals.attempts.total} passed`,
  ]) {
    t.ok(summary.includes(fact), `the summary says ${fact}`);
  }
  t.same(
    await openConversations(opened.page),
    {
      'refund request': true,
      'delivery date': false,
      availability: byName.availability!.status !== 'passed',
      'size advice': false,
      'slow answer': true,
    },
    'failing and flaky conversations open, passing ones collapsed',
  );

  const refund = opened.page.locator('#conv-0');
  const attempt = report.conversations[0]!.attempts[0]!;
  t.ok((await refund.textContent())!.includes(attempt.session_id!), 'the attempt’s session id');
  t.match(
    await refund.locator('.check.fail').first().textContent(),
    /tool start_refund.*tools called: lookup_order/,
    'the failed expectation with its evidence',
  );
  t.match(
    await refund.locator('.check.inconclusive').first().textContent(),
    /inconclusive.*The agent was polite.*stand-in judge/,
    'an inconclusive criterion with the reasoning',
  );
  t.match(await refund.locator('.chip.tool').first().textContent(), /lookup_order/, 'a tool call as a chip');
  const delivery = opened.page.locator('#conv-1');
  t.ok((await delivery.locator('.msg.user.sim').count()) >= 2, 'the simulated user’s lines are marked');
  t.match(await delivery.locator('.msg.user.sim .who').first().textContent(), /simulated user/);
  const slow = opened.page.locator('#conv-4');
  t.match(
    await slow.locator('.chip.bad').first().textContent(),
    /outcome\s*timeout/,
    'the outcome of a turn that did not end with its exit',
  );
  t.match(await slow.locator('.skip-why').first().textContent(), /skipped: turn 1 did not end/);
  t.match(await slow.locator('.attempt summary').first().textContent(), /stop:\s*turn_failed/, 'the stop reason');

  const rates = await opened.page.locator('td.rate-cell').allTextContents();
  report.conversations.forEach((conv, i) => {
    const { low, high } = conv.pass_rate_interval;
    const label = { met: 'pass rate met', missed: 'pass rate missed', undecided: 'cannot be told yet' }[conv.pass_rate_check];
    t.match(
      rates[i]!.replace(/\s+/g, ' ').trim(),
      `${Math.round(low * 100)}–${Math.round(high * 100)} % ${label}`,
      `${conv.name}: its pass rate's interval and check`,
    );
  });
  t.match(
    await opened.page.locator('#conv-0 summary .stats').textContent(),
    /pass rate 95 % interval \d+–\d+ %\s*(cannot be told yet|pass rate missed|pass rate met)/,
    'and in its section',
  );

  await screenshot(t, opened.page, 'report-run.png', '#conv-0 details.attempt');
});

t.test('a comparison report as HTML', { skip: NO_CHROMIUM }, async (t) => {
  const s = await startStack(t, { model: true });
  const report = await post<ComparisonReport>(s, comparePath(), showcaseComparison);
  t.same(
    report.totals,
    { conversations: 4, regressed: 2, fixed: 1, unchanged: 1, error: 0, undecided: 0, fails_on_both_sides: 0 },
    'the comparison came out as designed',
  );
  const page = comparisonReportHtml(report);
  checkMarkup(t, page);

  const browser = await chromium.launch(LAUNCH);
  t.teardown(() => browser.close());
  const opened = await open(browser, 'report-comparison.html', page);
  t.same(opened.requests, [opened.url], 'no request but the document itself');
  t.same(opened.problems, [], 'no console message, no page error');
  t.match(await opened.page.title(), /^✗ 2 regressions · coach 3 release check/);
  t.same(
    await tiles(opened.page),
    { conversations: 4, regressed: 2, fixed: 1, unchanged: 1, 'could not compare': 0 },
    'the summary counts',
  );
  t.same(
    await openConversations(opened.page),
    { 'order lookup': true, refund: false, greeting: false, 'delivery date': true },
    'regressed conversations open, the others collapsed',
  );
  const summary = (await opened.page.textContent('.summary'))!;
  for (const side of ['baseline', 'candidate'] as const) {
    const { p50_ms, p95_ms } = report.latency[side];
    t.ok(summary.includes(`${p50_ms} ms / ${p95_ms} ms`), `${side} latency p50 / p95`);
    t.ok(summary.includes(`${report.model_usage[side].calls} calls`), `${side} model usage`);
  }
  t.ok(summary.includes('agent:coach.3 · revision 3 (Preview)'), 'the candidate revision that ran');

  t.ok(summary.includes(`${report.sessions.spent} of ${report.sessions.budget} spent`), 'the sessions spent of the budget');
  t.ok(summary.includes('sequential, 5–20 attempts per side · 95 % confidence'), 'how attempts were spent, how sure');

  // The plot comes first, one row per conversation, the regressions marked.
  t.same(
    await opened.page.$$eval('.page > *', (els) => els.slice(0, 2).map((el) => el.className)),
    ['card head failed', 'card plot-card'],
    'the page opens with the plot',
  );
  const plotRows = await opened.page.$$eval('svg.plot g.row', (els) =>
    els.map((el) => [
      el.querySelector('.name title')!.textContent,
      el.getAttribute('class'),
      el.querySelectorAll('circle, polygon').length,
    ]),
  );
  t.same(
    plotRows,
    report.conversations.map((c) => [c.name, `row ${c.verdict}`, 2]),
    'a row per conversation, both sides marked',
  );
  t.same(await opened.page.$$eval('svg.plot rect.band.regressed', (els) => els.length), 2, 'the regressed rows on red');

  const order = opened.page.locator('#cmp-0');
  const [lookup] = report.conversations;
  t.match(await order.locator('summary .badge').first().textContent(), /regressed/, 'the verdict badge');
  t.equal(await order.locator('.verdict-stats .sentence').textContent(), lookup!.statistics.summary, 'the verdict in a sentence');
  const figures = (await order.locator('.verdict-stats').textContent())!.replace(/\s+/g, ' ');
  t.match(figures, /Difference −\d+ points \(95 % interval −\d+ to [−+]?\d+\)/, 'the difference with its interval');
  t.match(figures, /p-value [\d.]+ for a drop \(needed ≤ [\d.]+\)/, 'the p-value against the needed');
  t.match(
    figures,
    `Rounds ${lookup!.statistics.rounds} of 20 · decided Sessions ${lookup!.statistics.sessions} of 40`,
    'rounds and sessions of the budget',
  );
  t.match(
    (await order.locator('.pair.sides .l').textContent())!.replace(/\s+/g, ' '),
    /95 % interval \d+–100 % pass\^k k=1 1\.00 k=2 1\.00 /,
    'the baseline’s interval and pass^k',
  );
  const [difference] = lookup!.differences;
  const row = await order.locator('.diffs tbody tr').allTextContents();
  t.equal(row.length, 1, 'one difference');
  t.match(
    row[0],
    new RegExp(
      `turn 2.*tool lookup_order.*${difference!.baseline.passed}/${difference!.baseline.evaluated} passed.*tools called: lookup_order.*` +
        `0/${difference!.candidate.evaluated} passed.*tools called: none`,
      's',
    ),
    'what differs, each side’s tally and evidence',
  );
  t.equal(await order.locator('.diffs td.worse').count(), 1, 'the candidate’s side marked worse');
  const first = order.locator('details.attempt').first();
  t.equal(await first.locator('.turn.diverged').count(), 2, 'the diverging turn marked on both sides');
  t.match(await first.locator('.turn.diverged .no').first().textContent(), /^2$/);
  t.match(await first.locator('.flag').textContent(), /diverge from turn 2/);
  t.equal(await first.locator('.pair .r .check.fail.differs').count(), 1, 'the differing check highlighted in the candidate’s transcript');
  t.same(await first.locator('.side-head .side').allTextContents(), ['Baseline', 'Candidate'], 'baseline and candidate side by side');

  await screenshot(t, opened.page, 'report-comparison.png', '#cmp-0 .diffs');
});

t.test('hostile text stays text, with the policy and without it', { skip: NO_CHROMIUM }, async (t) => {
  const s = await startStack(t, { model: true });
  const conversations = [
    {
      name: `${IMG} conversation`,
      turns: HOSTILE_LINES.map((line) => ({ line })),
      expect: { criteria: [`The agent said "${IMG}"`, 'The agent said "<b>never</b>"'] },
    },
    { name: SCRIPT, turns: [{ line: `I want a refund ${IMG}`, expect: { tool: 'start_refund', text_contains: IMG } }] },
    { ...orderLookup, name: `"><svg onload=alert(4)>` },
  ];
  const run = await post<RunReport>(s, runPath(), { name: `</title>${SCRIPT}`, conversations });
  const comparison = await post<ComparisonReport>(s, comparePath(), { baseline: 'coach', name: `</title>${SCRIPT}`, conversations });
  t.match(
    run.conversations[0]!.attempts[0]!.criteria,
    [{ passed: true, reasoning: `The agent said "${IMG}".` }],
    'a hostile reasoning too',
  );
  t.same(
    comparison.conversations[1]!.differences.map((d) => d.description).sort(),
    [`text_contains "${IMG}"`, 'tool start_refund'],
    'a hostile difference',
  );

  const browser = await chromium.launch(LAUNCH);
  t.teardown(() => browser.close());
  for (const [kind, markup] of [
    ['run', runReportHtml(run)],
    ['comparison', comparisonReportHtml(comparison)],
  ] as const) {
    t.test(kind, async (t) => {
      checkMarkup(t, markup);
      t.ok(markup.includes(escapeHtml(echoOf(IMG))), 'the echo is escaped');
      t.notOk(markup.includes(IMG) || markup.includes('<script'), 'nothing of it as markup');
      for (const bypassCSP of [false, true]) {
        const opened = await open(browser, `hostile-${kind}${bypassCSP ? '-no-csp' : ''}.html`, markup, { bypassCSP });
        const { page } = opened;
        const how = bypassCSP ? 'without the policy' : 'with the policy';
        await page.waitForTimeout(200); // time for anything that would fire
        t.same(opened.requests, [opened.url], `${how}: no request but the document itself`);
        t.same(opened.dialogs, [], `${how}: no dialog`);
        t.same(opened.problems, [], `${how}: no console message, no page error`);
        t.equal(page.url(), opened.url, `${how}: no navigation`);
        const text = (await page.textContent('body'))!;
        const bubbles = await page.locator('.msg.agent .bubble').allTextContents();
        for (const line of HOSTILE_LINES) {
          t.ok(
            bubbles.includes(`${echoOf(line)} Anything else?`),
            `${how}: the reply to ${JSON.stringify(line)} is there as text, exactly`,
          );
        }
        t.ok(text.includes(`The agent said "${IMG}".`), `${how}: the judge's reasoning as text`);
        t.equal(
          await page.title(),
          kind === 'run'
            ? `✗ FAILED · </title>${SCRIPT} · agent:coach`
            : `✗ 1 regression · </title>${SCRIPT} · agent:coach.3 vs agent:coach`,
          `${how}: the title as text`,
        );
        const elements = await page.$$eval(
          'img, script, svg:not(.plot), svg svg, iframe, object, embed, a[href^="http"], meta[http-equiv="refresh"]',
          (els) => els.length,
        );
        t.equal(elements, 0, `${how}: no element from the report`);
        t.equal(
          await page.$$eval('svg.plot', (els) => els.length),
          kind === 'comparison' ? 1 : 0,
          `${how}: the plot, only in a comparison`,
        );
        if (kind === 'comparison') {
          t.same(
            await page.$$eval('svg.plot g.row .name title', (els) => els.map((el) => el.textContent)),
            conversations.map((c) => c.name),
            `${how}: the hostile names are the plot's rows, as text`,
          );
        }
        t.equal(await page.$$eval('style', (els) => els.length), 1, `${how}: only the page's own style`);
        t.equal(await page.$$eval('link', (els) => els.map((l) => l.getAttribute('href')).join()), 'data:,', `${how}: only the empty icon`);
        t.ok(
          await page
            .locator('.bubble', { hasText: echoOf(IMG) })
            .first()
            .isVisible(),
          `${how}: the hostile reply is visible`,
        );
        t.ok(await page.locator('h1').isVisible(), `${how}: the page is not hidden by a style from the report`);
        await page.context().close();
      }
    });
  }
});

t.test('what could not run, and a memory fixture', { skip: NO_CHROMIUM }, async (t) => {
  const s = await startStack(t, { model: true });
  s.model!.faults = { fault: 'http_503', role: 'simulator' };
  const conversations = [
    { name: 'simulated', simulated_user: { persona: 'Dana', goal: 'Find out when my order will be delivered.' } },
    { name: 'returning', turns: [{ line: '#intro', expect: { text_contains: 'order 777' } }] },
  ];
  const memory = { restore: { units: [{ kind: 'fact', text: 'order 777' }] }, confirm: true };
  const run = await post<RunReport>(s, runPath(), { device_ref: 'erin', memory, conversations });
  const comparison = await post<ComparisonReport>(s, comparePath(), { baseline: 'coach', device_ref: 'erin', memory, conversations });
  t.match(run.conversations, [{ status: 'error' }, { status: 'passed' }]);
  t.match(comparison.conversations, [{ verdict: 'error' }, { verdict: 'unchanged' }]);

  const browser = await chromium.launch(LAUNCH);
  t.teardown(() => browser.close());
  const { page, requests, url } = await open(browser, 'error-run.html', runReportHtml(run));
  t.same(requests, [url]);
  t.match(await tiles(page), { 'could not run': 1, passed: 1 });
  t.same(await openConversations(page), { simulated: true, returning: false });
  t.match(await page.locator('#conv-0 summary .badge').first().textContent(), /could not run/);
  t.match(
    await page.locator('#conv-0 .whole .problem').textContent(),
    new RegExp(`could not go on — ${run.conversations[0]!.attempts[0]!.error!.error}`),
  );
  // The two conversations on erin are one journey: the fixture is restored before it, once.
  t.match(await page.locator('.summary').textContent(), /Memory\s*mcp:erin ·\s+restored 1 unit before the run/);

  const other = await open(browser, 'error-comparison.html', comparisonReportHtml(comparison));
  t.same(other.requests, [other.url]);
  t.match(await other.page.locator('header .badge').textContent(), /incomplete/);
  t.match(await tiles(other.page), { 'could not compare': 1, unchanged: 1 });
  t.match(await other.page.locator('#cmp-0 summary .badge').first().textContent(), /could not compare/);
  t.same(await openConversations(other.page), { simulated: true, returning: false });
});

t.test(
  'a run or comparison that could not run: every report written, the HTML a red "could not run" page',
  { skip: NO_CHROMIUM },
  async (t) => {
    const s = await startStack(t);
    const dir = t.testdir();
    const browser = await chromium.launch(LAUNCH);
    t.teardown(() => browser.close());
    const GATE = 'examples/release-gate/coach.yaml';
    const cases: Array<{ what: string; command: 'run' | 'compare'; args: string[]; code: string; last: RegExp; title: RegExp }> = [
      {
        what: 'a candidate revision that does not exist',
        command: 'compare',
        args: [GATE, '--baseline', 'coach', '--candidate', 'coach.9', '--gateway', s.url],
        code: 'revision_not_found',
        last: /^✗ could not compare the suite \(coach → coach\.9\): revision_not_found$/,
        title: /^✗ could not run · release gate · coach → coach\.9$/,
      },
      {
        what: 'an agent revision that does not exist',
        command: 'run',
        args: ['examples/basic.yaml', '--agent', 'coach.9', '--gateway', s.url],
        code: 'revision_not_found',
        last: /^✗ could not run the suite \(coach\.9\): revision_not_found$/,
        title: /^✗ could not run · /,
      },
      {
        what: 'a suite file that is not there (a typo)',
        command: 'compare',
        args: ['examples/release-gate/caoch.yaml', '--baseline', 'coach', '--candidate', 'coach.3', '--gateway', s.url],
        code: 'suite_invalid',
        last: /^✗ could not compare the suite \(coach → coach\.3\): suite_invalid$/,
        title: /^✗ could not run · caoch · coach → coach\.3$/,
      },
      {
        what: 'a gateway URL that answers 404',
        command: 'run',
        args: ['examples/basic.yaml', '--gateway', `${s.url}/not-the-gateway`],
        code: 'not_found',
        last: /^✗ could not run the suite: /,
        title: /^✗ could not run · /,
      },
    ];
    for (const [n, c] of cases.entries()) {
      const out = (ext: string) => joinPath(dir, `case-${n}.${ext}`);
      const ran = await cli(c.command, [...c.args, '--html', out('html'), '--junit', out('xml'), '--json', out('json')]);
      t.equal(ran.code, 2, `${c.what}: exit 2`);
      const lines = ran.stdout.trimEnd().split('\n');
      t.match(lines.at(-1), c.last, `${c.what}: the last line says it could not ${c.command}`, { stdout: ran.stdout });
      for (const ext of ['html', 'xml', 'json']) {
        t.match(ran.stderr, `wrote ${relative(process.cwd(), out(ext))}\n`, `${c.what}: the ${ext} file is written and named`);
      }
      const { doc } = await readJunit(out('xml'));
      t.equal(doc.testsuite[0].testcase[0].error?.type, c.code, `${c.what}: the JUnit holds an <error>`);
      const [entry] = JSON.parse(readFileSync(out('json'), 'utf8')) as Array<{ error: { error: string } }>;
      t.equal(entry?.error.error, c.code, `${c.what}: the JSON says why`);

      const { page, requests, url } = await open(browser, `not-run-${n}.html`, readFileSync(out('html'), 'utf8'));
      t.same(requests, [url], `${c.what}: the page loads nothing`);
      t.match(await page.title(), c.title, `${c.what}: the title`);
      const badge = page.locator('header .badge');
      t.equal((await badge.textContent())?.trim(), '✗ could not run', `${c.what}: the header says "could not run"`);
      t.equal(
        await badge.evaluate((el) => getComputedStyle(el).color),
        'rgb(185, 28, 28)',
        `${c.what}: in red (the failed colour), not green nor grey`,
      );
      t.equal((await page.locator('code.error-code').textContent())?.trim(), c.code, `${c.what}: the error's code`);
      t.ok(((await page.locator('.not-run').textContent()) ?? '').length > 40, `${c.what}: what failed, in words`);
      t.notMatch(await page.locator('body').textContent(), /✓/, `${c.what}: nothing green`);
    }
  },
);
