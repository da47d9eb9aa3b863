/**
 * The docs' sample outputs come from a real run. Each is a fenced block marked just above with
 * `<!-- sample: NAME -->`, NAME one of SAMPLES below: the command that prints it, run from the
 * repository's root against the demo (src/demo.ts: its engine, platform and model simulators,
 * paced speech and all). `npm run docs:samples` (scripts/docs-samples.ts) rewrites every marked
 * block with what a fresh run printed, verbatim; test/docs.test.ts runs the same commands and
 * compares. Only what varies from run to run is normalised in that comparison — ids, run labels,
 * seeds, times — and a documented time must still be of the demo's order of magnitude.
 */

import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { ROOT } from './root.js';
import { childEnv } from './child.js';

export interface Sample {
  /** The command as a reader types it (`NAME=value … npx agent-test-gateway …`); the gateway is the demo's. */
  command: string;
  /** Its exit status: a sample of a regression exits 1. */
  exit: number;
  /** `$ command` above its output, as a terminal shows it; else the output alone (the command in the prose above). */
  console: boolean;
}

export const SAMPLES: Record<string, Sample> = {
  'release-gate-compare': {
    command:
      'AGENT_TEST_GATEWAY_TOKEN=demo-token npx agent-test-gateway compare examples/release-gate/coach.yaml ' +
      '--baseline coach --candidate coach.3',
    exit: 1,
    console: false,
  },
  'release-gate-plan': {
    command: 'npx agent-test-gateway plan --conversations 10 --baseline-rate 0.9 --drop 0.3 --concurrency 10 --session-seconds 30',
    exit: 0,
    console: false,
  },
  'judge-check-example': {
    command: 'AGENT_TEST_GATEWAY_TOKEN=demo-token npx agent-test-gateway judge-check examples/judge-check/labels.yaml --min-agreement 0.8',
    exit: 0,
    console: false,
  },
  'suites-basic-run': {
    command: 'AGENT_TEST_GATEWAY_TOKEN=demo-token npx agent-test-gateway run examples/basic.yaml',
    exit: 0,
    console: true,
  },
};

/** The files that may hold samples: the README and every page of docs/. */
export const SAMPLE_FILES = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** A marked block: its sample's name, and where its body lies in the file. */
export interface Marked {
  name: string;
  body: string;
  start: number;
  end: number;
}

const MARKED = /^<!-- sample: ([\w-]+) -->\n```\w*\n([\s\S]*?)^```$/gm;

export function markedSamples(markdown: string): Marked[] {
  return [...markdown.matchAll(MARKED)].map((m) => {
    const start = m.index + m[0].indexOf('\n```') + 1;
    const bodyStart = markdown.indexOf('\n', start) + 1;
    return { name: m[1]!, body: m[2]!.replace(/\n$/, ''), start: bodyStart, end: bodyStart + m[2]!.length };
  });
}

/** The markdown with a marked block's body replaced. */
export const withBody = (markdown: string, marked: Marked, body: string): string =>
  `${markdown.slice(0, marked.start)}${body}\n${markdown.slice(marked.end)}`;

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], env: Record<string, string>): Promise<Ran> {
  const child = spawn(cmd, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/**
 * A documented `NAME=value … npx agent-test-gateway …` line, run as this checkout's command
 * from source (no build needed) against the demo; the doc leaves the gateway at its default.
 */
export async function agentTestGateway(commandLine: string, gw: string): Promise<Ran> {
  const words = commandLine.split(/\s+/);
  const env: Record<string, string> = { AGENT_TEST_GATEWAY_URL: gw };
  while (/^[A-Z_]+=/.test(words[0] ?? '')) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  if (words[0] !== 'npx' || words[1] !== 'agent-test-gateway') throw new Error(`not an npx agent-test-gateway command: ${commandLine}`);
  return run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...words.slice(2)], env);
}

/** A sample's block as a fresh run against the demo at `gw` prints it, and how the command exited. */
export async function produce(name: string, gw: string): Promise<Ran & { block: string }> {
  const sample = SAMPLES[name];
  if (sample === undefined) throw new Error(`no sample named ${name} (test/support/doc-samples.ts)`);
  const ran = await agentTestGateway(sample.command, gw);
  const output = ran.stdout.trimEnd();
  return { ...ran, block: sample.console ? `$ ${sample.command}\n${output}` : output };
}

// ── comparing a documented output with a fresh one ────────────────────────────────────────────
const TIMING = /\b(\d+(?:\.\d+)?) (ms|s)\b/g;
const timings = (line: string): number[] => [...line.matchAll(TIMING)].map((m) => Number(m[1]) * (m[2] === 's' ? 1000 : 1));
/** A documented time the demo may miss under load, but not by its order of magnitude. */
export const closeEnough = (documented: number, seen: number): boolean => seen >= documented / 2 - 50 && seen <= documented * 2 + 300;

/** What varies from run to run, replaced by a placeholder: ids, run labels, seeds and times. */
export const normalise = (line: string): string =>
  line
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/\brun-[0-9a-f]{8}\b/g, 'run-<hex>')
    .replace(/\bseed \d+\b/g, 'seed <n>')
    .replace(TIMING, '<time>')
    .trimEnd();

export const ELIDED = '…';

/**
 * A documented transcript against the demo's output, line by line: a line of its own `…` in the
 * doc stands for one or more of the demo's lines. Answers both sides normalised and aligned (so a
 * difference shows as a diff) and the documented times the demo did not come close to.
 */
export function compareTranscript(doc: string[], seen: string[]): { documented: string; printed: string; offTimes: string[] } {
  const documented: string[] = [];
  const printed: string[] = [];
  const offTimes: string[] = [];
  let j = 0;
  for (let i = 0; i < doc.length; i++) {
    const line = doc[i]!;
    if (line.trim() === ELIDED) {
      const next = doc[i + 1];
      let k = j + 1;
      while (next !== undefined && k < seen.length && normalise(seen[k]!) !== normalise(next)) k++;
      // Nothing to skip to: leave the demo's lines where they are, so the diff shows them.
      if (next === undefined || k < seen.length) j = next === undefined ? seen.length : k;
      documented.push(line);
      printed.push(line);
      continue;
    }
    const actual = seen[j++] ?? '(nothing more)';
    documented.push(normalise(line));
    printed.push(normalise(actual));
    if (normalise(line) !== normalise(actual)) continue;
    const [want, got] = [timings(line), timings(actual)];
    want.forEach((ms, n) => {
      if (!closeEnough(ms, got[n]!)) offTimes.push(`"${line.trim()}": the demo took ${got[n]} ms`);
    });
  }
  printed.push(...seen.slice(j).map(normalise));
  return { documented: documented.join('\n'), printed: printed.join('\n'), offTimes };
}
