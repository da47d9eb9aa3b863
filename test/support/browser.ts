/**
 * Debian's headless Chromium for the tests that open a page (the debug page, the HTML reports):
 * where it is and how it is launched.
 */

import type { LaunchOptions } from 'playwright-core';
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
