/**
 * The docs' commands and sample outputs, held to the demo. A newcomer copies the README's and
 * docs/demo.md's commands into a shell and compares what they print with what the docs show, so
 * here they run against the real demo (src/demo.ts: paced speech and all) and the docs' fenced
 * samples are read and compared with the demo's output. Only what truly varies is normalised: ids,
 * run labels, seeds and timings — and a documented timing must still be the demo's order of
 * magnitude ("exit in 1 ms" for a turn the demo takes 400 ms to speak fails).
 *
 * The samples marked `<!-- sample: NAME -->` (test/support/doc-samples.ts) are written by a real
 * run: when the output changes on purpose, `npm run docs:samples` rewrites them. Change the other
 * samples by hand: this test reads them.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { demoBanner, startDemo } from './support/demo.js';
import {
  agentTestGateway,
  closeEnough,
  compareTranscript,
  ELIDED,
  markedSamples,
  normalise,
  produce,
  run,
  SAMPLE_FILES,
  SAMPLES,
  type Ran,
} from './support/doc-samples.js';
import { UUID } from './support/stack.js';
import { scaled } from './support/time.js';

// The file starts the demo and runs the documented commands end to end: longer than the runner's 120 s on a loaded machine.
t.setTimeout(scaled(300_000));

interface Fence {
  lang: string;
  body: string;
  /** The prose just before the block, which says what it is. */
  before: string;
}

/** The fenced blocks of a Markdown file (at the start of a line; not those nested in lists). */
function fences(markdown: string): Fence[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1]!,
    body: m[2]!.replace(/\n$/, ''),
    before: markdown.slice(Math.max(0, m.index - 400), m.index),
  }));
}

/** The first fenced block whose preceding prose says `introduced` (its last 400 characters). */
async function fenceAfter(file: string, introduced: string, lang?: string): Promise<string> {
  const found = fences(await readFile(file, 'utf8')).find((f) => f.before.includes(introduced) && (lang === undefined || f.lang === lang));
  if (!found) throw new Error(`${file}: no \`\`\`${lang ?? ''} block after "${introduced}"`);
  return found.body;
}

/** Shell lines as run: a line ending in `\` continues on the next; blank lines and comments dropped. */
function commands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));
}

/** The docs are written for the demo's default port; the test's demo listens where the system put it. */
const DOCS_GW = 'http://127.0.0.1:8080';

/**
 * A documented JSON sample against the demo's answer: `"…"` (or `["…"]`) stands for any value,
 * an id for any id, a `duration_ms` for a time close enough; everything else, keys included, as shown.
 */
function compareSample(sample: unknown, seen: unknown, path: string, problems: string[]): void {
  const show = (v: unknown) => JSON.stringify(v);
  if (sample === ELIDED) return;
  if (Array.isArray(sample) && sample.length === 1 && sample[0] === ELIDED) {
    if (!Array.isArray(seen)) problems.push(`${path}: documented a list, the demo answered ${show(seen)}`);
    return;
  }
  if (typeof sample === 'string' && UUID.test(sample)) {
    if (typeof seen !== 'string' || !UUID.test(seen)) problems.push(`${path}: documented an id, the demo answered ${show(seen)}`);
    return;
  }
  if (path.endsWith('.duration_ms') && typeof sample === 'number') {
    if (typeof seen !== 'number' || !closeEnough(sample, seen))
      problems.push(`${path}: documented ${sample} ms, the demo took ${show(seen)}`);
    return;
  }
  if (Array.isArray(sample)) {
    if (!Array.isArray(seen) || seen.length !== sample.length)
      problems.push(`${path}: documented ${show(sample)}, the demo answered ${show(seen)}`);
    else sample.forEach((item, i) => compareSample(item, seen[i], `${path}[${i}]`, problems));
    return;
  }
  if (typeof sample === 'object' && sample !== null) {
    if (typeof seen !== 'object' || seen === null || Array.isArray(seen)) {
      problems.push(`${path}: documented an object, the demo answered ${show(seen)}`);
      return;
    }
    const [want, got] = [sample as Record<string, unknown>, seen as Record<string, unknown>];
    for (const key of new Set([...Object.keys(want), ...Object.keys(got)])) {
      if (!(key in want)) problems.push(`${path}.${key}: in the demo's answer, missing from the sample`);
      else if (!(key in got)) problems.push(`${path}.${key}: in the sample, missing from the demo's answer`);
      else compareSample(want[key], got[key], `${path}.${key}`, problems);
    }
    return;
  }
  if (sample !== seen) problems.push(`${path}: documented ${show(sample)}, the demo answered ${show(seen)}`);
}

