/**
 * The debug page (DEBUG_PAGE=true): GET /debug, its files (public/debug/), the JSON it polls
 * (GET /debug/state) and each conversation's last turns (GET /debug/conversations/:id/turns,
 * recorded only while the page is on); and the page itself in a real headless Chromium (Debian's,
 * see scripts/ensure-chromium.sh), with hostile agent text shown as text.
 */

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { RECENT_TURNS_KEPT, RecentTurns } from '../src/conversations/recent-turns.js';
import { ConversationRegistry } from '../src/conversations/registry.js';
import type { TurnRecord } from '../src/engine/socket.js';
import { isDebugHost } from '../src/routes/debug.js';
import { launch, REFRESH_DOCS, watchProblems } from './support/browser.js';
import { eventually, startStack } from './support/stack.js';
import { conversationPath, runPath, turnPath } from './support/http.js';
import { validatorAt } from './support/openapi.js';
import { scaled } from './support/time.js';
import { needs } from './support/tools.js';

const DOCS_SCREENSHOT = fileURLToPath(new URL('../docs/debug-page.png', import.meta.url));
const SCREENSHOT = REFRESH_DOCS ? DOCS_SCREENSHOT : fileURLToPath(new URL('./output/debug-page.png', import.meta.url));
const ON = { DEBUG_PAGE: 'true' };
/** The page's files as the package ships them. */
const PAGE_FILE = (name: string) => readFileSync(fileURLToPath(new URL(`../public/debug/${name}`, import.meta.url)), 'utf8');
const turnsPath = (sessionId: string) => `/debug/conversations/${sessionId}/turns`;
/** Strings that must never reach the page: the callers' tokens and the engine identity in any form. */
const SECRETS = ['demo-token', 'bob-token', 'Bearer', 'tester', 's3cret', Buffer.from('tester:s3cret').toString('base64')];

/** A schema of openapi.yaml's components: DebugState, DebugTurns. */
const componentSchema = (name: string) => validatorAt(`/components/schemas/${name}`);
const stateSchema = () => componentSchema('DebugState');

t.test('test screenshots go to an ignored folder, not over the committed one', async (t) => {
  const ignored = readFileSync(fileURLToPath(new URL('../.gitignore', import.meta.url)), 'utf8')
    .split('\n')
    .map((l) => l.trim());
  t.ok(ignored.includes('test/output/'), '.gitignore lists test/output/');
  if (!REFRESH_DOCS) t.match(SCREENSHOT, /[\\/]test[\\/]output[\\/]debug-page\.png$/, 'a plain test run writes to test/output/');
});

