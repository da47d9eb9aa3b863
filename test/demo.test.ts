/**
 * `npm run demo` as a newcomer meets it: the real script (tsx, no build) as a child process.
 * A taken port is named with the way out; a turn streams its sentences spread in time.
 */

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { delimiter, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { parse as parseYaml } from 'yaml';
import { ndjsonLines } from '../src/http/ndjson.js';
import { CLI_NODE_MAJOR_NEEDED } from '../src/node-version.js';
import { demoBanner, startDemo } from './support/demo.js';
import { childEnv, eventually } from './support/stack.js';
import { scaled } from './support/time.js';

// The file starts the demo as a fresh machine does: longer than the runner's 120 s on a loaded machine.
t.setTimeout(scaled(300_000));

const ROOT = fileURLToPath(new URL('..', import.meta.url));

t.test('a taken port: a message naming it and how to move the demo, exit non-zero', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const { port } = holder.address() as AddressInfo;

  const demo = startDemo(t, { PORT: String(port) });
  const code = await demo.exit;
  t.not(code, 0, 'exits non-zero');
  t.match(demo.output.stderr, `port ${port} on 127.0.0.1 is already in use`, 'names the port');
  t.match(demo.output.stderr, `PORT=${port + 1} npm run demo`, 'and how to move it');
  t.notMatch(demo.output.stdout, /gateway on/, 'no walk-through for a demo that is not running');
});

t.test('the walk-through, and a streamed turn arriving sentence by sentence', async (t) => {
  const demo = startDemo(t, { PORT: '0' });
  const { banner, gw } = await demoBanner(demo);
  t.match(gw, /:\d+$/, 'the banner names the port it listens on, not the 0 it was given');
  t.match(banner, `GW=${gw}; AUTH=`, 'the walk-through starts by naming that gateway');
  const pace = Number(/sentences (\d+) ms apart/.exec(banner)?.[1]);
  t.ok(pace > 0, `the banner states the pace (${pace} ms)`);
  t.match(banner, /this demo's engine: (\d+) s\), so a snapshot read at once is empty/, 'why the memory step waits');
  t.match(banner, /sleep \d+; curl -s \S+\/v1\/agents\/coach\/memory\/alice/, 'and how');
  t.match(banner, /curl -s -X PUT \S+\/v1\/agents\/coach\/memory\/alice .*"confirm":true,"snapshot"/, 'a restore curl');
  t.match(banner, /DEBUG_PAGE=true npm run demo +# then open \S+\/debug/, 'the debug page and how to turn it on');
  t.match(banner, 'npx agent-test-gateway chat coach --gateway $GW', 'the terminal client, on the same gateway');
  t.match(banner, 'docs/demo.md', 'where every phrase and agent is listed');

  const auth = { authorization: 'Bearer demo-token', 'content-type': 'application/json' };
  const start = await request(`${gw}/v1/agents/coach/conversations`, { method: 'POST', headers: auth, body: '{"device_ref":"alice"}' });
  t.equal(start.statusCode, 201);
  const sessionId = ((await start.body.json()) as { session_id: string }).session_id;

  // Step 3 of the walk-through: each element is timed as it arrives.
  const res = await request(`${gw}/v1/agents/coach/conversations/${sessionId}/turns`, {
    method: 'POST',
    headers: { ...auth, accept: 'application/x-ndjson' },
    body: JSON.stringify({ line: 'Which size fits me?' }),
  });
  t.equal(res.statusCode, 200);
  const spoken: Array<{ text: string; at: number }> = [];
  for await (const line of ndjsonLines(res.body)) {
    const element = (JSON.parse(line) as { element?: { type?: string; text?: string } }).element;
    if (element?.type === 'text') spoken.push({ text: element.text ?? '', at: performance.now() });
  }
  t.ok(spoken.length >= 3, `the agent speaks in sentences: ${spoken.map((s) => s.text).join(' | ')}`);
  // The demo pauses a pace before each sentence after the first, so the sentences leave at least two paces
  // apart; a busy test process reading the first one late narrows what it measures, hence half a pace.
  const spread = spoken.at(-1)!.at - spoken[0]!.at;
  t.ok(spread >= pace / 2, `the first sentence arrived ${Math.round(spread)} ms before the last: streamed, not one block`);
  for (let i = 1; i < spoken.length; i++) t.ok(spoken[i]!.at > spoken[i - 1]!.at, `sentence ${i + 1} arrived after sentence ${i}`);

  // The model simulator stands in for a real model: the simulated-user example passes against the demo.
  t.match(banner, /model +http:\/\/127\.0\.0\.1:\d+\/v1 +\(a deterministic stand-in/, 'the banner names the model simulator');
  const example = parseYaml(await readFile('examples/simulated-user.yaml', 'utf8')) as Record<string, unknown>;
  const ran = await request(`${gw}/v1/agents/coach/runs`, { method: 'POST', headers: auth, body: JSON.stringify(example) });
  const report = (await ran.body.json()) as { passed: boolean; conversations: Array<{ attempts: Array<{ stop_reason: string }> }> };
  t.equal(report.passed, true, 'examples/simulated-user.yaml passes against the demo', { report });
  t.equal(report.conversations[0]!.attempts[0]!.stop_reason, 'user_done');

  const debug = await request(`${gw}/debug`);
  t.equal(debug.statusCode, 404);
  t.match(await debug.body.json(), { error: 'not_found', message: /DEBUG_PAGE=true/ }, 'the demo without the page says how to turn it on');

  demo.child.kill('SIGINT');
  t.equal(await demo.exit, 0, 'Ctrl-C stops it cleanly');
});

/** The machine's own Node where it is older than the command needs (20 in CI): `node` on PATH outside this checkout. */
function machineNode(): { path: string; version: string } | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && !`${dir}${sep}`.startsWith(ROOT));
  for (const candidate of [...dirs.map((dir) => join(dir, 'node')), '/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const ran = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    const version = ran.stdout?.trim() ?? '';
    if (ran.status === 0 && Number(version.replace(/^v/, '').split('.')[0]) < CLI_NODE_MAJOR_NEEDED)
      return { path: realpathSync(candidate), version };
  }
  return undefined;
}
const old = machineNode();

t.test(
  "on the machine's older Node, the banner's commands run as printed",
  { skip: old ? false : `no Node older than ${CLI_NODE_MAJOR_NEEDED} on this machine` },
  async (t) => {
    const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, env: childEnv(), encoding: 'utf8' });
    t.equal(built.status, 0, 'dist/ is built (npx runs the built command)');
    // As `npm run demo` on that Node starts it: scripts/node24.cjs fetched Node 24 and says which Node the machine has.
    const demo = startDemo(t, { PORT: '0', MACHINE_NODE_VERSION: old!.version });
    const { banner, gw } = await demoBanner(demo);
    const commands = banner
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.startsWith('AGENT_TEST_GATEWAY_TOKEN='));
    t.equal(commands.length, 4, 'steps 4, 7 and 8 name the command', { commands });
    for (const line of commands) {
      t.match(line, /^AGENT_TEST_GATEWAY_TOKEN=demo-token node scripts\/node24\.cjs npx agent-test-gateway /, 'with the launcher in front');
    }
    // A shell whose `node` is the machine's older one, as the person's terminal has it.
    const bin = t.testdir({});
    symlinkSync(old!.path, join(bin, 'node'));
    const path = [bin, ...(process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && !`${dir}${sep}`.startsWith(ROOT))];
    const reports = t.testdir({});
    for (const line of commands.filter((c) => !/ chat /.test(c))) {
      const printed = line.replaceAll('$GW', gw).replace('reports/gate.html', join(reports, 'gate.html'));
      const ran = spawnSync('bash', ['-c', printed], {
        cwd: ROOT,
        env: childEnv({ PATH: path.join(delimiter), MACHINE_NODE_VERSION: '' }),
        encoding: 'utf8',
        timeout: 120_000,
      });
      const wanted = / compare /.test(line) ? 1 : 0; // coach.3 regresses one conversation
      t.equal(ran.status, wanted, `${line.slice(0, 90)}…: exit ${wanted}`, { stderr: ran.stderr });
      t.notMatch(ran.stderr, /EBADENGINE|needs Node\.js/, 'no engine warning, no refusal');
    }
  },
);

