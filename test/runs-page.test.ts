/**
 * The runs page (RUNS_PAGE, on by default): GET /runs and /runs/{id}, the report modules it serves
 * to the browser, its headers; and the page itself in Debian's headless Chromium, reading real
 * runs of the simulators through the API with the reader's token: a comparison followed live to
 * its verdict, side by side, hostile agent text shown as text, cancel, the list, and axe-core.
 */

import { readFile } from 'node:fs/promises';
import t from 'tap';
import { browserModules } from '../src/routes/runs-page.js';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { comparisonAnswer } from '../src/suites/report/wording.js';
import type { Page } from 'playwright-core';
import { launch } from './support/browser.js';
import { axeViolations, openSignedIn, pageShot as shot } from './support/runs-page.js';
import { comparePath, runPath } from './support/http.js';
import { eventually, startStack, type Stack } from './support/stack.js';
import { scaled } from './support/time.js';
import { needs } from './support/tools.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

/** The demo agent's revision 3 answers an order's delivery date without looking it up: a regression (test/comparisons.test.ts). */
const orderLookup = {
  name: 'order lookup',
  turns: [{ line: '#intro' }, { line: 'My order number is 12345', expect: { tool: 'lookup_order', text_contains: 'delivered' } }],
};
/** The demo agent repeats what it does not know: its reply is this markup. */
const hostile = { name: `markup ${HOSTILE}`, turns: [{ line: HOSTILE, expect: { text_contains: 'Anything else' } }] };
const steady = { name: 'steady', turns: [{ line: 'hi', expect: { text_contains: 'hi' } }] };
/** Fixed in revision 3 (`sim:chance:0,1`: the baseline never passes, the candidate always); each attempt a second slower than others. */
const slowFix = {
  name: 'slow fix',
  turns: [{ line: 'sim:delay:1000' }, { line: 'sim:chance:0,1', expect: { text_contains: 'Yes' } }],
};

/** The pass-rate plot's rows as the page shows them: live or the report's, each row's verdict and its sides' tooltips. */
const plotRows = (page: Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll('#plot svg.plot g.row')].map((g) => ({
      name: g.querySelector('.name > title')?.textContent,
      live: g.closest('.plot-card')?.classList.contains('live') ?? false,
      verdict: g.querySelector('.verdict')?.textContent,
      sides: [...g.querySelectorAll('g.series > title')].map((title) => title.textContent),
    })),
  );

const startComparison = async (s: Stack, body: Record<string, unknown>, token = 'demo-token'): Promise<string> => {
  const started = await s.call('POST', comparePath(), { body, token, headers: { prefer: 'respond-async' } });
  if (started.status !== 202) throw new Error(`the comparison did not start: ${started.status} ${started.text}`);
  return started.body.id as string;
};

/** The run once it has ended, as the API shows it. */
async function ended(s: Stack, id: string) {
  let view: any;
  await eventually(async () => {
    view = (await s.call('GET', `/v1/runs/${id}`)).body;
    return view.status !== 'running';
  }, 60_000);
  return view;
}

