/**
 * The suite's one time factor, TEST_TIME_SCALE (docs/reliability.md, "Tests on a busy machine").
 *
 * A test that needs legitimate work to finish within a wall-clock budget (a connect that should
 * succeed, a turn that should end with its exit, a window in which a slow turn is still running)
 * takes that budget from here: its value on an idle machine times the factor. A budget that only
 * provokes a timeout (a handshake that never answers) costs the factor in time but cannot be
 * missed; a bound on a timed-out call ("cut at the budget") is taken relative to the configured
 * budget, with a scaled slack. Deadlines for something to happen (`eventually`, a child process
 * becoming ready) scale too: they cost nothing when the thing happens.
 *
 * The default, 4, lets the suite pass with six CPU-bound processes beside it on two cores (a
 * load average of 12–17) while adding only a few seconds per file on an idle one; 1 is the
 * budgets as tuned on an idle machine; a busier one (a CI runner shared by several jobs) may
 * set more.
 */

import t from 'tap';

const DEFAULT_TIME_SCALE = 4;

/** TEST_TIME_SCALE as read from the environment: a positive number, or unset for the default. */
function readTimeScale(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_TIME_SCALE;
  const scale = Number(value);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new Error(`TEST_TIME_SCALE must be a positive number (e.g. 4, or 8 on a busy machine), not ${JSON.stringify(value)}`);
  }
  return scale;
}

const TIME_SCALE = readTimeScale(process.env.TEST_TIME_SCALE);

/** `ms`, a budget as tuned on an idle machine, times TEST_TIME_SCALE, in whole milliseconds. */
export const scaled = (ms: number): number => Math.max(1, Math.round(ms * TIME_SCALE));

// tap's time limit for a test file (package.json's `tap.timeout`, which tap hands each file as
// TAP_TIMEOUT, in seconds) is a budget too: a file that takes a minute on an idle machine takes
// several on a busy one. A file that sets its own limit (t.setTimeout) does so after this import.
const tapTimeoutS = Number(process.env.TAP_TIMEOUT);
if (tapTimeoutS > 0) t.setTimeout(scaled(tapTimeoutS * 1000));

/** The same as the string an environment variable (TURN_BUDGET_MS, …) takes. */
export const scaledEnv = (ms: number): string => String(scaled(ms));

/** Waits `ms` of wall-clock time: only where a test must let a timer run out, never to guess that work is done. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `check` holds, polling; fails after `ms` as on an idle machine (scaled here, so no
 * caller scales it again). A deadline for something that should happen: it costs nothing when it does.
 */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 2000): Promise<void> {
  const until = Date.now() + scaled(ms);
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(10);
  }
}
