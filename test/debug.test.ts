/**
 * The debug page (DEBUG_PAGE=true): GET /debug and the JSON it polls, GET /debug/state; and the
 * page itself in a real headless Chromium (Debian's, see scripts/ensure-chromium.sh).
 */

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type ConsoleMessage } from 'playwright-core';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import t from 'tap';
import { request } from 'undici';
import { parse as parseYaml } from 'yaml';
import { PAGE_HTML, PAGE_JS, isDebugHost } from '../src/routes/debug.js';
import { eventually, startStack } from './support/stack.js';
import { conversationPath, turnPath } from './support/http.js';
import { scaled } from './support/time.js';

const CHROMIUM = '/usr/bin/chromium';
/** The committed screenshot in docs/ is refreshed only on purpose (`npm run screenshot`); otherwise into the ignored test/output/. */
const DOCS_SCREENSHOT = fileURLToPath(new URL('../docs/debug-page.png', import.meta.url));
const REFRESH_DOCS = process.env.UPDATE_DOCS_SCREENSHOT === 'true';
const SCREENSHOT = REFRESH_DOCS ? DOCS_SCREENSHOT : fileURLToPath(new URL('./output/debug-page.png', import.meta.url));
const ON = { DEBUG_PAGE: 'true' };
/** Strings that must never reach the page: the callers' tokens and the engine identity in any form. */
const SECRETS = ['demo-token', 'bob-token', 'Bearer', 'tester', 's3cret', Buffer.from('tester:s3cret').toString('base64')];

/** DebugState from openapi.yaml. */
function stateSchema() {
  const load = (path: string) => parseYaml(readFileSync(fileURLToPath(new URL(path, import.meta.url)), 'utf8'));
  const main = load('../openapi.yaml');
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema({ $id: 'doc', components: main.components });
  return ajv.compile({ $ref: 'doc#/components/schemas/DebugState' });
}

t.test('test screenshots go to an ignored folder, not over the committed one', async (t) => {
  const ignored = readFileSync(fileURLToPath(new URL('../.gitignore', import.meta.url)), 'utf8')
    .split('\n')
    .map((l) => l.trim());
  t.ok(ignored.includes('test/output/'), '.gitignore lists test/output/');
  if (!REFRESH_DOCS) t.match(SCREENSHOT, /[\\/]test[\\/]output[\\/]debug-page\.png$/, 'a plain test run writes to test/output/');
});

t.test('the page is off by default', async (t) => {
  const s = await startStack(t);
  for (const path of ['/debug', '/debug/state', '/debug/app.js']) {
    const res = await s.call('GET', path, { token: null });
    t.equal(res.status, 404, `${path} is 404`);
    t.equal(res.body.error, 'not_found');
    t.match(res.body.message, /start the gateway with DEBUG_PAGE=true/, `${path}: the 404 says how to turn the page on`);
  }
  const off = await startStack(t, { env: { DEBUG_PAGE: 'false' } });
  const answer = await off.call('GET', '/debug', { token: null });
  t.equal(answer.status, 404, 'DEBUG_PAGE=false: 404');
  t.match(answer.headers['content-type'], /application\/json/, 'a JSON 404, not a bare one');
  t.match(answer.body, { error: 'not_found', message: /DEBUG_PAGE=true/ });
  const elsewhere = await off.call('GET', '/debugger', { token: null });
  t.notMatch(elsewhere.body.message, /DEBUG_PAGE/, 'only /debug and below get the hint');
});

t.test('with the page on, an unknown path below /debug is a plain 404', async (t) => {
  const s = await startStack(t, { env: ON });
  const res = await s.call('GET', '/debug/nothing-here', { token: null });
  t.equal(res.status, 404);
  t.notMatch(res.body.message, /DEBUG_PAGE/);
});

