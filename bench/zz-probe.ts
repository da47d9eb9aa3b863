/**
 * How fast the runs page opens a big comparison: ten conversations at `max_attempts: 60`, every
 * round run (1,200 attempts), in Debian's headless Chromium. The gateway (with its simulators)
 * serves the page; in front of it, a plain HTTP proxy on loopback answers the run's view with a
 * report built by the real gate (test/support/report-fixtures.ts) and passes every other request
 * through, so only the page is measured. (Not the browser's request interception: with it, every
 * request of the page, each module included, waits for a round trip to this process.)
 *
 * "Usable" is: the verdict sentence, the plot, the filters and the table with all 1,200 attempt
 * marks are on the screen, and a click on a mark, made in the first frame after they were drawn,
 * has drawn that attempt's transcript. `npm run bench:runs-page` prints, for each of the loads and
 * their median and range:
 * - `usable_ms`: navigation start → that transcript in the page and laid out;
 * - `drawn_ms`: navigation start → the frame where the verdict, plot, filters and marks are all in the page;
 * - `transcript_ms`: the click → its side-by-side transcript in the page and laid out;
 * - `modules_ms`, `view_ms`, `report_ms`: navigation start → the page's script running (its modules
 *   loaded), the run's view read and parsed, the report drawn (the page's `performance.mark`s);
 * - `dom_nodes`: elements in the page once drawn (no transcript is in it until one is opened).
 * Options: `--loads N` (default 7), `--turns N` (each attempt's turns, default 1). The last line of
 * stdout is one JSON object, with the machine's load average before and after. No assertion: the
 * figures depend on the machine.
 */

import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { LAUNCH } from '../test/support/browser.js';
import { comparisonFixture, type Plan } from '../test/support/report-fixtures.js';
import { startStack } from '../test/support/stack.js';

const ID = '6f1c7c1e-3c55-4a8e-9a1f-0d6f1d6c2a10';
const ATTEMPTS_PER_SIDE = 60;

const { values: options } = parseArgs({ options: { loads: { type: 'string', default: '7' }, turns: { type: 'string', default: '1' } } });
const LOADS = Number(options.loads);
const TURNS = Number(options.turns);

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]): [number, number] => [Math.min(...values), Math.max(...values)];
const load = (): number[] => loadavg().map((x) => Math.round(x * 100) / 100);

/** The view `GET /v1/runs/{id}` answers for the ended comparison. */
async function runView(): Promise<string> {
  const plans: Plan[] = Array.from({ length: 10 }, (_, i) => ({
    name: `conversation ${i + 1}`,
    baseline: [true, true, false, true],
    candidate: i < 2 ? [false, true, false] : [true, false, true, true],
  }));
  const report = await comparisonFixture(plans, { mode: { kind: 'repeat', attempts: ATTEMPTS_PER_SIDE }, turns: TURNS });
  const attempts = report.conversations.length * ATTEMPTS_PER_SIDE * 2;
  return JSON.stringify({
    id: ID,
    kind: 'comparison',
    status: report.regressed ? 'failed' : 'passed',
    agent: report.candidate.agent,
    baseline: report.baseline.agent,
    monitor: null,
    created_at: report.started_at,
    ended_at: report.finished_at,
    pod: 'bench',
    moves: [],
    progress: {
      conversations: report.conversations.map((c, i) => ({
        conversation: c.name,
        conversation_index: i,
        rounds: ATTEMPTS_PER_SIDE,
        budget: ATTEMPTS_PER_SIDE,
        sessions: ATTEMPTS_PER_SIDE * 2,
        attempts: null,
        baseline: { attempts: ATTEMPTS_PER_SIDE, passed: c.baseline.attempts_passed, errors: 0 },
        candidate: { attempts: ATTEMPTS_PER_SIDE, passed: c.candidate.attempts_passed, errors: 0 },
        state: 'budget',
      })),
      sessions: attempts,
      sessions_budget: attempts,
      decided: report.conversations.length,
      attempts_in_flight: 0,
    },
    report,
    error: null,
  });
}

/** A proxy in front of the gateway that answers the run's view itself. */
async function proxy(gateway: string, body: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(gateway);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET' && req.url === `/v1/runs/${ID}`) {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(body);
      return;
    }
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface Sample {
  usable_ms: number;
  drawn_ms: number;
  transcript_ms: number;
  modules_ms: number;
  view_ms: number;
  report_ms: number;
  dom_nodes: number;
}

async function main(): Promise<void> {
  const loadBefore = load();
  const teardowns: Array<() => unknown> = [];
  const body = await runView();
  const attempts = 10 * ATTEMPTS_PER_SIDE * 2;

  const s = await startStack({ teardown: (fn) => teardowns.push(fn) });
  const front = await proxy(s.url, body);
  teardowns.push(() => front.close());
  const browser = await chromium.launch(LAUNCH);
  try {
    const samples: Sample[] = [];
    for (let run = 0; run < LOADS; run++) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.addInitScript(() => sessionStorage.setItem('agent-test-gateway.token', 'demo-token'));
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      await cdp.send('Profiler.start');
      await page.goto(`${front.url}/runs/${ID}`);
      await page.waitForFunction((n) => document.querySelectorAll('button.mark').length === n, attempts, { polling: 'raf' });
      await page.waitForTimeout(300);
      const { profile } = await cdp.send('Profiler.stop');
      (await import('node:fs')).writeFileSync(`/tmp/pp/prof${run}.json`, JSON.stringify(profile));
      await page.close();
    }
    const figure = (key: keyof Sample) => ({ median: median(samples.map((x) => x[key])), range: spread(samples.map((x) => x[key])) });
    const result = {
      attempts,
      turns_per_attempt: TURNS,
      view_bytes: Buffer.byteLength(body),
      loads: LOADS,
      usable_ms: figure('usable_ms'),
      drawn_ms: figure('drawn_ms'),
      transcript_ms: figure('transcript_ms'),
      modules_ms: figure('modules_ms'),
      view_ms: figure('view_ms'),
      report_ms: figure('report_ms'),
      dom_nodes: median(samples.map((x) => x.dom_nodes)),
      target_ms: 1000,
      load_average_before: loadBefore,
      load_average_after: load(),
      samples,
    };
    console.log(JSON.stringify(result));
  } finally {
    await browser.close();
    for (const fn of teardowns.reverse()) await fn();
  }
}

await main();