// ── running what the docs say ─────────────────────────────────────────────────────────────────
const MARK = '@@@ next command @@@';

/**
 * Shell lines in one bash, as pasted into a terminal (the docs' port swapped for the demo's):
 * what each printed, in order.
 */
async function shell(lines: string[], gw: string): Promise<Ran & { printed: string[] }> {
  const script = ['set -u', ...lines.flatMap((line) => [line.replaceAll(DOCS_GW, gw), `printf '\\n%s\\n' '${MARK}'`])].join('\n');
  const ran = await run('bash', ['-c', script], {});
  const printed = ran.stdout.split(`\n${MARK}\n`).map((out) => out.trim());
  return { ...ran, printed: printed.slice(0, lines.length) };
}

const tools = await run('bash', ['-c', 'command -v curl && command -v sed'], {});
const noShell = tools.code === 0 ? false : 'the docs’ shell commands need bash, curl and sed';

const demo = startDemo(t, { PORT: '0' });
const { banner, gw } = await demoBanner(demo);

t.test('one walk-through: the banner prints docs/demo.md’s, and both start as the README does', async (t) => {
  const walk = await fenceAfter('docs/demo.md', 'With the demo on its default port', 'sh');
  const printed = banner.split('(copy and paste; docs/demo.md has the same walk-through):\n\n')[1]?.split('\n\nAI assistants')[0] ?? '';
  const unindented = printed
    .split('\n')
    .map((line) => line.replace(/^ {2}/, ''))
    .join('\n')
    .replaceAll(gw, DOCS_GW)
    // Where the machine's Node is older (the tests run through scripts/node24.cjs), the banner puts the launcher in front.
    .replaceAll('node scripts/node24.cjs npx agent-test-gateway', 'npx agent-test-gateway');
  t.equal(unindented, walk, 'the banner’s walk-through is docs/demo.md’s (with the port it really uses)');

  const readme = await fenceAfter('README.md', 'The contract is [`openapi.yaml`]', 'sh');
  const start = (block: string) => commands(block).filter((line) => /^(GW=|R=|SID=)/.test(line));
  t.same(start(readme), start(walk), 'the README starts a conversation with the same commands');
  t.equal(start(readme).length, 3, 'naming the gateway, starting, keeping the session id');
  t.notMatch(readme + walk + banner, /\| *jq\b/, 'no jq needed');
});

t.test('README: the first commands print what the agent said, and the turn answers as shown', { skip: noShell }, async (t) => {
  const block = await fenceAfter('README.md', 'The contract is [`openapi.yaml`]', 'sh');
  const lines = commands(block);
  const firstTurn = lines.findIndex((line) => line.includes('/turns '));
  const ran = await shell(lines.slice(0, firstTurn + 1), gw);
  t.equal(ran.code, 0, 'the commands run', { stderr: ran.stderr });
  const [, started, sid, turn] = ran.printed;
  const opening = JSON.parse(started ?? '{}');
  t.equal(opening.turn?.text, "Hi, I'm coach. How can I help?", 'the start prints the agent’s opening', { printed: started });
  t.equal(sid, opening.session_id, 'and keeps its session id');

  const sample = JSON.parse(await fenceAfter('README.md', 'A turn answers the engine', 'json'));
  const answer = JSON.parse(turn ?? '{}');
  const problems: string[] = [];
  compareSample(sample, answer, 'answer', problems);
  t.same(problems, [], 'the README’s turn answer is the demo’s answer', { answer });
});

