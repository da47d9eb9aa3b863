import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { parseJudgeCheck } from '../suites/judge-check/input.js';
import type { JudgeCheckReport } from '../suites/judge-check/check.js';
import { renderJudgeCheck } from '../suites/judge-check/text.js';
import { FAIL } from '../suites/report/wording.js';
import { gatewayProblem, gatewayUrl, MISSING_TOKEN, tokenFrom } from './connection.js';
import { defaultIo, type Io } from './io.js';
import { postJson } from './post.js';

/**
 * `agent-test-gateway judge-check FILE [--gateway URL] [--json] [--min-agreement F] [--votes N] [--seed N]`
 *
 * Checks the gateway's judge against a person's labels before a team gates on it: FILE is a run
 * report (`run --json`, one report or the array of them) in which a person set `label` on criteria
 * rulings, or a YAML of agent and items; it is checked here first (a problem names its field, and
 * nothing is sent), then posted to the gateway's `/v1/judge-checks`.
 */
export const USAGE = `usage: agent-test-gateway judge-check FILE [--gateway URL] [--json] [--min-agreement F]
                                       [--votes N] [--seed N]

  Has the gateway's judge rule again on transcripts a person labelled and says, per criterion and over
  all, how often it agrees with the person: agreement, Cohen's kappa with its 95 % interval, the
  false-pass and false-fail rates, and every disagreement with the judge's reasoning.

  FILE              a run report (the file of run --json) in which a person set "label": "passed" or
                    "failed" on the criteria rulings they checked, or a YAML file of agent and items,
                    each { transcript: [{ user, agent }], criteria, labels } (docs/simulated-users.md)
  --gateway URL     the gateway (default: $AGENT_TEST_GATEWAY_URL, else http://127.0.0.1:8080)
  --json            print the whole answer as JSON instead of text
  --min-agreement F the agreement (a fraction, e.g. 0.8) every criterion must reach
  --votes N         ask the judge N times per ruling (1, 3 or 5), over the file's votes
  --seed N          the seed of the judge's calls, over the file's

  The platform access token is read from AGENT_TEST_GATEWAY_TOKEN.
  Exit status: 0 checked (and every criterion at least --min-agreement); 1 a criterion below
  --min-agreement; 2 bad input, usage or HTTP errors, or no ruling the judge could give.
`;

interface Options {
  file: string;
  gateway: string;
  json: boolean;
  overrides: { min_agreement?: number; votes?: number; seed?: number };
}

const NUMERIC = { '--min-agreement': 'min_agreement', '--votes': 'votes', '--seed': 'seed' } as const;

function optionsOf(args: string[], env: NodeJS.ProcessEnv): Options | 'help' | { mistake: string } {
  let file: string | undefined;
  let gateway: string | undefined;
  let json = false;
  const overrides: Options['overrides'] = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return 'help';
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const value = () => (eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : args[++i]);
    if (name === '--json') json = true;
    else if (name === '--gateway') gateway = value();
    else if (name in NUMERIC) {
      const text = value();
      const n = Number(text);
      // The numbers' rules (a fraction, 1/3/5, a seed's range) are the input's own: checked with it, named by their field.
      if (text === undefined || text.trim() === '' || !Number.isFinite(n)) return { mistake: `${name} needs a number` };
      overrides[NUMERIC[name as keyof typeof NUMERIC]] = n;
    } else if (arg.startsWith('-')) return { mistake: `unknown option ${arg}` };
    else if (file === undefined) file = arg;
    else return { mistake: `one FILE only: ${file} and ${arg}` };
  }
  if (file === undefined) return { mistake: 'name the FILE of labelled transcripts' };
  const url = gatewayUrl(gateway, env);
  const problem = gatewayProblem(url);
  if (problem !== undefined) return { mistake: problem };
  return { file, gateway: url, json, overrides };
}

/** The file as the route's body: a report or an array of them as `reports`, the YAML of items as it is. */
function bodyOf(data: unknown, overrides: Options['overrides']): unknown {
  const isReport = (v: unknown) => typeof v === 'object' && v !== null && 'conversations' in v && 'run_id' in v;
  const body = Array.isArray(data) ? { reports: data } : isReport(data) ? { reports: [data] } : data;
  if (typeof body !== 'object' || body === null) return body;
  return { ...body, ...overrides };
}

async function readData(file: string): Promise<{ data: unknown } | { problem: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { problem: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
  try {
    return { data: /^\s*[[{]/.test(text) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 }) };
  } catch (err) {
    return { problem: `${file}: not JSON or YAML: ${(err as Error).message.split('\n')[0]}` };
  }
}

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  const options = optionsOf(args, io.env);
  if (options === 'help') {
    io.stdout(USAGE);
    return 0;
  }
  if ('mistake' in options) {
    io.stderr(`agent-test-gateway judge-check: ${options.mistake}\n\n${USAGE}`);
    return 2;
  }
  const read = await readData(options.file);
  if ('problem' in read) {
    io.stderr(`agent-test-gateway judge-check: ${read.problem}\n`);
    return 2;
  }
  const body = bodyOf(read.data, options.overrides);
  const parsed = parseJudgeCheck(body);
  if (!parsed.ok) {
    for (const p of parsed.problems) io.stderr(`${options.file}: ${p.rule}\n`);
    io.stderr(`agent-test-gateway judge-check: nothing was sent\n`);
    return 2;
  }
  const token = tokenFrom(io.env);
  if (!token) {
    io.stderr(`agent-test-gateway judge-check: ${MISSING_TOKEN}\n`);
    return 2;
  }
  const answer = await postJson(`${options.gateway}/v1/judge-checks`, token, body);
  if ('failure' in answer) {
    const { error, message, problems } = answer.failure;
    io.stderr(`agent-test-gateway judge-check: ${error}: ${message}\n`);
    for (const p of (problems ?? []).slice(1)) io.stderr(`  also: ${p.rule ?? p.field}\n`);
    return 2;
  }
  const report = answer.body as unknown as JudgeCheckReport;
  io.stdout(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderJudgeCheck(report));
  if (report.overall.compared === 0) {
    if (!options.json && report.min_agreement === null) io.stdout(`${FAIL} the judge gave no ruling to compare\n`);
    return 2;
  }
  return report.meets_min_agreement === false ? 1 : 0;
}