t.test('the state: every caller’s conversations and the pool, never a token', async (t) => {
  const s = await startStack(t, { env: { ...ON, MAX_CONVERSATIONS_PER_CALLER: '2' } });
  const first = await s.open('coach', {}, 'demo-token');
  const bobs = await s.open('coach', {}, 'bob-token');
  await s.call('POST', turnPath(first.sessionId), { body: { line: 'Where is my order?' } });

  const state = await s.call('GET', '/debug/state', { token: null });
  t.equal(state.status, 200, 'no token needed');
  t.match(state.headers['content-type'], /^application\/json/);
  t.equal(state.headers['cache-control'], 'no-store');
  t.match(state.body, {
    pod: String,
    generated_at: String,
    pool: { open: 2, busy: 0, remembered: 0, draining: false, evictions_total: 0, limits: { per_caller: 2, per_pod: 200 } },
    conversations_total: 2,
  });
  const mine = state.body.conversations.find((c: { session_id: string }) => c.session_id === first.sessionId);
  t.same(Object.keys(mine).sort(), [
    'agent',
    'close_cause',
    'closed_at',
    'connection',
    'created_at',
    'ended_by_agent',
    'idle_seconds',
    'last_turn_at',
    'owner',
    'session_id',
    'state',
    'turns',
  ]);
  t.match(mine, { owner: 'u-demo', agent: 'agent:coach', state: 'idle', connection: 'open', turns: 2, close_cause: null });
  t.type(mine.idle_seconds, 'number');
  t.match(
    state.body.conversations.find((c: { session_id: string }) => c.session_id === bobs.sessionId),
    { owner: 'u-bob', state: 'idle', turns: 1 },
    "another caller's conversation is shown too",
  );

  // Closed, then two more of the same caller: the oldest idle one is evicted.
  await s.call('DELETE', conversationPath(first.sessionId));
  await s.open('coach', {}, 'bob-token');
  await s.open('coach', {}, 'bob-token');
  const later = await s.call('GET', '/debug/state', { token: null });
  t.match(later.body.pool, { open: 2, remembered: 2, evictions_total: 1, evictions: { caller: 1, pod: 0 } });
  t.match(
    later.body.conversations.find((c: { session_id: string }) => c.session_id === first.sessionId),
    {
      state: 'closed',
      connection: 'closed',
      close_cause: 'caller',
      idle_seconds: null,
      closed_at: String,
    },
  );
  t.match(
    later.body.conversations.find((c: { session_id: string }) => c.session_id === bobs.sessionId),
    {
      state: 'closed',
      close_cause: 'evicted',
    },
  );
  t.same(
    later.body.conversations.map((c: { state: string }) => c.state),
    ['idle', 'idle', 'closed', 'closed'],
    'open conversations first',
  );
  const limited = await s.call('GET', '/debug/state?limit=1', { token: null });
  t.equal(limited.body.conversations.length, 1);
  t.equal(limited.body.conversations_total, 4);
  t.equal((await s.call('GET', '/debug/state?limit=x', { token: null })).status, 400);

  const validate = stateSchema();
  for (const answer of [state, later, limited]) {
    t.ok(validate(answer.body), `the state matches openapi.yaml: ${JSON.stringify(validate.errors)}`);
  }

  t.notOk(
    s.logs.some((line) => line.includes('/debug/state')),
    'polling the state writes no log lines',
  );

  const text = later.text + state.text;
  for (const secret of SECRETS) t.notOk(text.includes(secret), `no ${secret} in the state`);
  const withToken = await s.call('GET', '/debug/state', { token: 'demo-token' });
  for (const secret of SECRETS) t.notOk(withToken.text.includes(secret), `no ${secret}, even when one was sent`);
});

t.test('the page and its assets: static, escaped, locked down', async (t) => {
  const s = await startStack(t, { env: ON });
  const page = await s.call('GET', '/debug', { token: null });
  t.equal(page.status, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.headers['content-security-policy'], /script-src 'self'/);
  t.match(page.headers['content-security-policy'], /connect-src 'self'/);
  t.equal(page.headers['x-content-type-options'], 'nosniff');
  t.equal(page.text, PAGE_HTML);
  t.notMatch(PAGE_HTML, /<script>(?!<)/, 'no inline script');
  t.match(page.text, /no authentication/);

  const js = await s.call('GET', '/debug/app.js', { token: null });
  t.match(js.headers['content-type'], /^text\/javascript/);
  t.equal(js.text, PAGE_JS);
  t.notMatch(PAGE_JS, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/, 'text only, never HTML');
  t.match(PAGE_JS, /textContent/);
  t.equal((await s.call('GET', '/debug/app.css', { token: null })).status, 200);
  t.equal((await s.call('GET', '/debug/', { token: null })).status, 302, '/debug/ redirects to the page');

  // DNS rebinding: a page elsewhere that points a name of its own at the forwarded port.
  for (const host of ['evil.example', 'evil.example:8080', 'localhost.evil.example']) {
    const res = await request(`${s.url}/debug/state`, { headers: { host } });
    t.equal(res.statusCode, 403, `Host ${host} refused`);
    await res.body.dump();
  }
  for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080', '10.1.2.3', 'app.localhost']) {
    t.ok(isDebugHost(host), `Host ${host} accepted`);
  }
  t.notOk(isDebugHost(undefined));
});

