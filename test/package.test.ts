/**
 * The package as another team gets it: `npm pack` (which builds on prepack), the tarball
 * installed into a fresh project under the system's temp directory — no path to this
 * repository's node_modules — and from there `npx agent-test-gateway` (--help, run, chat)
 * against a gateway with the simulators. Then the image's command line (Dockerfile ENTRYPOINT
 * + CMD) run on the installed package, as the container runs it on /app.
 */

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { request } from 'undici';
import { expandSuitePatterns } from '../src/cli/globs.js';
import { waitUntilReady } from './support/server.js';
import { outsideEnv } from './support/child.js';
import { childEnv, eventually, startStack } from './support/stack.js';
import { freePort } from './support/http.js';
import { scaled } from './support/time.js';
import { needs, toolPath } from './support/tools.js';
import { ROOT } from './support/root.js';

const PACKAGE = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { name: string; files: string[] };
const exec = promisify(execFile);

// Packing builds and installing resolves every dependency: more than the default 120 s on a busy machine.
t.setTimeout(scaled(300_000));

/**
 * The consumer's environment: this test's Node (the LTS the tests run on) first on PATH, and
 * nothing of this repository (its node_modules/.bin, npm's script variables).
 */
const consumerEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => outsideEnv(dirname(process.execPath), extra);

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `t.equal(ran.code, 0, …exited0(what, ran))`: a short name, and the command's output as the failure's diagnostic. */
const exited0 = (what: string, ran: Ran): [string, { output: string }] => [`${what} exits 0`, { output: `${ran.stdout}${ran.stderr}` }];

/** Runs a command to its end (stdin closed), collecting its output. */
function runToEnd(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const work = await mkdtemp(join(tmpdir(), 'agent-test-gateway-package-'));
t.teardown(() => rm(work, { recursive: true, force: true }));
const project = join(work, 'consumer');
const installed = join(project, 'node_modules', ...PACKAGE.name.split('/'));

t.test('npm pack builds the package with only what runs', async (t) => {
  await mkdir(join(work, 'pack'));
  const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', join(work, 'pack')], {
    cwd: ROOT,
    env: childEnv(),
    maxBuffer: 16 * 1024 * 1024,
  });
  // prepack's build writes to stdout before npm's JSON.
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[\n'))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const files = packed!.files.map((f) => f.path);
  t.ok(files.includes('dist/cli/main.js'), 'the command, built on prepack');
  t.ok(files.includes('dist/entrypoint.js'), "the image's entrypoint");
  t.ok(files.includes('dist/server.js') && files.includes('openapi.yaml'), 'the server and its contract');
  for (const doc of ['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']) t.ok(files.includes(doc), doc);
  const page = [
    'public/debug/app.css',
    'public/debug/app.js',
    'public/debug/index.html',
    'public/report/report.css',
    ...['api.js', 'app.css', 'app.js', 'index.html', 'list.js', 'run.js', 'views.js'].map((f) => `public/runs/${f}`),
  ];
  t.same(
    files.filter((f) => f.startsWith('public/')),
    page,
    "the debug and runs pages' files and the reports' style sheet, read at run time (tsc copies no .html, .js or .css into dist/)",
  );
  t.same(
    files.filter(
      (f) =>
        !f.startsWith('dist/') &&
        !page.includes(f) &&
        !['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json', 'openapi.yaml'].includes(f),
    ),
    [],
    'nothing else: no sources, tests, chart or examples',
  );
  t.notOk(
    files.some((f) => f.endsWith('.tsbuildinfo') || f.endsWith('.ts')),
    'no build state, no TypeScript',
  );

  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  const install = await runToEnd(
    'npm',
    ['install', '--save-dev', join(work, 'pack', packed!.filename), '--no-audit', '--no-fund', '--prefer-offline'],
    project,
    consumerEnv(),
  );
  t.equal(install.code, 0, ...exited0('npm install <tarball>', install));
  t.notMatch(install.stderr, /EBADENGINE/, 'no engine warning on the supported Node');
  const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
  t.match(manifest.devDependencies[PACKAGE.name], /^file:/, 'pinned as a devDependency');
  t.ok(existsSync(join(project, 'node_modules', '.bin', 'agent-test-gateway')), 'the command is linked');
  t.notOk(existsSync(join(project, 'node_modules', 'tap')), 'no devDependency of ours came along');
  t.notOk(existsSync(join(project, 'node_modules', 'typescript')), 'nor the compiler');
  t.ok(relative(ROOT, installed).startsWith('..'), 'the project is outside the repository');
});

