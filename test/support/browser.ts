/**
 * Debian's headless Chromium for the tests that open a page (the debug page, the HTML reports):
 * where it is, a test's skip reason when it is absent, and how it is launched.
 */

import { existsSync } from 'node:fs';
import type { LaunchOptions } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

/** A test's `skip`: false, or why it cannot run. */
export const NO_CHROMIUM: false | string = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: run scripts/ensure-chromium.sh`;

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