t.test(
  'the live page in headless Chromium',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: run scripts/ensure-chromium.sh` },
  async (t) => {
    const s = await startStack(t, { env: { ...ON, TURN_BUDGET_MS: '20000', MAX_CONVERSATIONS_PER_CALLER: '2' } });
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    t.teardown(() => browser.close());

    // A pod with some history: idle, busy, evicted, ended by the agent, other callers'.
    const watched = await s.open('coach', { device_ref: 'alice', run_label: 'debug-page' });
    await s.call('POST', turnPath(watched.sessionId), { body: { line: 'Where is my order?' } });
    const evicted = await s.open('coach', {}, 'bob-token');
    const ended = await s.open('coach.2', {}, 'tenant-token');
    await s.call('POST', `/v1/agents/coach.2/conversations/${ended.sessionId}/turns`, { body: { line: 'bye' }, token: 'tenant-token' });
    const busy = await s.open('coach', {}, 'bob-token');
    const hangUp = new AbortController();
    const running = s
      .call('POST', turnPath(busy.sessionId), {
        body: { line: 'sim:hang' },
        token: 'bob-token',
        signal: hangUp.signal,
      })
      .catch(() => undefined);
    t.teardown(async () => {
      hangUp.abort();
      await running;
    });
    await eventually(() => s.app.conversations.stats.busy === 1);
    await s.open('coach', {}, 'bob-token'); // bob's third: his idle one makes room

    const context = await browser.newContext({ viewport: { width: 1280, height: 640 }, colorScheme: 'light', locale: 'en-GB' });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (msg: ConsoleMessage) => {
      if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`${msg.type()}: ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()}`));

    const res = await page.goto(`${s.url}/debug`);
    t.equal(res?.status(), 200);
    const row = `tr[data-session-id="${watched.sessionId}"]`;
    await page.waitForSelector(row, { timeout: scaled(5000) });
    const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    t.equal(cells[0], watched.sessionId);
    t.equal(cells[1], 'u-demo', 'the owner');
    t.equal(cells[2], 'agent:coach');
    t.equal(cells[3], 'idle');
    t.equal(cells[4], '2', 'turns');
    t.equal(await page.textContent('#stat-open'), '3');
    t.equal(await page.textContent('#stat-busy'), '1');
    t.equal(await page.textContent(`tr[data-session-id="${busy.sessionId}"] td.state`), 'busy', "another caller's busy conversation");
    t.equal(await page.textContent(`tr[data-session-id="${evicted.sessionId}"] td.cause`), 'evicted');
    t.equal(await page.textContent('#stat-evictions'), '1', 'the evictions counter');

    // Closed by the test: the page shows it on its next poll.
    t.equal((await s.call('DELETE', conversationPath(watched.sessionId))).status, 204);
    await page.waitForFunction((sel) => document.querySelector(`${sel} td.state`)?.textContent === 'closed', row, {
      timeout: scaled(5000),
      polling: 100,
    });
    t.equal(await page.textContent(`${row} td.cause`), 'caller', 'with its close cause');
    t.equal(await page.textContent('#stat-open'), '2');
    t.equal(await page.textContent('#stat-remembered'), '3');
    t.match(await page.textContent('#status'), /^updated /);

    const html = await page.content();
    for (const secret of SECRETS) t.notOk(html.includes(secret), `no ${secret} on the page`);

    const committed = existsSync(DOCS_SCREENSHOT) ? readFileSync(DOCS_SCREENSHOT) : undefined;
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    t.ok(existsSync(SCREENSHOT), `screenshot saved to ${SCREENSHOT}`);
    if (!REFRESH_DOCS) {
      t.ok(
        committed === undefined ? !existsSync(DOCS_SCREENSHOT) : readFileSync(DOCS_SCREENSHOT).equals(committed),
        'the committed docs/debug-page.png is left as it is',
      );
    }

    // The filter narrows the table to matching rows.
    await page.fill('#filter', 'u-bob');
    await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-session-id]').length === 3, undefined, {
      timeout: scaled(2000),
    });
    t.pass('the filter shows only the matching rows');
    t.same(problems, [], 'no console errors, page errors or failed requests');
  },
);

t.test(
  'the page shows hostile text as text',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: run scripts/ensure-chromium.sh` },
  async (t) => {
    const s = await startStack(t, { env: ON });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    t.teardown(() => browser.close());
    const page = await browser.newPage();
    const hostile = '<img src=x onerror="window.__pwned=1">';
    // The registry cannot hold such values (refs and ids are checked); a forged state proves the rendering.
    await page.route('**/debug/state', (route) =>
      route.fulfill({
        contentType: 'application/json',
        body: JSON.stringify({
          pod: `<b>${hostile}</b>`,
          generated_at: new Date().toISOString(),
          pool: { open: 1, busy: 0, remembered: 0, draining: false, evictions_total: 0 },
          conversations_total: 1,
          conversations: [
            {
              session_id: `x" onmouseover="window.__pwned=1`,
              owner: hostile,
              agent: '<script>window.__pwned=1</script>',
              state: '<i>idle</i>',
              connection: 'open',
              turns: '<u>1</u>',
              idle_seconds: 0,
              close_cause: hostile,
              created_at: new Date().toISOString(),
              last_turn_at: null,
            },
          ],
        }),
      }),
    );
    await page.goto(`${s.url}/debug`);
    await page.waitForSelector('tbody tr[data-session-id]');
    t.equal(await page.textContent('tbody tr td:nth-child(2)'), hostile, 'the owner shown as text');
    t.equal(await page.textContent('#pod'), `<b>${hostile}</b>`);
    t.equal(await page.locator('body img, body script, body b, tbody i, tbody u').count(), 0, 'no element made of data');
    t.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'nothing ran');
    t.equal(await page.getAttribute('tbody tr', 'class'), 'state-unknown', 'an unknown state is not a class name');
  },
);
