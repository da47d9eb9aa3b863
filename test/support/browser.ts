/**
 * Debian's headless Chromium for the tests that open a page (the debug page, the HTML reports):
 * where it is and how it is launched.
 */

import { chromium, type Browser, type ConsoleMessage, type LaunchOptions, type Page } from 'playwright-core';
import { toolPath } from './tools.js';

/** Where a test needs it, `needs('chromium')` (./tools.ts) skips the test with the notice. */
const CHROMIUM = toolPath('chromium') ?? '/usr/bin/chromium';

/** Headless, and reaching nothing on its own (no updates, no sync, no background requests). */
export const LAUNCH: LaunchOptions = {
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
};

/** The committed screenshots in docs/ are refreshed only on purpose (`npm run screenshot`); otherwise into the ignored test/output/. */
export const REFRESH_DOCS = process.env.UPDATE_DOCS_SCREENSHOT === 'true';

/**
 * A page that records what should never happen: console errors and warnings, page errors, failed
 * requests (but those `ignoreFailed` matches: a stream a test cuts on purpose), dialogs (alert).
 */
export function watchProblems(page: Page, ignoreFailed?: RegExp): string[] {
  const problems: string[] = [];
  page.on('console', (msg: ConsoleMessage) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('requestfailed', (req) => {
    if (ignoreFailed === undefined || !ignoreFailed.test(req.url())) problems.push(`request failed: ${req.url()}`);
  });
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return problems;
}

/** Debian's Chromium for one test, closed with it. */
export async function launch(t: { teardown(fn: () => unknown): void }): Promise<Browser> {
  const browser = await chromium.launch(LAUNCH);
  t.teardown(() => browser.close());
  return browser;
}
