// The runs page follows a run that moves to another pod. Three real gateway processes of one
// release (static PEERS) behind Debian's nginx as the ingress, hashing on Authorization as the
// chart's does: the comparison is started through it, so the page's calls (the same token) reach
// the pod that holds the run. While the page is open, that pod gets SIGTERM and leaves the
// upstreams, as a rollout does: it hands the run to a sibling and, its short grace over, ends the
// page's stream; the page, never reloaded, picks the run up again through the same origin, its
// progress moves on, and it ends with the verdict of the new holder's report.
import type { Page } from 'playwright-core';
import t from 'tap';
import type { ComparisonReport } from '../src/suites/report/comparison.js';
import { comparisonAnswer } from '../src/suites/report/wording.js';
import { launch } from './support/browser.js';
import { startNginx, startRunPods, type Pod } from './support/cluster.js';
import type { Json } from './support/http.js';
import { runOn, startComparison, until } from './support/runs.js';
import { openSignedIn, pageShot } from './support/runs-page.js';
import { scaled } from './support/time.js';
import { needs } from './support/tools.js';

t.setTimeout(scaled(240_000));

/**
 * Identical sides (the agent says yes 80 % of the time) after a pause of 500 ms: no conversation is
 * decided or given up before `min_attempts` rounds, so 3 × 2 × 24 = 144 sessions of at least half
 * a second, four at a time, are left to run whatever the machine's load: the run is still going
 * well after its first pod has drained.
 */
const SUITE = {
  min_attempts: 24,
  max_attempts: 28,
  concurrency: 4,
  conversations: ['a', 'b', 'c'].map((name) => ({
    name,
    turns: [{ line: 'sim:delay:500' }, { line: 'sim:chance:0.8', expect: { text_matches: 'Yes' } }],
  })),
};
const ROUND = SUITE.conversations.length * 2;

/** What the page showed, each time it changed: recorded in the page itself, so no change is missed between two looks. */
interface Shown {
  status: string;
  sessions: number;
  rounds: number;
  moves: string;
  notice: string;
}

/** Records what the page shows from now on, and leaves a marker that a reload would lose. */
async function watchPage(page: Page): Promise<void> {
  await page.evaluate(() => {
    const shown: Shown[] = [];
    const text = (selector: string) => document.querySelector(selector)?.textContent?.replace(/\s+/g, ' ').trim() ?? '';
    const record = () => {
      const now: Shown = {
        status: text('#live dd'),
        sessions: Number(text('#sessions')),
        rounds: Number(text('#rounds')),
        moves: [...document.querySelectorAll('#live dt')].find((dt) => dt.textContent === 'Moves')?.nextElementSibling?.textContent ?? '',
        notice: text('#notice'),
      };
      if (JSON.stringify(now) !== JSON.stringify(shown.at(-1))) shown.push(now);
    };
    record();
    new MutationObserver(record).observe(document.querySelector('#main')!, { childList: true, subtree: true, characterData: true });
    Object.assign(window, { shown, openedBefore: 'the move' });
  });
}

t.test(
  'the pod holding a run drains while its page is open: the page follows the run to its new pod, to the verdict',
  needs(['chromium', 'nginx']),
  async (t) => {
    const { pods, ports } = await startRunPods(t, { SHUTDOWN_GRACE_MS: String(scaled(500)) });
    const nginx = await startNginx(ports);
    t.teardown(() => nginx.stop());
    const ingress = { url: nginx.hashed };
    const podNamed = (name: string): Pod => pods.find((pod) => name.endsWith(`:${pod.port}`))!;
    const browser = await launch(t);

    const id = await startComparison(ingress, SUITE);
    const { page, problems } = await openSignedIn(browser, `${ingress.url}/runs/${id}`);
    // The streams of the run's lines the page opens from now on (the first, after=0, is already open).
    const streams: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/events?')) streams.push(request.url());
    });
    await page.waitForSelector('#sessions');
    await watchPage(page);

    // The gateway's own view, not the page's, says when: the holder completed a round and has attempts in flight.
    const holder = podNamed((await runOn(ingress, id)).body.pod);
    let before: Json;
    await until(
      async () => {
        before = (await runOn(holder, id)).body;
        return before.progress.sessions >= ROUND && before.progress.attempts_in_flight > 0;
      },
      60_000,
      'a round completed on the holder',
    );
    t.equal(before!.status, 'running', `running on ${before!.pod} when it gets SIGTERM (${before!.progress.sessions} sessions spent)`);
    // As a rollout does: the pod gets SIGTERM and leaves the Service's endpoints at once.
    holder.child.kill('SIGTERM');
    // nginx reloads at once; its old worker ends once the drained pod has ended the page's stream.
    const routedOut = nginx.route(holder.port, false);
    routedOut.catch(() => undefined);

    // What a reader sees once the page follows the run on its new pod (docs/runs-page.md).
    await page.waitForFunction(() => document.querySelector('#notice')?.textContent?.startsWith('Following the run again'), undefined, {
      timeout: scaled(60_000),
    });
    await page.screenshot({ path: pageShot('moved'), fullPage: true });

    const sibling = pods.find((pod) => pod !== holder)!;
    let view: Json;
    await until(
      async () => {
        const answer = await runOn(sibling, id);
        view = answer.body;
        return answer.status === 200 && view.status !== 'running';
      },
      180_000,
      'the run ends',
    );
    t.equal(await holder.exited, 0, 'the drained pod exited 0');
    await routedOut;
    const move = view!.moves[0];
    t.match(move, { from: before!.pod, cause: 'drain' }, 'the run was handed over by the pod that drained');
    t.not(view!.pod, before!.pod, 'and ended on another');
    const final = await runOn(podNamed(view!.pod), id);
    t.ok(final.body.report !== null && final.body.error === null, 'it ended with its report, as the new holder answers', final.body);

    await page.waitForSelector('header .answer', { timeout: scaled(60_000) });
    t.equal(
      (await page.textContent('header .answer'))?.trim(),
      comparisonAnswer(final.body.report as ComparisonReport).text,
      'the page’s verdict is the new holder’s report’s',
    );

    const shown = await page.evaluate(() => (window as unknown as { shown: Shown[] }).shown);
    // On a failure, what the page showed and what nginx logged.
    const evidence = { shown, nginx: nginx.errors() };
    const running = (s: Shown) => /running/.test(s.status);
    const moved = shown.findIndex((s) => running(s) && s.moves.includes(`from ${move.from} to ${move.to} (drain)`));
    t.ok(moved >= 0, 'the page showed the move while the run was running', evidence);
    const after = shown.slice(moved + 1).filter(running);
    t.ok(
      after.some((s) => s.sessions > shown[moved]!.sessions) && after.some((s) => s.rounds > shown[moved]!.rounds),
      'then its sessions and rounds moved on, live',
      evidence,
    );
    t.ok(
      shown.some((s) => s.notice.startsWith('The connection to the run was cut')) &&
        shown.some((s) => s.notice.startsWith('Following the run again')),
      'its stream was cut by the drained pod and picked up again through the ingress',
      evidence,
    );
    t.ok(
      streams.some((url) => /after=[1-9]\d*$/.test(url)),
      `the page asked for the run's lines again, after those it had seen: ${streams.join(' ')}`,
    );
    t.equal(await page.evaluate(() => (window as unknown as { openedBefore?: string }).openedBefore), 'the move', 'never reloaded');
    t.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), 1, 'one navigation');
    t.same(problems, [], 'no console error, no failed request');
  },
);
