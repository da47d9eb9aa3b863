/**
 * How fast the runs page opens a big comparison: ten conversations at `max_attempts: 60`, every
 * round run (1,200 attempts), in Debian's headless Chromium. The gateway (with its simulators)
 * serves the page; the run's view is answered by the browser's request interception with a report
 * built by the real gate (test/support/report-fixtures.ts), so only the page is measured.
 *
 * `npm run bench:runs-page` prints, for each of 5 loads and their median:
 * - `usable_ms`: from navigation start to the table with all 1,200 marks in the page (the
 *   header, plot and filters are drawn before it);
 * - `transcript_ms`: from a click on a mark to its side-by-side transcript drawn;
 * - `dom_nodes`: elements in the page once it is usable (no transcript is in it until one is opened).
 * The last line of stdout is one JSON object. No assertion: the figures depend on the machine.
 */

import { chromium } from 'playwright-core';
import { LAUNCH } from '../test/support/browser.js';
import { comparisonFixture, type Plan } from '../test/support/report-fixtures.js';
import { startStack } from '../test/support/stack.js';

const RUNS = 5;
const ID = '6f1c7c1e-3c55-4a8e-9a1f-0d6f1d6c2a10';

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const teardowns: Array<() => unknown> = [];
  const plans: Plan[] = Array.from({ length: 10 }, (_, i) => ({
    name: `conversation ${i + 1}`,
    baseline: [true, true, false, true],
    candidate: i < 2 ? [false, true, false] : [true, false, true, true],
  }));
  const report = await comparisonFixture(plans, { mode: { kind: 'repeat', attempts: 60 } });
  const attempts = report.conversations.length * 60 * 2;
  const view = {
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
        rounds: 60,
        budget: 60,
        sessions: 120,
        attempts: null,
        baseline: { attempts: 60, passed: c.baseline.attempts_passed, errors: 0 },
        candidate: { attempts: 60, passed: c.candidate.attempts_passed, errors: 0 },
        state: 'budget',
      })),
      sessions: attempts,
      sessions_budget: attempts,
      decided: report.conversations.length,
      attempts_in_flight: 0,
    },
    report,
    error: null,
  };
  const body = JSON.stringify(view);

  const s = await startStack({ teardown: (fn) => teardowns.push(fn) });
  const browser = await chromium.launch(LAUNCH);
  try {
    const samples: Array<{ usable_ms: number; transcript_ms: number; dom_nodes: number }> = [];
    for (let run = 0; run < RUNS; run++) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.addInitScript(() => sessionStorage.setItem('agent-test-gateway.token', 'demo-token'));
      await page.route(`**/v1/runs/${ID}`, (route) => route.fulfill({ contentType: 'application/json', body }));
      await page.goto(`${s.url}/runs/${ID}`);
      // The moment the marks are all there, read in the page (time since navigation start).
      const ready = await page.waitForFunction(
        (n) => document.querySelectorAll('button.mark').length === n && performance.now(),
        attempts,
        {
          polling: 'raf',
          timeout: 60_000,
        },
      );
      const usable = (await ready.jsonValue()) as number;
      const domNodes = await page.evaluate(() => document.getElementsByTagName('*').length);
      const clicked = await page.evaluate(() => {
        const start = performance.now();
        document.querySelector<HTMLButtonElement>('tbody[data-conversation="conversation 1"] button.mark:nth-child(30)')!.click();
        return start;
      });
      await page.waitForSelector('#detail .pair');
      const drawn = await page.evaluate(() => performance.now());
      samples.push({ usable_ms: Math.round(usable), transcript_ms: Math.round(drawn - clicked), dom_nodes: domNodes });
      process.stderr.write(`load ${run + 1}: usable in ${Math.round(usable)} ms, a transcript in ${Math.round(drawn - clicked)} ms\n`);
      await page.close();
    }
    const result = {
      attempts,
      usable_ms: median(samples.map((x) => x.usable_ms)),
      transcript_ms: median(samples.map((x) => x.transcript_ms)),
      dom_nodes: median(samples.map((x) => x.dom_nodes)),
      target_ms: 1000,
      samples,
    };
    console.log(JSON.stringify(result));
  } finally {
    await browser.close();
    for (const fn of teardowns.reverse()) await fn();
  }
}

await main();
