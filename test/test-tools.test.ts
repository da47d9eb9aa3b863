/**
 * `npm test` on a machine without Debian's nginx, Prometheus, Chromium or tini: the suite's own
 * tool checks (test/support/tools.ts) run with every tool hidden (TEST_TOOL_DIRS names an empty
 * directory; nothing is uninstalled), and each test that needs one skips with one line naming it,
 * not a failure; the run ends with one line listing what was skipped and the command that brings
 * the tools. With REQUIRE_TEST_TOOLS=1, as .ci/run runs the suite, the same skip is a failure.
 */

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { childEnv } from './support/stack.js';
import { INSTALL_TOOLS } from './support/tools.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * tap as `npm test` runs it (its reporter, test/support/tap-reporter.mjs), in a process of its own,
 * on these files. Its project is a directory of its own: a tap run clears its project's .tap/coverage
 * when it starts, which in the repository's would drop the outer run's coverage of every file before this one.
 */
function tap(project: string, files: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const base = childEnv(env);
  // A tap inside a tap: none of the outer run's settings.
  for (const key of Object.keys(base)) if (/^_?TAP/.test(key)) delete base[key];
  const child = spawn(join(ROOT, 'node_modules', '.bin', 'tap'), ['--disable-coverage', ...files.map((f) => resolve(ROOT, f))], {
    cwd: project,
    env: base,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/** The nested run's own project: its package.json says what `npm test` says of the reporter. */
const PROJECT = {
  'package.json': JSON.stringify({ type: 'module', tap: { reporter: join(ROOT, 'test/support/tap-reporter.mjs'), timeout: 120 } }),
};

const FILES = {
  nginx: 'test/peers-cluster.test.ts',
  prometheus: 'test/prometheus.test.ts',
  promtool: 'test/helm-monitoring.test.ts',
  chromium: 'test/html-report.test.ts',
};

t.test('without nginx, Prometheus, Chromium and tini: skips that name the tool, and one closing line', async (t) => {
  const none = t.testdir({
    ...PROJECT,
    // tini: the image's init; test/package.test.ts asks for it the same way, in a run far too long to repeat here.
    'tini.test.ts':
      `import t from 'tap';\nimport { needs } from ${JSON.stringify(join(ROOT, 'test/support/tools.js'))};\n` +
      `t.test('the command line under tini, as in the image', needs('tini'), () => {});\n`,
    empty: {},
  });
  const ran = await tap(none, [...Object.values(FILES), join(none, 'tini.test.ts')], {
    TEST_TOOL_DIRS: join(none, 'empty'),
    REQUIRE_TEST_TOOLS: '',
  });
  t.equal(ran.code, 0, 'the run passes', { out: ran.out });
  t.notMatch(ran.out, /^not ok/m, 'no failure');
  for (const [tool, file] of [...Object.entries(FILES), ['tini', 'tini.test.ts'] as const]) {
    const shown = new RegExp(`^ok \\d+ - \\S*${file.replace(/[.]/g, '\\.')} .*\\n {4}# skipped: .+: needs ${tool} \\(`, 'm');
    t.match(ran.out, shown, `${file}: one line under it, naming ${tool}`);
  }
  const lines = ran.out.trimEnd().split('\n');
  t.match(
    lines.at(-1),
    new RegExp(`^# skipped \\d+ tests(: \\d+ for the reasons named under their files, \\d+)? needing .*: ${INSTALL_TOOLS} installs them$`),
    'the last line: what and how',
  );
  for (const tool of ['nginx', 'prometheus', 'promtool', 'chromium', 'tini']) t.match(lines.at(-1), tool, `it names ${tool}`);
  const summary = lines.filter((line) => /^# \{ total: \d+/.test(line));
  t.equal(summary.length, 1, 'tap’s summary is still there for .ci/run');
  t.match(summary[0], /fail: 0|^# \{ total: \d+, pass: \d+, skip: \d+ \}$/, 'no failure in it');
  // The skips the last line counts are the ones tap counts (every skipped test point, at any depth).
  t.equal(/^# skipped (\d+) tests/.exec(lines.at(-1)!)?.[1], /skip: (\d+)/.exec(summary[0]!)?.[1], 'as many skips as tap’s summary');

  // The command named is the one that installs them.
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  t.equal(`npm run test:tools`, INSTALL_TOOLS);
  t.equal(scripts['test:tools'], 'bash scripts/install-test-tools.sh');
  const install = readFileSync(join(ROOT, 'scripts/install-test-tools.sh'), 'utf8');
  for (const pkg of ['prometheus', 'nginx-light', 'tini', 'chromium']) t.match(install, new RegExp(`\\b${pkg}\\b`), `it installs ${pkg}`);
});

t.test('with REQUIRE_TEST_TOOLS=1 (.ci/run) a missing tool is a failure, not a skip', async (t) => {
  const none = t.testdir({ ...PROJECT, empty: {} });
  const ran = await tap(none, [FILES.promtool], { TEST_TOOL_DIRS: join(none, 'empty'), REQUIRE_TEST_TOOLS: '1' });
  t.not(ran.code, 0, 'the run fails');
  t.match(ran.out, /REQUIRE_TEST_TOOLS=1 turns this skip into a failure/);
  t.match(ran.out, /^# \{ total: \d+, pass: \d+, fail: 1/m, 'one failure in the summary .ci/run reads');
});
