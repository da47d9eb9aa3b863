/** The runs page in a browser: signed in as a reader, checked by axe-core. */

import { fileURLToPath } from 'node:url';
import axeCore from 'axe-core';
import type { Browser, Page } from 'playwright-core';
import { REFRESH_DOCS, watchProblems } from './browser.js';

/** Where a screenshot of the runs page goes: docs/ when they are refreshed on purpose (`npm run screenshot`), else test/output/. */
export const pageShot = (name: string): string =>
  fileURLToPath(new URL(`${REFRESH_DOCS ? '../../docs/' : '../output/'}runs-page-${name}.png`, import.meta.url));

/** Opens `url` (a page of the gateway) and signs in with `token`, typed once: the tab keeps it. */
export async function openSignedIn(browser: Browser, url: string, token = 'demo-token'): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // A stream of the run's lines is cut when the page leaves or the pod goes away: that is no problem.
  const problems = watchProblems(page, /\/events\?/);
  await page.goto(url);
  await page.fill('#token', token);
  await page.click('#sign-in button[type=submit]');
  return { page, problems };
}

interface AxeResults {
  violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }>;
}

/** axe-core's serious and critical violations on the page as it is, with where they are. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Run through the DevTools protocol: the page's CSP would refuse an injected script tag.
  await page.evaluate(axeCore.source);
  const results = await page.evaluate(async () => {
    const { axe } = window as unknown as { axe: { run(): Promise<AxeResults> } };
    return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return results.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact}: ${v.id} ${v.nodes.join(' ')}`);
}
