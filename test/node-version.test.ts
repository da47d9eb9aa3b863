/**
 * Any laptop: `npm ci` resolves the same tree on macOS, Linux arm64 and Linux x64 (no required
 * package bound to an OS or CPU), the npm scripts that run the gateway or the tests go through
 * scripts/node24.cjs (Node 24 even where the machine's Node is older), and the package's entry
 * points, started by an older Node, exit 2 with one line that names the Node they need.
 */

import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, delimiter, dirname, join, sep } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import t, { type Test } from 'tap';
import { CHECKOUT_HINT, CLI_NODE_MAJOR_NEEDED, INSTALLED_HINT, NODE_MAJOR_NEEDED } from '../src/node-version.js';
import { escapeHtml } from '../src/suites/report/html/kit.js';
import type { Json } from './support/http.js';
import { outsideEnv } from './support/child.js';
import { childEnv } from './support/stack.js';
import { ROOT } from './support/root.js';

const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  scripts: Record<string, string>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const LAUNCHER = 'scripts/node24.cjs';
const { cacheDir } = createRequire(import.meta.url)('../scripts/node-version.cjs') as { cacheDir: (major: number) => string };
/** Where the launcher finds Node `major`: the user's cache, or a checkout's node_modules/.cache from before. */
const cachedNodeRecord = (major: number) =>
  [join(cacheDir(major), 'node.json'), join(ROOT, 'node_modules', '.cache', `node-${major}`, 'node.json')].find((file) => existsSync(file));
const CACHED_NODE = cachedNodeRecord(NODE_MAJOR_NEEDED);
/** Node 22 as `npm run test:node22` and .ci/run fetch it (scripts/node-version.cjs 22). */
const CACHED_NODE_22 = cachedNodeRecord(CLI_NODE_MAJOR_NEEDED);

const majorOf = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

interface Lock {
  packages: Record<string, { os?: string[] | string; cpu?: string[] | string; optional?: boolean; devOptional?: boolean }>;
}

t.test('the lock file binds no required package to an OS or CPU', async (t) => {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
  // A package with os/cpu that is not optional makes `npm ci` fail (EBADPLATFORM) everywhere else.
  const bound = Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && (entry.os || entry.cpu) && !entry.optional && !entry.devOptional)
    .map(([path]) => path);
  t.same(bound, [], 'every package with os or cpu is optional');
  const named = Object.keys({ ...PACKAGE.dependencies, ...PACKAGE.devDependencies });
  t.same(
    named.filter((name) => /^node(-(linux|darwin|win)-\w+)?$/.test(name)),
    [],
    'no Node binary among the dependencies: scripts/node24.cjs fetches one where it is needed',
  );
  t.ok(Object.values(lock.packages).length > 100, 'the lock file was read');
});

t.test('engines name the command’s Node (22); the launcher fetches the gateway’s (24)', async (t) => {
  t.equal(PACKAGE.engines.node, `>=${CLI_NODE_MAJOR_NEEDED}`);
  t.ok(CLI_NODE_MAJOR_NEEDED < NODE_MAJOR_NEEDED);
  t.match(readFileSync(join(ROOT, LAUNCHER), 'utf8'), new RegExp(`^const MAJOR = ${NODE_MAJOR_NEEDED};$`, 'm'));
});

t.test('the npm scripts that run the gateway or the tests go through the launcher', async (t) => {
  const scripts = PACKAGE.scripts;
  // exec: npm's sh becomes the launcher, so a signal npm passes on reaches it (sh would wait for its command).
  t.equal(scripts.start, `exec node ${LAUNCHER} --own-group node dist/server.js`);
  t.equal(scripts.demo, `exec node ${LAUNCHER} --own-group node dist/demo.js`);
  t.match(scripts.test, new RegExp(`&& node ${LAUNCHER} tap$`), 'tap, and every test file it starts');
  for (const name of ['bench', 'screenshot']) t.match(scripts[name], `node ${LAUNCHER} `, name);
  // The others (build, typecheck, lint) run on Node ≥ 20.19 as well, and their result does not depend on the Node.
  for (const [name, script] of Object.entries(scripts)) {
    t.notMatch(script, /(^|&& )(node dist\/|tap\b)/, `${name}: no Node 24 command outside the launcher`);
  }
});