t.test('the pages and their modules: served on every pod by default, under a CSP without inline script', async (t) => {
  const s = await startStack(t);
  for (const path of ['/runs', '/runs/0b7a5a52-6b1f-4f0e-9d1e-0f5b2b0c4b11']) {
    const res = await s.call('GET', path, { token: null });
    t.equal(res.status, 200, `${path} needs no token: the page asks for one`);
    t.match(res.headers['content-type'], /^text\/html/);
    t.equal(res.headers['referrer-policy'], 'no-referrer');
    const csp = String(res.headers['content-security-policy']);
    t.match(csp, /script-src 'self'/);
    t.notMatch(csp, /script-src[^;]*unsafe/, 'no inline script');
    t.notMatch(res.text, /<script(?![^>]*\bsrc=)/, 'the page holds no inline script');
  }
  const kit = await s.call('GET', '/runs/page/modules/suites/report/html/kit.js', { token: null });
  t.equal(kit.status, 200);
  t.match(kit.headers['content-type'], /^text\/javascript/);
  t.match(kit.text, /export function html\(strings/, 'the report’s own escaping template, as JavaScript');
  t.notMatch(kit.text, /: string/, 'its types stripped');
  const page = await s.call('GET', '/runs/page/modules/suites/report/html/page.js', { token: null });
  t.equal(page.status, 404, 'the file-only part of the report (it reads the style sheet from disk) is not served');
  const outside = await s.call('GET', '/runs/page/modules/ops/config.js', { token: null });
  t.equal(outside.status, 404, 'nothing outside the report modules');

  const modules = await browserModules();
  t.ok(modules.has('suites/report/html/side-by-side') && modules.has('suites/report/wording'), 'the report modules and what they import');
  t.notOk(
    [...modules.values()].some((source) => /from\s+'node:/.test(source)),
    'none imports a Node module',
  );
  t.notOk(
    [...modules.keys()].some((name) => name.startsWith('stats/')),
    'the gate’s statistics stay on the server: the page only reads what it decided',
  );

  // Every script the page imports is named up front, so the browser fetches them at once, not import by import.
  const index = await s.call('GET', '/runs', { token: null });
  const preloaded = [...index.text.matchAll(/<link rel="modulepreload" href="([^"]+)"/g)].map((m) => m[1]!);
  t.same(
    [...preloaded].sort(),
    [
      ...['app', 'api', 'list', 'run', 'views'].map((f) => `/runs/page/${f}.js`),
      ...[...modules.keys()].map((name) => `/runs/page/modules/${name}.js`),
    ].sort(),
    'a modulepreload for each of the page’s scripts and each report module',
  );
  for (const path of preloaded) t.equal((await s.call('GET', path, { token: null })).status, 200, `${path} is served`);

  const off = await startStack(t, { env: { RUNS_PAGE: 'false' } });
  const gone = await off.call('GET', '/runs', { token: null });
  t.equal(gone.status, 404, 'RUNS_PAGE=false: no page');
  t.match(gone.body.message, /RUNS_PAGE=false/);
  t.equal((await off.call('GET', '/v1/runs')).status, 200, 'the API stays');
});

const NO_CHROMIUM = needs('chromium');

t.test('a comparison followed live to its verdict, side by side, hostile text as text', NO_CHROMIUM, async (t) => {
  // Each reply comes after 150 ms: the run takes long enough to be watched.
  const s = await startStack(t, { engine: { replyDelayMs: 150 } });
  const browser = await launch(t);
  const id = await startComparison(s, {
    baseline: 'coach',
    name: 'release gate',
    min_attempts: 3,
    max_attempts: 6,
    conversations: [orderLookup, hostile, steady, slowFix],
  });
  const { page, problems } = await openSignedIn(browser, `${s.url}/runs/${id}`);

  // Live: the sessions spent move without a reload.
  await page.waitForSelector('#sessions');
  const first = Number(await page.textContent('#sessions'));
  await page.waitForFunction((n) => Number(document.querySelector('#sessions')?.textContent) > n, first, { timeout: scaled(30_000) });

  // The plot fills in as the gate stops conversations: the regression drawn while the slow one is still deciding.
  await page.waitForFunction(
    () => {
      // order lookup is the suite's first conversation, slow fix its fourth.
      const row = (index: number) => document.querySelector(`#plot .plot-card.live g.row[data-index="${index}"]`);
      return row(0)?.querySelector('g.series') != null && row(3)?.querySelector('g.series') === null;
    },
    undefined,
    { timeout: scaled(60_000) },
  );
  const early = await plotRows(page);
  const drawn = early.filter((row) => row.sides.length > 0);
  t.ok(
    early.every((row) => row.live),
    'the live plot, before the report',
  );
  t.same(early.find((row) => row.name === 'slow fix')?.sides, [], 'the slow conversation is still deciding');
  t.same(drawn.find((row) => row.name === 'order lookup')?.verdict, 'regressed', 'a regression is drawn as soon as it is decided');
  t.match(
    await page.textContent('#table tr[data-conversation="order lookup"]'),
    /95 %.*95 %.*regressed/s,
    'its row in the table: both sides’ intervals and the verdict',
  );
  await page.screenshot({ path: shot('live'), fullPage: true });

  // The verdict appears when it ends, the report's own sentence.
  await page.waitForSelector('header .answer', { timeout: scaled(60_000) });
  const view = await ended(s, id);
  const report = view.report as ComparisonReport;
  t.equal((await page.textContent('header .answer'))?.trim(), comparisonAnswer(report).text, 'the verdict is the report’s');

  // At the end the report's plot: every row drawn, and each row drawn live is drawn the same.
  const final = await plotRows(page);
  t.same(
    final.map((row) => [row.name, row.live, row.sides.length]),
    report.conversations.map((c) => [c.name, false, 2]),
    'the report’s plot, every conversation drawn',
  );
  t.same(final.find((row) => row.name === 'slow fix')?.verdict, 'fixed', 'more drawn after');
  for (const row of drawn) {
    const same = final.find((f) => f.name === row.name)!;
    t.same(row.sides, same.sides, `${row.name}: the live intervals are the report’s`);
    if (row.verdict !== 'stopped') t.equal(row.verdict, same.verdict, `${row.name}: the live verdict is the report’s`);
  }
  t.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), 1, 'no reload');
  await page.waitForSelector('svg');
  t.same(await axeViolations(page), [], 'axe: no serious or critical violation on the run');

  // The reports: JSON from the page, JUnit and HTML from the API with the token in a header, each saved from a blob.
  const asked: string[] = [];
  page.on('request', (request) => asked.push(request.url()));
  for (const [button, accept, name] of [
    ['junit', 'application/xml', `${id}.junit.xml`],
    ['html', 'text/html', `${id}.html`],
    ['json', null, `${id}.json`],
  ] as const) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`button[data-download=${button}]`)]);
    t.equal(download.suggestedFilename(), name);
    t.match(download.url(), /^blob:/, `${button}: saved from a blob`);
    const saved = await readFile(await download.path(), 'utf8');
    const expected =
      accept === null ? JSON.stringify(report, null, 2) : (await s.call('GET', `/v1/runs/${id}`, { headers: { accept } })).text;
    t.equal(saved, expected, `${button}: the gateway's report, as follow writes it`);
  }
  t.notOk(
    asked.some((url) => url.includes('demo-token')),
    'the token is never in a URL',
  );

  // Every attempt a mark in its row; a mark opens the transcripts side by side, aligned by turn.
  const regressed = page.locator('tbody[data-conversation="order lookup"]');
  t.ok((await regressed.locator('button.mark').count()) >= 6, 'both sides’ attempts as marks');
  await regressed.locator('button.mark').first().click();
  await page.waitForSelector('#detail .pair');
  t.match(page.url(), /#conversation=order\+lookup&attempt=1$/, 'the attempt is a link');
  const tools = (side: string) => page.locator(`#detail .line[data-side=${side}] .msg.agent`).allTextContents();
  t.match((await tools('baseline')).join(' '), /lookup_order/, 'the baseline looked the order up');
  t.notMatch((await tools('candidate')).join(' '), /lookup_order/, 'the candidate did not');
  t.match((await page.locator('#detail .line[data-side=candidate] .bubble').allTextContents()).join(' '), /\w/, 'its reply is shown');
  t.ok(await page.locator('#detail .row-flag').count(), 'the first differing turn is marked');
  t.equal(await page.locator('#detail .pair').count(), 1, 'only the opened attempt is in the page');
  await page.screenshot({ path: shot('side-by-side'), fullPage: true });

  // The link opens the same attempt in a new tab of the same reader.
  const { page: linked } = await openSignedIn(browser, page.url());
  await linked.waitForSelector('#detail .pair', { timeout: scaled(10_000) });
  t.match(await linked.textContent('#detail h2'), /order lookup · attempt 1/, 'a new tab signs in once and lands on the attempt');
  await linked.close();

  // Hostile text: the agent answered markup; it is shown as characters, and nothing ran.
  await page.fill('#conv-filters input[name=q]', 'onerror');
  t.equal(await page.locator('tbody[data-conversation]:not([hidden])').count(), 1, 'the search finds the one conversation');
  await page.locator('tbody[data-conversation]:not([hidden]) button.mark').first().click();
  await page.waitForFunction(() => document.querySelector('#detail h2')?.textContent?.includes('markup'));
  t.match(await page.textContent('#detail'), HOSTILE, 'the markup shown as text');
  t.match(await page.textContent('tbody[data-conversation]:not([hidden]) th'), HOSTILE, 'the suite’s name too');
  t.equal(await page.locator('#main img, #detail script').count(), 0, 'no element made of data');
  await page.screenshot({ path: shot('transcript'), fullPage: true });

  // Filters.
  await page.fill('#conv-filters input[name=q]', '');
  await page.check('#conv-filters input[name=regressed]');
  t.same(
    await page.locator('tbody[data-conversation]:not([hidden])').evaluateAll((b) => b.map((e) => e.getAttribute('data-conversation'))),
    ['order lookup'],
  );
  t.same(problems, [], 'no console error, no dialog, no failed request');
});