t.test('from the project: npx agent-test-gateway --help, run and chat', async (t) => {
  const s = await startStack(t);
  const env = consumerEnv({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token', NO_COLOR: '1' });
  const npx = (args: string[]) => runToEnd('npx', ['--no', '--', 'agent-test-gateway', ...args], project, env);

  // npx (npm 11) passes what follows the command's name to the command, as the README says...
  const plain = await runToEnd('npx', ['agent-test-gateway', '--help'], project, env);
  t.match(plain.stdout, /agent-test-gateway run <suite\.yaml>…/, 'npx agent-test-gateway --help: the command answers');
  // ...but takes the word after `--no` as that option's value, so `npx --no agent-test-gateway --help`
  // answers with npx's own help: after `--no`, `--` goes before the command's name.
  const bare = await runToEnd('npx', ['--no', 'agent-test-gateway', '--help'], project, env);
  t.notMatch(bare.stdout, /agent-test-gateway run <suite\.yaml>…/, 'npx --no agent-test-gateway --help: npx answers');
  for (const ask of ['--help', 'help']) {
    const help = await npx([ask]);
    t.equal(help.code, 0, ...exited0(ask, help));
    t.match(help.stdout, /agent-test-gateway run <suite\.yaml>…/);
    t.match(help.stdout, /agent-test-gateway chat <agent>/);
  }

  await cp(join(ROOT, 'examples'), join(project, 'tests'), { recursive: true });
  const run = await npx(['run', 'tests/basic.yaml', '--gateway', s.url, '--junit', 'reports/agents.xml']);
  t.equal(run.code, 0, ...exited0('npx agent-test-gateway run', run));
  t.match(run.stdout, /basic \(tests\/basic\.yaml\) — agent:coach/);
  t.match(run.stdout, /✓ 1 of 1 suite passed/);
  t.match(await readFile(join(project, 'reports', 'agents.xml'), 'utf8'), /<testsuite [^>]*name="basic"[^>]*failures="0"/);

  const chat = spawn('npx', ['--no', '--', 'agent-test-gateway', 'chat', 'coach', '--gateway', s.url], {
    cwd: project,
    env,
    stdio: 'pipe',
  });
  t.teardown(() => void chat.kill('SIGKILL'));
  let out = '';
  chat.stdout.on('data', (d: Buffer) => (out += d.toString()));
  chat.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((resolve) => chat.on('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp, from: number) =>
    eventually(() => pattern.test(out.slice(from)), 15_000).catch(() => t.fail(`chat never printed ${pattern}:\n${out}`));
  await waitFor(/you> $/, 0);
  t.match(out, /coach> Hi, I'm coach\. How can I help\?/);
  const mark = out.length;
  chat.stdin.write('Where is my order?\n');
  await waitFor(/you> $/, mark);
  t.match(out.slice(mark), /\[tool lookup_order\]\ncoach> You said: Where is my order\?/);
  chat.stdin.end();
  t.equal(await exit, 0, 'end of input closes the conversation');
  t.match(out, /Closed session [0-9a-f-]{36}/);
  t.same(s.engine.record.connections.at(-1)?.frames, ['#intro', 'Where is my order?']);
});

/** The words of a documented command line (`pattern`'s group): split at spaces, single quotes keeping a pattern whole. */
function containerStepArgs(doc: string, pattern: RegExp): string[] {
  const found = pattern.exec(doc)?.[1];
  if (found === undefined) throw new Error(`docs/ci.md has no line matching ${pattern}`);
  return [...found.trim().matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/** ENTRYPOINT followed by CMD, as the runtime stage of the Dockerfile declares them. */
async function imageCommand(): Promise<{ entrypoint: string[]; cmd: string[] }> {
  const lines = (await readFile(join(ROOT, 'Dockerfile'), 'utf8')).split('\n');
  const json = (keyword: string) =>
    JSON.parse(
      lines
        .filter((l) => l.startsWith(`${keyword} [`))
        .at(-1)!
        .slice(keyword.length + 1),
    ) as string[];
  return { entrypoint: json('ENTRYPOINT'), cmd: json('CMD') };
}

t.test("the image's command line: serves by default, runs the CLI when given its arguments", async (t) => {
  const { entrypoint, cmd } = await imageCommand();
  t.same(entrypoint.slice(0, 2), ['/usr/bin/tini', '--']);
  // The image has tini (Debian's package); without it here, the command runs under node directly.
  const tini = toolPath('tini');
  const hasTini = tini !== undefined;
  // Without tini here the command runs under node directly, and the run under tini is the skip.
  if (!hasTini) t.test('the command line under tini, as in the image', needs('tini', t), () => {});
  // /app in the image: package.json, dist, openapi.yaml, public, and node_modules beside (here, above) them.
  const app = installed;
  const atApp = (word: string) => (word.startsWith('/app/') ? join(app, word.slice('/app/'.length)) : word);
  const line = (args: string[]) =>
    (hasTini ? [tini, ...entrypoint.slice(1), ...args] : [...entrypoint.slice(2), ...args]).map((word) => atApp(word));
  // The examples' simulated users and judges need a model: the stack's model simulator.
  const s = await startStack(t, { model: true });
  const port = await freePort();
  const env = consumerEnv({
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    PROMETHIST_MCP_ENGINE_URL: s.engine.url,
    PROMETHIST_PLATFORM_URL: s.platform.url,
    MODEL_BASE_URL: s.model!.url,
    SIMULATOR_MODEL: 'sim-user',
    JUDGE_MODEL: 'sim-judge',
    AGENT_TEST_GATEWAY_TOKEN: 'demo-token',
    DEBUG_PAGE: 'true',
  });
  const image = (args: string[]) => {
    const [command, ...rest] = line(args);
    return runToEnd(command!, rest, app, env);
  };

  const [command, ...args] = line(cmd);
  const server: ChildProcess = spawn(command!, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => void server.kill('SIGKILL'));
  let log = '';
  server.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const stopped = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
  const gateway = `http://127.0.0.1:${port}`;
  await waitUntilReady(gateway);
  const openapi = await request(`${gateway}/openapi.json`);
  t.equal(openapi.statusCode, 200, 'openapi.yaml is found in the package');
  await openapi.body.dump();
  for (const [path, type] of [
    ['/debug', 'text/html'],
    ['/debug/app.js', 'text/javascript'],
    ['/debug/app.css', 'text/css'],
  ] as const) {
    const file = await request(`${gateway}${path}`);
    t.equal(file.statusCode, 200, `${path}: the debug page's file is found in the package`);
    t.match(file.headers['content-type'], new RegExp(`^${type};`));
    t.ok((await file.body.text()).length > 100, `${path} is not empty`);
  }

  // `docker run IMAGE run /suites/*.yaml`: the pattern reaches the container unexpanded.
  const suites = join(project, 'tests');
  const run = await image(['run', `${suites}/*.yaml`, '--gateway', gateway]);
  t.equal(run.code, 0, ...exited0("the image's run", run));
  const examples = (await readdir(suites)).filter((f) => f.endsWith('.yaml')).length;
  t.match(run.stdout, `✓ ${examples} of ${examples} suites passed`, `the pattern was expanded to the ${examples} examples`);
  t.ok(s.engine.record.connections.length > 0, 'the served gateway reached the engine');

  const help = await image(['--help']);
  t.equal(help.code, 0, ...exited0("the image's --help", help));
  t.match(help.stdout, /agent-test-gateway serve/);

  // docs/ci.md's container steps, as written there, from a checkout that is not /app: GitHub Actions' `docker run -w
  // "$PWD"` (the ENTRYPOINT with the step's arguments), GitLab's job in the image (its script's node /app/dist/entrypoint.js).
  const ci = await readFile(join(ROOT, 'docs', 'ci.md'), 'utf8');
  const checkout = join(work, 'checkout');
  await cp(join(ROOT, 'examples'), join(checkout, 'tests', 'agents'), { recursive: true });
  const steps: Array<[string, string[]]> = [
    ['GitHub Actions', line(containerStepArgs(ci, /registry\.example\.com\/agent-test-gateway:[\d.]+\n\s+(run .*)\n/))],
    ['GitLab CI', containerStepArgs(ci, /\n\s+- (node \/app\/dist\/entrypoint\.js run .*)\n/)],
  ];
  for (const [what, words] of steps) {
    await rm(join(checkout, 'reports'), { recursive: true, force: true });
    const [command, ...rest] = words.map(atApp);
    const step = await runToEnd(command!, rest, checkout, { ...env, AGENT_TEST_GATEWAY_URL: gateway });
    t.equal(step.code, 0, ...exited0(`${what}: ${words.join(' ')}`, step));
    const junit = words[words.indexOf('--junit') + 1]!;
    t.match(await readFile(join(checkout, junit), 'utf8'), /<testsuites [^>]*failures="0"/, `${what}: ${junit} written in the checkout`);
    t.ok(existsSync(join(checkout, words[words.indexOf('--html') + 1]!)), `${what}: the HTML report too`);
    t.match(step.stdout, `✓ ${examples} of ${examples} suites passed`, `${what}: the pattern expanded in the checkout`);
  }

  server.kill('SIGTERM');
  t.equal(await stopped, 0, 'SIGTERM drains and exits 0');
  t.match(log, /"msg":"stopped"/);
});

t.test('suite patterns expand to sorted files; files and unmatched patterns stay as written', async (t) => {
  const dir = t.testdir({ 'b.yaml': '', 'a.yaml': '', 'c.yml': '', '[x].yaml': '' });
  t.same(await expandSuitePatterns([`${dir}/*.yaml`]), [join(dir, '[x].yaml'), join(dir, 'a.yaml'), join(dir, 'b.yaml')]);
  t.same(await expandSuitePatterns([join(dir, '[x].yaml')]), [join(dir, '[x].yaml')], 'an existing file named like a pattern');
  t.same(await expandSuitePatterns([`${dir}/*.json`, 'plain.yaml']), [`${dir}/*.json`, 'plain.yaml']);
});