/** A Node older than the one needed, outside this repository: /usr/bin/node or another `node` on PATH. */
function oldNode(): { path: string; version: string } | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && !`${dir}${sep}`.startsWith(ROOT));
  const seen = new Set<string>();
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node', ...dirs.map((dir) => join(dir, 'node'))]) {
    if (!existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (seen.has(real)) continue;
    seen.add(real);
    const ran = spawnSync(real, ['--version'], { encoding: 'utf8' });
    const version = ran.stdout?.trim() ?? '';
    if (ran.status === 0 && /^v\d+\./.test(version) && majorOf(version) < NODE_MAJOR_NEEDED) return { path: real, version };
  }
  return undefined;
}

const old = oldNode();
const noOldNode = old ? false : `no Node older than ${NODE_MAJOR_NEEDED} on this machine (/usr/bin/node, PATH): nothing to start them with`;

t.test("npm ci on the machine's older Node prints no EBADENGINE warning in a checkout", { skip: noOldNode }, async (t) => {
  const node = old!;
  // npm's own shebang (#!/usr/bin/env node) runs it on the first node on PATH: the machine's older one.
  // Without the settings an enclosing `npm test` passes down, so that only the checkout's .npmrc speaks.
  const env = outsideEnv(dirname(node.path));
  const dryRun = (files: string[]) => {
    const dir = t.testdir();
    for (const file of files) cpSync(join(ROOT, file), join(dir, file));
    return spawnSync('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
  };
  const lock = ['package.json', 'package-lock.json'];
  const bare = dryRun(lock);
  t.equal(bare.status, 0, `npm ci --dry-run exits 0${bare.status === 0 ? '' : `:\n${bare.stderr}`}`);
  t.match(bare.stderr, /EBADENGINE/, `without the checkout's .npmrc, npm on ${node.version} warns`);
  const checkout = dryRun([...lock, '.npmrc']);
  t.equal(checkout.status, 0, 'with it, npm ci --dry-run exits 0');
  t.notMatch(checkout.stderr, /EBADENGINE|npm warn/, 'and warns nothing');
  t.match(checkout.stdout, /added \d+ packages/, 'while it still says what it installed');
});

/** dist/ as `npm start` would run it: built when older than src/. */
function buildIfStale(t: Test) {
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, env: childEnv(), encoding: 'utf8' });
  t.equal(built.status, 0, built.status === 0 ? 'dist/ is built' : `dist/ is built:\n${built.stdout}${built.stderr}`);
}

