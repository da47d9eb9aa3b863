/**
 * The Debian tools some tests use: nginx (a real ingress in front of several gateway processes),
 * prometheus and promtool (a real scrape, the rules and their unit tests), chromium (the debug page
 * and the HTML reports) and tini (the image's init). `npm run test:tools` installs them all
 * (scripts/install-test-tools.sh, which .ci/run calls too).
 *
 * Where one is missing, a test that needs it skips with one line naming it (`needs nginx …`), and
 * `npm test` ends with one line listing what was skipped and that command (test/support/tap-reporter.mjs
 * reads the skips by their `needs ` prefix). With REQUIRE_TEST_TOOLS=1 (.ci/run sets it) a missing
 * tool is a failure instead: CI installs them, so a skip there would hide a test it means to run.
 *
 * TEST_TOOL_DIRS (directories, separated as PATH is) replaces where they are looked for (Debian's
 * /usr/sbin and /usr/bin): test/test-tools.test.ts hides them all with an empty directory.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import tap, { type Test } from 'tap';

export type Tool = 'nginx' | 'prometheus' | 'promtool' | 'chromium' | 'tini';

/** The command that installs every tool: the one line `npm test` ends with when one is missing. */
export const INSTALL_TOOLS = 'npm run test:tools';

const dirs = (): string[] => (process.env.TEST_TOOL_DIRS ?? ['/usr/sbin', '/usr/bin'].join(delimiter)).split(delimiter).filter(Boolean);

/** Where the tool is (Debian's path), or undefined where it is not installed. */
export function toolPath(tool: Tool): string | undefined {
  return dirs()
    .map((dir) => join(dir, tool))
    .find((path) => existsSync(path));
}

/** The path a tool has once installed, for messages: Debian's. */
const expectedPath = (tool: Tool): string => join(tool === 'nginx' ? '/usr/sbin' : '/usr/bin', tool);

const required = (): boolean => process.env.REQUIRE_TEST_TOOLS === '1';

/**
 * tap's options for a test that needs these tools: `{ skip: 'needs nginx (…)' }` where one is
 * missing. With REQUIRE_TEST_TOOLS=1 the test is skipped all the same, and a failing test next to
 * it (in `parent`, the file's root by default) says which tool is missing.
 */
export function needs(tools: Tool | Tool[], parent: Test = tap): { skip: string | false } {
  const missing = [tools].flat().filter((tool) => toolPath(tool) === undefined);
  if (missing.length === 0) return { skip: false };
  const why = `needs ${missing.join(', ')} (${missing.map(expectedPath).join(', ')} absent): ${INSTALL_TOOLS} installs ${
    missing.length === 1 ? 'it' : 'them'
  }`;
  if (required()) {
    parent.test(`REQUIRE_TEST_TOOLS=1: ${missing.join(', ')} installed`, async (t) => {
      t.fail(`${why}; REQUIRE_TEST_TOOLS=1 turns this skip into a failure`);
    });
  }
  return { skip: why };
}