/** Every process below `pid`, from /proc: each process's parent is the fourth field of its stat line. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const below = (p: number): number[] => (children.get(p) ?? []).flatMap((c) => [c, ...below(c)]);
  return below(pid);
}

const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

t.test(
  'a signal to `npm run demo` stops every process it started',
  { skip: existsSync('/proc/self/stat') ? false : 'no /proc to find the processes in' },
  async (t) => {
    // SIGTERM or SIGINT to npm's PID, as a process manager or `kill` sends it; SIGINT to its process group, as
    // Ctrl-C at a terminal sends it. Each reaches the demo once (a second would skip its drain), and npm exits
    // with the demo's code: 0, drained.
    for (const [signal, to] of [
      ['SIGTERM', 'pid'],
      ['SIGINT', 'pid'],
      ['SIGINT', 'group'],
    ] as const) {
      // npm, its sh, the launcher (scripts/node24.cjs), the demo.
      const npm = spawn('npm', ['run', 'demo'], {
        cwd: ROOT,
        env: childEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', DEBUG_PAGE: 'false' }),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: to === 'group',
      });
      let out = '';
      npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
      npm.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<string>((resolve) => npm.on('exit', (code, killed) => resolve(killed ?? String(code))));
      const started = descendantsWhenReady(npm.pid!, () => out);
      const tree = await started;
      t.teardown(() => {
        for (const pid of tree) if (alive(pid)) process.kill(pid, 'SIGKILL');
      });
      t.ok(tree.length >= 2, `${signal}: npm started ${tree.length} processes (the launcher and the demo at least)`);
      if (to === 'group') process.kill(-npm.pid!, signal);
      else npm.kill(signal);
      await eventually(() => tree.every((pid) => !alive(pid)), 30_000).catch(() => undefined);
      t.same(
        tree.filter(alive).map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')),
        [],
        `${signal} to npm's ${to === 'pid' ? 'PID' : 'process group'}: none of its processes lives on`,
      );
      t.equal(await exited, '0', `${signal} to npm's ${to === 'pid' ? 'PID' : 'process group'}: npm exits with the demo's 0`);
      t.notMatch(out, /second SIG/, 'the demo got the signal once');
    }
  },
);

/** Waits for the demo's banner, then answers every process below npm's. */
async function descendantsWhenReady(pid: number, output: () => string): Promise<number[]> {
  await eventually(() => /Ctrl-C stops everything/.test(output()), 90_000).catch(() => {
    throw new Error(`npm run demo never printed its banner:\n${output()}`);
  });
  return descendants(pid);
}