t.test("started by the machine's older Node, the command and the server exit 2 with one line", { skip: noOldNode }, async (t) => {
  buildIfStale(t);
  const node = old!;
  // In this checkout the line also says how to run the command on Node 24; the installed package has no launcher.
  const needs = (major: number) => `agent-test-gateway needs Node.js ${major} or newer; this is Node.js ${node.version}.${CHECKOUT_HINT}\n`;
  t.comment(`the machine's Node: ${node.path} ${node.version}`);
  const bin = PACKAGE.bin['agent-test-gateway']!;
  const server = PACKAGE.scripts.start!.split(' ').at(-1)!;
  // The command needs Node 22, the server 24; on a Node older than both, the command's check comes first.
  const command = majorOf(node.version) < CLI_NODE_MAJOR_NEEDED ? CLI_NODE_MAJOR_NEEDED : undefined;
  // run and compare also say, as their last line, that the suite could not run (and write the reports asked for: below).
  const notRun = '✗ could not run the suite: node_too_old\n';
  const lines: Array<[string, string[], string, string]> = [
    ['the command (bin)', [bin, '--help'], needs(command ?? 0), ''],
    ['the command: run', [bin, 'run', 'examples/basic.yaml', '--gateway', 'http://127.0.0.1:9'], needs(command ?? 0), notRun],
    ['the server (npm start runs it)', [server], needs(NODE_MAJOR_NEEDED), ''],
    ["the image's command", ['dist/entrypoint.js'], needs(command ?? NODE_MAJOR_NEEDED), ''],
    ["the image's command: run", ['dist/entrypoint.js', 'run', 'examples/basic.yaml'], needs(command ?? 0), notRun],
  ];
  for (const [what, args, message, stdout] of lines) {
    if (command === undefined && message === needs(0)) continue; // a Node 22 machine: the command runs (the test below)
    const ran = spawnSync(node.path, args, { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
    t.equal(ran.status, 2, `${what}: exit 2`);
    t.equal(ran.stderr, message, `${what}: one line naming the Node it needs`);
    t.equal(ran.stdout, stdout, `${what}: nothing else`);
  }

  // The same files on this Node (the one the tests run on) pass the check.
  const help = spawnSync(process.execPath, [bin, '--help'], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
  t.equal(help.status, 0, `--help exits 0 on ${process.version}${help.status === 0 ? '' : `:\n${help.stderr}`}`);
  t.match(help.stdout, /agent-test-gateway run <suite\.yaml>…/);
});

/**
 * The reports `run` and `compare` were asked for, written on a Node too old for the command, read back: the
 * JUnit's one <error> per suite, the HTML's "could not run" section, the JSON's error, each with `message`.
 */
async function notRunReports(t: Test, dir: string, files: string[], message: string) {
  const junit = readFileSync(join(dir, 'reports', 'agents.xml'), 'utf8');
  const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'testsuite' }).parse(junit);
  t.equal(XMLValidator.validate(junit), true, 'the JUnit is well-formed');
  t.same(
    (parsed.testsuites.testsuite as Json[]).map((suite) => [
      suite.name,
      suite.errors,
      suite.testcase.error.type,
      suite.testcase.error.message,
    ]),
    files.map((file) => [basename(file, '.yaml'), '1', 'node_too_old', `Not run: ${message}`]),
    'the JUnit: an <error> per suite, saying what to do',
  );
  const page = readFileSync(join(dir, 'reports', 'agents.html'), 'utf8');
  t.match(page, /<title>✗ could not run/, 'the HTML report: could not run');
  t.ok(page.includes(escapeHtml(`Not run: ${message}`)), 'the HTML says what to do');
  t.match(page, /node_too_old/);
  t.match(
    JSON.parse(readFileSync(join(dir, 'reports', 'agents.json'), 'utf8')),
    files.map((file) => ({ name: basename(file, '.yaml'), file, error: { error: 'node_too_old', message: `Not run: ${message}` } })),
    'the JSON: the error in each suite’s place',
  );
}

const noNodeTooOldForTheCommand =
  noOldNode || (majorOf(old!.version) < CLI_NODE_MAJOR_NEEDED ? false : `the machine's ${old!.version} runs the command`);

t.test(
  "on the machine's older Node, run and compare still write the reports they were asked for",
  { skip: noNodeTooOldForTheCommand },
  async (t) => {
    buildIfStale(t);
    const node = old!;
    const reports = ['--junit', 'reports/agents.xml', '--html', 'reports/agents.html', '--json', 'reports/agents.json'];
    const files = ['suites/a.yaml', 'suites/b.yaml'];

    // In this checkout: the line names the launcher.
    const suites = { 'a.yaml': 'agent: coach\n', 'b.yaml': 'agent: coach\n' };
    const root = t.testdir({
      checkout: { suites },
      project: { suites: { ...suites } },
      app: { 'package.json': readFileSync(join(ROOT, 'package.json'), 'utf8') },
    });
    const [here, project, app] = ['checkout', 'project', 'app'].map((dir) => join(root, dir)) as [string, string, string];
    const bin = join(ROOT, PACKAGE.bin['agent-test-gateway']!);
    const needs = `agent-test-gateway needs Node.js ${CLI_NODE_MAJOR_NEEDED} or newer; this is Node.js ${node.version}.`;
    const checkout = `${needs}${CHECKOUT_HINT}`;
    const ran = spawnSync(node.path, [bin, 'run', ...files, ...reports], { cwd: here, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
    t.equal(ran.status, 2, 'exit 2');
    t.equal(ran.stdout, '✗ could not run any of 2 suites: node_too_old\n', 'the last line: could not run, and why');
    t.match(ran.stderr, `${checkout}\n`, 'the line saying what to do');
    await notRunReports(t, here, files, checkout);

    // Installed (no scripts/ beside dist/, as in node_modules or the image): the line says what to do in CI.
    for (const dir of ['dist', 'public']) cpSync(join(ROOT, dir), join(app, dir), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'));
    const installed = `${needs}${INSTALLED_HINT}`;
    const compare = spawnSync(
      node.path,
      [join(app, 'dist', 'entrypoint.js'), 'compare', ...files, '--baseline', 'coach', '--candidate', 'coach.3', ...reports],
      { cwd: project, env: childEnv(), encoding: 'utf8', timeout: 20_000 },
    );
    t.equal(compare.status, 2, 'compare: exit 2');
    t.equal(compare.stdout, '✗ could not compare any of 2 suites (coach → coach.3): node_too_old\n');
    t.match(compare.stderr, `${installed}\n`, 'what to do: a newer Node, or the image');
    await notRunReports(t, project, files, installed);
  },
);

const noCachedNode = noOldNode || (CACHED_NODE !== undefined ? false : `no Node ${NODE_MAJOR_NEEDED} in the cache yet (not fetched here)`);

t.test("the launcher, on the machine's older Node, runs commands on the Node 24 it fetched", { skip: noCachedNode }, async (t) => {
  buildIfStale(t);
  const node = old!;
  const launch = (args: string[]) =>
    spawnSync(node.path, [LAUNCHER, ...args], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 30_000 });

  const version = launch(['node', '-p', 'process.version']);
  t.equal(version.status, 0, `node -p process.version exits 0${version.stderr && `:\n${version.stderr}`}`);
  t.equal(majorOf(version.stdout.trim()), NODE_MAJOR_NEEDED, `node is Node ${NODE_MAJOR_NEEDED}, not ${node.version}`);
  t.equal(version.stderr, '', 'cached: nothing fetched, nothing said');

  // tap, tsx and npm start as `#!/usr/bin/env node`: the fetched Node comes first on their PATH.
  const script = join(t.testdir(), 'which-node');
  writeFileSync(script, '#!/usr/bin/env node\nconsole.log(process.version);\n');
  chmodSync(script, 0o755);
  const shebang = launch([script]);
  t.equal(shebang.status, 0, `a #!/usr/bin/env node script exits 0${shebang.stderr && `:\n${shebang.stderr}`}`);
  t.equal(majorOf(shebang.stdout.trim()), NODE_MAJOR_NEEDED, 'a #!/usr/bin/env node command');

  t.equal(launch(['node', '-e', 'process.exit(3)']).status, 3, "the command's exit status");
  const bin = PACKAGE.bin['agent-test-gateway']!;
  const help = launch(['node', bin, '--help']);
  t.equal(help.status, 0, `the command through the launcher exits 0${help.stderr && `:\n${help.stderr}`}`);
  t.match(help.stdout, /agent-test-gateway chat <agent>/);
});

/** The fake registry below hands out the Node running the tests, which must be the one the launcher asks for. */
const notOnNeededNode =
  majorOf(process.version) === NODE_MAJOR_NEEDED
    ? false
    : `the tests run on Node ${process.version}, not ${NODE_MAJOR_NEEDED} (npm test runs it)`;

t.test(
  'Node 24 is fetched once per machine: a second fresh checkout (no node_modules) finds it in the cache',
  { skip: noOldNode || notOnNeededNode },
  async (t) => {
    const node = old!;
    const dir = t.testdir({ cache: {}, bin: {} });
    // Two fresh checkouts: the launcher's scripts and nothing else, as after a clone or an `npm ci` that emptied node_modules.
    const checkouts = ['one', 'two'].map((name) => {
      const checkout = join(dir, name);
      cpSync(join(ROOT, 'scripts'), join(checkout, 'scripts'), { recursive: true });
      return checkout;
    });
    // npm stands in for the registry: it counts its installs and "installs" a Node package whose binary is this Node 24.
    const count = join(dir, 'installs');
    const npm = join(dir, 'bin', 'npm');
    writeFileSync(
      npm,
      [
        '#!/bin/sh',
        `echo "$*" >> '${count}'`,
        'while [ "$1" != "--prefix" ]; do shift; done',
        'pkg="$2/node_modules/$(node -p \'process.platform === "darwin" ? "node-darwin-" + process.arch : "node-linux-" + process.arch\')"',
        'mkdir -p "$pkg/bin"',
        `printf '{"name":"node","bin":{"node":"bin/node"}}' > "$pkg/package.json"`,
        `printf '#!/bin/sh\\nexec %s "$@"\\n' '${process.execPath}' > "$pkg/bin/node"`,
        'chmod +x "$pkg/bin/node"',
        '',
      ].join('\n'),
    );
    chmodSync(npm, 0o755);
    const env = {
      ...childEnv(),
      PATH: [join(dir, 'bin'), dirname(node.path), process.env.PATH].join(delimiter),
      AGENT_TEST_GATEWAY_NODE_CACHE: join(dir, 'cache'),
      npm_execpath: '',
    };
    const launches = checkouts.map((checkout) =>
      spawnSync(node.path, [join(checkout, 'scripts', 'node24.cjs'), 'node', '-p', 'process.version'], {
        cwd: checkout,
        env,
        encoding: 'utf8',
        timeout: 30_000,
      }),
    );
    for (const [i, ran] of launches.entries()) {
      t.equal(ran.status, 0, `checkout ${i + 1}: exits 0${ran.stderr && `:\n${ran.stderr}`}`);
      t.equal(ran.stdout.trim(), process.version, `checkout ${i + 1}: the command ran on Node ${NODE_MAJOR_NEEDED}`);
    }
    t.match(launches[0]!.stderr, `installing node-`, 'the first fetches it, and says so');
    t.match(launches[0]!.stderr, join(dir, 'cache', `node-${NODE_MAJOR_NEEDED}`), 'into the cache named by AGENT_TEST_GATEWAY_NODE_CACHE');
    t.equal(launches[1]!.stderr, '', 'the second fetches nothing, and says nothing');
    t.equal(readFileSync(count, 'utf8').trim().split('\n').length, 1, 'one install for both');
    for (const checkout of checkouts) t.notOk(existsSync(join(checkout, 'node_modules')), 'nothing in the checkout');
    t.match(cacheDir(NODE_MAJOR_NEEDED), /agent-test-gateway[\\/]node-24$/, 'by default, a cache of the user’s');
  },
);

const noNode22 =
  CACHED_NODE_22 !== undefined ? false : `no Node ${CLI_NODE_MAJOR_NEEDED} in the cache yet (npm run test:node22 and .ci/run fetch it)`;

t.test(
  `on Node ${CLI_NODE_MAJOR_NEEDED} the command runs; the gateway says it needs ${NODE_MAJOR_NEEDED}`,
  { skip: noNode22 },
  async (t) => {
    buildIfStale(t);
    const record = JSON.parse(readFileSync(CACHED_NODE_22!, 'utf8')) as { bin: string; version: string };
    const node22 = join(dirname(CACHED_NODE_22!), record.bin);
    t.equal(majorOf(record.version), CLI_NODE_MAJOR_NEEDED, record.version);
    const bin = PACKAGE.bin['agent-test-gateway']!;
    const env = childEnv({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token' });
    const on22 = (args: string[]) => spawnSync(node22, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });

    const help = on22([bin, '--help']);
    t.equal(help.status, 0, `--help exits 0${help.stderr && `:\n${help.stderr}`}`);
    t.match(help.stdout, /agent-test-gateway compare <suite\.yaml>…/);
    // run reads the suites (glob included) and posts them: a gateway nobody listens on is an HTTP problem, exit 2.
    const run = on22([bin, 'run', 'examples/*.yaml', '--gateway', 'http://127.0.0.1:9']);
    t.equal(run.status, 2, 'run: exit 2, nothing listens there');
    t.notMatch(run.stderr, /needs Node\.js/, 'not refused for its Node');
    t.notMatch(run.stderr, /ExperimentalWarning/, 'no warning about fs.glob');
    t.match(run.stderr, /examples\/basic\.yaml: /, 'each suite says why it did not run');

    const gateway = `needs Node.js ${NODE_MAJOR_NEEDED} or newer; this is Node.js ${record.version}.`;
    for (const [what, args] of [
      ['serve', [bin, 'serve']],
      ['the server', [PACKAGE.scripts.start!.split(' ').at(-1)!]],
      ["the image's command", ['dist/entrypoint.js']],
    ] as const) {
      const ran = on22([...args]);
      t.equal(ran.status, 2, `${what}: exit 2`);
      t.match(ran.stderr, gateway, `${what}: the gateway needs Node ${NODE_MAJOR_NEEDED}`);
    }
  },
);