t.test('the list, cancel with a confirmation, sign out', NO_CHROMIUM, async (t) => {
  const s = await startStack(t, { engine: { replyDelayMs: 300 } });
  const browser = await launch(t);
  const done = await s.call('POST', runPath(), { body: { conversations: [steady] } });
  t.equal(done.status, 200);
  const id = await startComparison(s, { baseline: 'coach', name: 'nightly gate', max_attempts: 20, conversations: [orderLookup, steady] });

  const { page, problems } = await openSignedIn(browser, `${s.url}/runs`);
  await page.waitForSelector(`tr[data-run="${id}"]`);
  const rows = await page.locator('tr[data-run]').evaluateAll((r) => r.map((e) => e.getAttribute('data-status')));
  t.same(rows, ['running', 'passed'], 'newest first');
  t.match(await page.textContent(`tr[data-run="${id}"]`), /coach → coach\.3/, 'baseline → candidate');
  const suites = await page.locator('tr[data-run] td:nth-child(3)').allTextContents();
  t.same(suites, ['nightly gate', '–'], 'the suite’s name; a run of a suite sent without one has none');
  t.same(await axeViolations(page), [], 'axe: no serious or critical violation on the list');
  await page.screenshot({ path: shot('list'), fullPage: true });
  await page.selectOption('#filters select[name=status]', 'passed');
  await page.click('#filters button[type=submit]');
  await page.waitForFunction(() => document.querySelectorAll('tr[data-run]').length === 1);

  await page.goto(`${s.url}/runs/${id}`);
  await page.waitForSelector('#cancel');
  await page.click('#cancel');
  await page.click('#cancel-no');
  t.equal((await s.call('GET', `/v1/runs/${id}`)).body.status, 'running', 'keeping it running cancels nothing');
  await page.click('#cancel');
  await page.click('#cancel-yes');
  await page.waitForFunction(() => document.querySelector('#live')?.textContent?.includes('cancelled'), undefined, {
    timeout: scaled(30_000),
  });
  t.equal((await ended(s, id)).status, 'cancelled');

  await page.click('#sign-out');
  await page.waitForSelector('#token');
  t.equal(await page.evaluate(() => sessionStorage.length), 0, 'signing out forgets the token');
  t.notMatch(page.url(), /token/);
  t.same(problems, [], 'no console error, no dialog, no failed request');
});