t.test('docs/demo.md: the walk-through’s commands run (all but the terminal client and the suites)', { skip: noShell }, async (t) => {
  const walk = await fenceAfter('docs/demo.md', 'With the demo on its default port', 'sh');
  const lines = commands(walk).filter((line) => !/^(AGENT_TEST_GATEWAY_TOKEN=|DEBUG_PAGE=)/.test(line));
  const ran = await shell(lines, gw);
  t.equal(ran.code, 0, 'they run', { stderr: ran.stderr });
  const said = (pattern: RegExp) => ran.printed.findIndex((out) => pattern.test(out));
  const started = ran.printed[said(/^\{"session_id"/)] ?? '{}';
  t.equal(JSON.parse(started).turn.text, "Hi, I'm coach. How can I help?", 'step 1 prints the agent’s opening');
  t.match(ran.printed.join('\n'), /"text":"Let me see…"/, 'step 3 streams the agent’s sentences');
  t.same(
    ran.printed.filter((out) => out.includes('"error":')),
    [],
    'no command is refused',
  );
  const memory = ran.printed.filter((out) => out.startsWith('{"device_ref":"mcp:alice"') && out.includes('"units"'));
  t.match(JSON.parse(memory[0] ?? '{}'), { units: [], notes: [/aggregated/] }, 'step 6: empty at once, and the note says why');
  const units = (JSON.parse(memory[1] ?? '{}') as { units?: Array<{ kind: string; text?: string }> }).units ?? [];
  t.ok(
    units.some((u) => u.kind === 'fact' && u.text === 'prefers size M'),
    'after the wait: the fact step 2 left',
    { memory },
  );
});

t.test('every marked sample in the docs is what a fresh run against the demo prints', async (t) => {
  const used = new Set<string>();
  let gateRun = '';
  for (const file of SAMPLE_FILES) {
    for (const marked of markedSamples(await readFile(file, 'utf8'))) {
      used.add(marked.name);
      t.ok(marked.name in SAMPLES, `${file}: the sample ${marked.name} is one test/support/doc-samples.ts knows`);
      if (!(marked.name in SAMPLES)) continue;
      const ran = await produce(marked.name, gw);
      if (marked.name === 'release-gate-compare') gateRun = ran.block;
      t.equal(ran.code, SAMPLES[marked.name]!.exit, `${file}, ${marked.name}: ${SAMPLES[marked.name]!.command} exits as documented`, {
        stderr: ran.stderr,
      });
      const { documented, printed, offTimes } = compareTranscript(marked.body.split('\n'), ran.block.split('\n'));
      t.equal(printed, documented, `${file}, ${marked.name}: the demo prints what the doc shows (ids, run labels, seeds and times aside)`);
      t.same(offTimes, [], `${file}, ${marked.name}: and takes about the times it shows`);
    }
  }
  t.same(
    Object.keys(SAMPLES).filter((name) => !used.has(name)),
    [],
    'every sample is shown somewhere',
  );
  // The samples the issue found stale: the demo's 400 ms pause in the latencies, pass^k as the command prints it.
  const gate = markedSamples(await readFile('docs/release-gate.md', 'utf8')).find((m) => m.name === 'release-gate-compare')?.body ?? '';
  t.match(gate, /latency: baseline p50 [4-9]\d\d ms/, 'the release gate sample shows the demo’s pause in its latencies');
  t.match(gate, /baseline 1\.00 at every k/, 'and pass^k as the command prints it');

  // The walk-through's step 8 says how many rounds each conversation of the gate took: as a run took them.
  const walk = await fenceAfter('docs/demo.md', 'With the demo on its default port', 'sh');
  const said = /after the (\d+) rounds it took to be sure, the third\n#\s+stopped after (\d+),/.exec(walk);
  const rounds = [...gateRun.matchAll(/· (\d+) rounds, (decided|stopped)/g)].map((m) => `${m[1]} ${m[2]}`);
  t.same(
    said === null ? [] : [`${said[1]} decided`, `${said[1]} decided`, `${said[2]} stopped`],
    rounds,
    'docs/demo.md step 8: the rounds the release gate took in a fresh run',
  );
});

t.test('plan --from-report a run of the demo’s gate: its wall time within 1.5× of the time the gate took', async (t) => {
  const json = join(t.testdir(), 'gate.json');
  const gate = await agentTestGateway(`${SAMPLES['release-gate-compare']!.command} --json ${json}`, gw);
  t.equal(gate.code, 1, 'the gate ran (coach.3 regressed)', { stderr: gate.stderr });
  const [report] = JSON.parse(await readFile(json, 'utf8')) as Array<{ duration_ms: number }>;
  // The drop the gate's own budget (max_attempts: 20) about catches at these rates, so that the plan plans a gate like it.
  const plan = await agentTestGateway(`npx agent-test-gateway plan --from-report ${json} --drop 0.4`, gw);
  t.equal(plan.code, 0, plan.stderr);
  const [, budget, length, about, unit] =
    /max_attempts: (\d+) .* and ([\d.]+) s a session on average \(measured in the report\): about (\d+) (s|min)/.exec(plan.stdout) ?? [];
  t.ok(Math.abs(Number(budget) - 20) <= 2, `a budget like the gate's: ${plan.stdout}`);
  t.ok(Number(length) < 5, 'the session length the report measured (the demo’s sessions take about a second), not 30 s assumed');
  const planned = Number(about) * (unit === 'min' ? 60 : 1);
  const took = report!.duration_ms / 1000;
  t.ok(planned <= took * 1.5 && planned >= took / 1.5, `planned about ${planned} s, the gate took ${took} s`);
});

t.test('the shipped examples run as the docs show: judge-check labels and the MCP task client', async (t) => {
  // The judge-check example is a marked sample (above); here its κ must be defined and the command pass.
  const judged = await agentTestGateway(SAMPLES['judge-check-example']!.command, gw);
  t.equal(judged.code, 0, 'judge-check exits 0 at --min-agreement 0.8', { stderr: judged.stderr });
  t.match(judged.stdout, /overall: agreement [\d.]+ % \(\d+ of 12\), κ 0\.\d\d \[/, 'κ is defined, with its interval');

  const line = commands(await fenceAfter('docs/mcp.md', 'Against the demo (`test/docs.test.ts` runs the first)', 'sh'))[0]!;
  const [, file] = /^AGENT_TEST_GATEWAY_TOKEN=demo-token npx tsx (examples\/mcp-task-client\.ts) (\S+)$/.exec(line) ?? [];
  t.ok(file, `docs/mcp.md's command runs the example: ${line}`);
  const suite = line.split(' ').at(-1)!;
  const ran = await run(process.execPath, ['--import', 'tsx', file!, suite], {
    AGENT_TEST_GATEWAY_URL: gw,
    AGENT_TEST_GATEWAY_TOKEN: 'demo-token',
  });
  t.equal(ran.code, 0, 'the task completed and the suite passed', { stdout: ran.stdout, stderr: ran.stderr });
  t.match(ran.stdout, /^task [0-9a-f-]{36}: working\n/, 'the call answered the task at once');
  t.match(ran.stdout, /\ncompleted: /, 'tasks/get polled it to its end');
  t.match(ran.stdout, /✓ coach passes/, "tasks/result answered the run's report");
});

t.test('docs/suites.md: a failed expectation, as shown', async (t) => {
  const fragment = (await fenceAfter('docs/suites.md', 'A failed expectation shows what was seen', '')).split('\n');
  // The expectations the doc names, on the line it names.
  const suite = join(t.testdir(), 'failing.yaml');
  await writeFile(
    suite,
    [
      'agent: coach',
      'conversations:',
      '  - turns:',
      '      - line: Where is my order?',
      '        expect: { tool: refund, text_contains: [order, refund] }',
    ].join('\n'),
  );
  const ran = await agentTestGateway(`AGENT_TEST_GATEWAY_TOKEN=demo-token npx agent-test-gateway run ${suite}`, gw);
  t.equal(ran.code, 1, 'the run fails');
  const printed = ran.stdout.split('\n').map(normalise);
  t.same(
    fragment.map(normalise).filter((line) => !printed.includes(line)),
    [],
    'every line the doc shows is printed',
    { printed: ran.stdout },
  );
});