t.test('the page is off by default: nothing served, no turn recorded', async (t) => {
  // Who subscribes to the registry's turns (the capture only counts: this test reads no kept turn).
  const subscribed = t.capture(ConversationRegistry.prototype, 'onTurnEnded');
  const s = await startStack(t);
  const conv = await s.open('coach');
  await s.call('POST', turnPath(conv.sessionId), { body: { line: 'Where is my order?' } });
  t.equal(subscribed().length, 0, 'nothing listens to the turns: none is kept');
  for (const path of ['/debug', '/debug/state', '/debug/app.js', '/debug/app.css', turnsPath(conv.sessionId)]) {
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
  t.equal(subscribed().length, 0, 'DEBUG_PAGE=false: still nothing listens');
  await startStack(t, { env: ON });
  t.equal(subscribed().length, 1, 'with the page on, its routes listen to the turns');
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

t.test('the last turns: each conversation’s, bounded, only the turns that ran here', async (t) => {
  const s = await startStack(t, { env: ON });
  const conv = await s.open('coach', { device_ref: 'alice' });
  const turn = (line: string) => s.call('POST', turnPath(conv.sessionId), { body: { line } });
  await turn('Where is my order?');
  await turn('Which size fits?');

  const answer = await s.call('GET', turnsPath(conv.sessionId), { token: null });
  t.equal(answer.status, 200, 'no token needed');
  t.match(answer.headers['content-type'], /^application\/json/);
  t.equal(answer.headers['cache-control'], 'no-store');
  const validate = componentSchema('DebugTurns');
  t.ok(validate(answer.body), `the turns match openapi.yaml: ${JSON.stringify(validate.errors)}`);
  t.match(answer.body, { session_id: conv.sessionId, kept: RECENT_TURNS_KEPT });
  t.same(
    answer.body.turns.map((turn: { line: string }) => turn.line),
    ['#intro', 'Where is my order?', 'Which size fits?'],
    'every turn, oldest first',
  );
  t.match(answer.body.turns[1], {
    ended_at: String,
    line: 'Where is my order?',
    outcome: 'exit',
    text: 'You said: Where is my order? Anything else?',
    tools: ['lookup_order'],
    shown: [],
    duration_ms: Number,
  });
  t.match(answer.body.turns[2], { text: 'You said: Which size fits? Anything else?', tools: [], shown: ['size_chart'] });
  t.same(
    (await s.call('GET', turnsPath(conv.sessionId.toUpperCase()), { token: null })).body.turns,
    answer.body.turns,
    'the session id in any case',
  );
  t.same(
    (await s.call('GET', turnsPath('0b7f0a52-3c1e-4b9a-9d51-6f1a2b3c4d5e'), { token: null })).body.turns,
    [],
    'an unknown one has none',
  );

  // Bounded: the last RECENT_TURNS_KEPT turns.
  for (let i = 0; i < RECENT_TURNS_KEPT; i += 1) await turn(`line ${i}`);
  const kept = (await s.call('GET', turnsPath(conv.sessionId), { token: null })).body.turns;
  t.equal(kept.length, RECENT_TURNS_KEPT, `the last ${RECENT_TURNS_KEPT} turns`);
  t.equal(kept.at(-1).line, `line ${RECENT_TURNS_KEPT - 1}`, 'the newest last');
  t.equal(kept[0].line, 'line 0', 'the older ones dropped');

  const other = await s.open('coach', {}, 'bob-token');
  await s.call('POST', turnPath(other.sessionId), { body: { line: 'sim:huge:5000' }, token: 'bob-token' });
  const cut = (await s.call('GET', turnsPath(other.sessionId), { token: null })).body.turns;
  t.equal(cut.length, 2, "another caller's conversation has its own turns");
  t.equal(cut[1].text, `${'x'.repeat(2000)}…`, 'a long text is cut at 2000 characters');
  t.ok(validate({ session_id: other.sessionId, kept: RECENT_TURNS_KEPT, turns: cut }), 'still as declared');

  // A suite run's turns (the runner calls the registry itself, not the conversation service).
  const run = await s.call('POST', runPath(), {
    body: { conversations: [{ name: 'suite', turns: [{ line: 'hello from a suite', expect: { text_contains: 'hello' } }] }] },
  });
  t.equal(run.status, 200, run.text);
  const suiteTurns = (await s.call('GET', turnsPath(run.body.session_ids[0]), { token: null })).body.turns;
  t.match(suiteTurns, [{ line: 'hello from a suite', text: 'You said: hello from a suite Anything else?', outcome: 'exit' }]);

  t.notOk(
    s.logs.some((line) => line.includes('/turns"') && line.includes('/debug/')),
    'fetching the turns writes no log lines',
  );
  const text = JSON.stringify(kept) + JSON.stringify(cut);
  for (const secret of SECRETS) t.notOk(text.includes(secret), `no ${secret} in the turns`);
});

t.test('the kept turns stay bounded across conversations', async (t) => {
  type Listener = Parameters<ConversationRegistry['onTurnEnded']>[0];
  let listener: Listener | undefined;
  const registry: Pick<ConversationRegistry, 'onTurnEnded'> = { onTurnEnded: (l) => void (listener = l) };
  const recent = new RecentTurns(registry as ConversationRegistry);
  const record = (text: string): TurnRecord => ({
    outcome: 'exit',
    elements: [{ type: 'text', text }],
    endedByAgent: false,
    notes: [],
    first: false,
    durationMs: 12.4,
  });
  const conv = (sessionId: string | undefined) => ({ sessionId }) as Parameters<Listener>[0];
  for (let i = 0; i < 1001; i += 1) listener!(conv(`s-${i}`), `line ${i}`, record('hi'));
  t.same(recent.of('s-0'), [], 'the conversation with the oldest last turn is dropped first (1000 kept)');
  t.equal(recent.of('s-1000').length, 1);
  t.equal(recent.of('s-1')[0]?.duration_ms, 12, 'whole milliseconds');
  listener!(conv(undefined), 'no session', record('hi'));
  // About 2 million characters in all: 600 conversations of 10 turns of 2000 characters would be 12 million.
  for (let i = 0; i < 600; i += 1) for (let n = 0; n < 10; n += 1) listener!(conv(`big-${i}`), 'x', record('y'.repeat(3000)));
  t.same(recent.of('big-0'), [], 'the oldest dropped for size');
  t.equal(recent.of('big-599').length, 10);
  t.equal(recent.of('big-599')[0]?.text.length, 2001, 'each text cut');
});

t.test('the page and its files: static, from public/debug/, escaped, locked down', async (t) => {
  const s = await startStack(t, { env: ON });
  const files: Array<[string, string, string]> = [
    ['/debug', 'index.html', 'text/html; charset=utf-8'],
    ['/debug/app.js', 'app.js', 'text/javascript; charset=utf-8'],
    ['/debug/app.css', 'app.css', 'text/css; charset=utf-8'],
  ];
  for (const [path, file, type] of files) {
    const res = await s.call('GET', path, { token: null });
    t.equal(res.status, 200, `${path}: 200`);
    t.equal(res.headers['content-type'], type, `${path}: ${type}`);
    t.equal(res.text, PAGE_FILE(file), `${path} is public/debug/${file} as it is`);
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.equal(res.headers['cache-control'], 'no-store');
    t.match(res.headers['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'/);
  }
  const html = PAGE_FILE('index.html');
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  t.match(html, /<script type="module" src="debug\/app\.js"><\/script>/);
  t.notMatch(html, /\sstyle=|<style/, 'no inline style');
  t.match(html, /no authentication/);
  const js = PAGE_FILE('app.js');
  t.notMatch(js, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/, 'text only, never HTML');
  t.match(js, /textContent/);
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

const NO_CHROMIUM = needs('chromium');

t.test('the live page in headless Chromium', NO_CHROMIUM, async (t) => {
  const s = await startStack(t, { env: { ...ON, TURN_BUDGET_MS: '20000', MAX_CONVERSATIONS_PER_CALLER: '2' } });
  const browser = await launch(t);

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
  await eventually(() => s.app.conversationRegistry.stats.busy === 1);
  await s.open('coach', {}, 'bob-token'); // bob's third: his idle one makes room

  const context = await browser.newContext({ viewport: { width: 1280, height: 640 }, colorScheme: 'light', locale: 'en-GB' });
  const page = await context.newPage();
  const problems = watchProblems(page);

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

  // A conversation's last turns: a click on its row opens them, and they follow its new turns.
  const chat = await s.open('coach', { device_ref: 'alice' });
  await s.call('POST', turnPath(chat.sessionId), { body: { line: 'Where is my order?' } });
  const chatRow = `tr[data-session-id="${chat.sessionId}"]`;
  await page.waitForSelector(chatRow, { timeout: scaled(5000) });
  await page.click(`${chatRow} td.mono`);
  const transcript = `${chatRow} + tr.transcript`;
  await page.waitForSelector(`${transcript} li.turn`, { timeout: scaled(5000) });
  t.equal(await page.getAttribute(`${chatRow} button.toggle`, 'aria-expanded'), 'true');
  const turnsShown = () =>
    page.$$eval(`${transcript} li.turn`, (items) =>
      items.map((li) => ({
        outcome: li.querySelector('.outcome')?.textContent,
        line: li.querySelector('.said.line .words')?.textContent,
        text: li.querySelector('.said.agent .words')?.textContent,
        chips: [...li.querySelectorAll('.chip')].map((chip) => `${chip.className}: ${chip.textContent}`),
      })),
    );
  t.same(
    await turnsShown(),
    [
      { outcome: 'exit', line: '#intro', text: "Hi, I'm coach. How can I help?", chips: [] },
      {
        outcome: 'exit',
        line: 'Where is my order?',
        text: 'You said: Where is my order? Anything else?',
        chips: ['chip tool: lookup_order'],
      },
    ],
    'the line, the agent’s text, the tools and the outcome of each turn, oldest first',
  );
  await s.call('POST', turnPath(chat.sessionId), { body: { line: 'Which size fits?' } });
  await page.waitForFunction((sel) => document.querySelectorAll(`${sel} li.turn`).length === 3, transcript, {
    timeout: scaled(5000),
    polling: 100,
  });
  t.same((await turnsShown())[2]?.chips, ['chip shown: size_chart'], 'a new turn appears on the next poll, with what it showed');
  t.match(await page.textContent(`${transcript} p`), /The last 3 of 3 turns/);

  const html = await page.content();
  for (const secret of SECRETS) t.notOk(html.includes(secret), `no ${secret} on the page`);

  const committed = existsSync(DOCS_SCREENSHOT) ? readFileSync(DOCS_SCREENSHOT) : undefined;
  mkdirSync(dirname(SCREENSHOT), { recursive: true });
  await page.mouse.move(0, 0);
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  t.ok(existsSync(SCREENSHOT), `screenshot saved to ${SCREENSHOT}`);
  if (!REFRESH_DOCS) {
    t.ok(
      committed === undefined ? !existsSync(DOCS_SCREENSHOT) : readFileSync(DOCS_SCREENSHOT).equals(committed),
      'the committed docs/debug-page.png is left as it is',
    );
  }

  // A second click closes them.
  await page.click(`${chatRow} button.toggle`);
  await page.waitForFunction((sel) => document.querySelector(sel) === null, transcript, { timeout: scaled(2000) });
  t.pass('a second click closes the turns');

  // The filter narrows the table to matching rows.
  await page.fill('#filter', 'u-bob');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-session-id]').length === 3, undefined, {
    timeout: scaled(2000),
  });
  t.pass('the filter shows only the matching rows');
  t.same(problems, [], 'no console errors, page errors, failed requests or dialogs');
});

t.test('the page shows hostile agent text as text, and runs none of it', NO_CHROMIUM, async (t) => {
  const s = await startStack(t, { env: ON });
  const browser = await launch(t);
  const page = await browser.newPage();
  const problems = watchProblems(page);

  // The simulated agent repeats the line: its text is hostile HTML, as an agent's could be.
  const lines = ['<img src=x onerror=alert(1)>', '</script><script>alert(2)</script>', '"><svg onload=alert(3)>'];
  const conv = await s.open('coach');
  for (const line of lines) t.equal((await s.call('POST', turnPath(conv.sessionId), { body: { line } })).status, 200);
  await page.goto(`${s.url}/debug`);
  const row = `tr[data-session-id="${conv.sessionId}"]`;
  await page.waitForSelector(row);
  await page.click(`${row} button.toggle`);
  await page.waitForFunction((sel) => document.querySelectorAll(`${sel} + tr.transcript li.turn`).length === 4, row, {
    timeout: scaled(5000),
  });
  const said = await page.$$eval(`${row} + tr.transcript .said.agent .words`, (nodes) => nodes.map((n) => n.textContent));
  t.same(
    said.slice(1),
    lines.map((line) => `You said: ${line} Anything else?`),
    'the agent’s text shown as text',
  );
  const echoed = await page.$$eval(`${row} + tr.transcript .said.line .words`, (nodes) => nodes.map((n) => n.textContent));
  t.same(echoed.slice(1), lines, 'the lines too');
  t.equal(await page.locator('body img, body svg, tbody script').count(), 0, 'no element made of data');
  t.same(problems, [], 'no dialog opened, no error');

  // The registry cannot hold such ids or states (refs and ids are checked): forged answers prove the rendering of every field.
  const hostile = '<img src=x onerror="window.__pwned=1">';
  const forged = await browser.newPage();
  const forgedProblems = watchProblems(forged);
  await forged.route('**/debug/state', (route) =>
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
  await forged.route('**/debug/conversations/**', (route) =>
    route.fulfill({
      contentType: 'application/json',
      body: JSON.stringify({
        session_id: 'x',
        kept: '<b>10</b>',
        turns: [
          {
            ended_at: hostile,
            line: hostile,
            outcome: '<i>exit</i>',
            text: `</script>${hostile}`,
            tools: [hostile],
            shown: ['<svg onload="window.__pwned=1">'],
            duration_ms: hostile,
          },
        ],
      }),
    }),
  );
  await forged.goto(`${s.url}/debug`);
  await forged.waitForSelector('tbody tr[data-session-id]');
  t.equal(await forged.textContent('tbody tr td:nth-child(2)'), hostile, 'the owner shown as text');
  t.equal(await forged.textContent('#pod'), `<b>${hostile}</b>`);
  t.equal(await forged.getAttribute('tbody tr', 'class'), 'state-unknown openable', 'an unknown state is not a class name');
  await forged.click('tbody tr[data-session-id] button.toggle');
  await forged.waitForSelector('tr.transcript li.turn');
  t.equal(await forged.textContent('tr.transcript .said.agent .words'), `</script>${hostile}`, 'the agent’s text shown as text');
  t.equal(await forged.textContent('tr.transcript .said.line .words'), hostile);
  t.equal(await forged.textContent('tr.transcript .chip.tool'), hostile);
  t.equal(await forged.getAttribute('tr.transcript .outcome', 'data-outcome'), 'unknown', 'an unknown outcome is not an attribute value');
  t.equal(await forged.locator('body img, body svg, body script, body b, tbody i, tbody u').count(), 0, 'no element made of data');
  t.equal(await forged.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'nothing ran');
  t.same(forgedProblems, [], 'no dialog opened, no error');
});