t.test(
  'a teammate with Viewer opens the link and sees the run, but may not cancel it; a caller without Viewer sees nothing',
  NO_CHROMIUM,
  async (t) => {
    const s = await startStack(t, { engine: { replyDelayMs: 300 } });
    const browser = await launch(t);
    const id = await startComparison(s, { baseline: 'coach', max_attempts: 20, conversations: [orderLookup, steady] });
    t.teardown(() => s.call('DELETE', `/v1/runs/${id}`));

    // bob has Viewer on coach's project; the run is demo's.
    const { page: bob } = await openSignedIn(browser, `${s.url}/runs/${id}`, 'bob-token');
    await bob.waitForSelector('#cancel');
    t.match(await bob.textContent('#head'), /coach → coach\.3/, 'the teammate sees the run');
    t.match(await bob.textContent('#head'), /demo@example\.com/, 'and who started it');
    await bob.waitForFunction(() => Number(document.querySelector('#sessions')?.textContent) > 0, undefined, { timeout: scaled(30_000) });
    await bob.click('#cancel');
    await bob.click('#cancel-yes');
    await bob.waitForSelector('#confirm-slot .problem-box');
    t.match(
      await bob.textContent('#confirm-slot'),
      /run_not_yours.*Only the caller who started this run cancels it/s,
      'the API’s refusal, shown',
    );
    t.equal((await s.call('GET', `/v1/runs/${id}`)).body.status, 'running', 'the run goes on');

    const { page: stranger } = await openSignedIn(browser, `${s.url}/runs/${id}`, 'outsider-token');
    await stranger.waitForSelector('#head .problem-box');
    t.match(await stranger.textContent('#head'), /No such run, or your token may not read it/);
    t.notMatch(await stranger.textContent('#main'), /coach/, 'nothing of the run');
  },
);
