import { readFile } from 'node:fs/promises';
import { isGatewayError } from '../errors.js';
import { parse } from '../schemas/requests.js';
import { budgetLine, planBudget, planComparison, planLine, type BudgetRequest } from '../stats/plan.js';
import { DEFAULT_SESSION_SECONDS, planBody, planRequestOf } from '../suites/spec/plan-request.js';
import { monitorRule, withOverrides, type SuiteOverrides } from '../suites/spec/request.js';
import { parseFileSuite } from '../suites/spec/schema.js';
import { defaultIo, type Io } from './io.js';
import { monitorRates } from './monitor-rates.js';
import type { PreparedSuite } from './suite-files.js';

/**
 * `agent-test-gateway plan (--conversations K --baseline-rate P | --from-report FILE |
 *  --from-prometheus URL --monitor NAME) --drop D [--confidence C] [--min-attempts N]
 *  [--concurrency N] [--session-seconds S]`
 *
 * Before a comparison: the `max_attempts` that catches a drop of D from the baseline's pass rates
 * 80 % of the time in every conversation, the sessions it spends and how long it takes. Computed
 * here (src/stats), no gateway needed; the options are the REST route's body fields, checked by
 * the same rules.
 */
export const USAGE = `usage: agent-test-gateway plan (--conversations K --baseline-rate P | --from-report FILE
                            | --from-prometheus URL --monitor NAME) --drop D
                           [--confidence C] [--min-attempts N] [--concurrency N] [--session-seconds S]

  Says, before a comparison, the max_attempts that catches a drop of D (e.g. 0.2) from the baseline's
  pass rates 80 % of the time in every conversation, the engine sessions it spends (expected when
  nothing changed, at most) and the wall time at the given concurrency (default 10) and session
  length (default: what --from-report's sessions took, else 30 s, said as assumed). The baseline's
  pass rates:
    --conversations K --baseline-rate P   P (e.g. 0.9) for each of K conversations
    --from-report FILE                    each conversation's from an earlier run or comparison report
                                          (--json's file; a comparison's baseline side)
    --from-prometheus URL --monitor NAME  each conversation's 7-day pass rate of the monitor NAME, from
                                          Prometheus at URL (the chart's recording rules)
  --confidence defaults to 0.95, --min-attempts to 5.
  Exit status: 0 a budget up to 200 catches the drop; 1 none does; 2 usage errors.
`;

/** The options that are numbers, by the body field each sets. */
const NUMBERS = {
  '--conversations': 'conversations',
  '--baseline-rate': 'baseline_rate',
  '--drop': 'drop',
  '--confidence': 'confidence',
  '--min-attempts': 'min_attempts',
  '--concurrency': 'concurrency',
  '--session-seconds': 'session_seconds',
} as const;
const TEXTS = ['--from-report', '--from-prometheus', '--monitor'] as const;
type Text = (typeof TEXTS)[number];

const FLAG_OF: Record<string, string> = {
  ...Object.fromEntries(Object.entries(NUMBERS).map(([flag, field]) => [field, flag])),
  report: '--from-report',
  baseline_rates: '--from-prometheus',
};

/** Parses the options: the body fields and the text options, `help`, or the usage mistake. */
function optionsOf(
  args: string[],
): { body: Record<string, unknown>; texts: Partial<Record<Text, string>> } | { help: true } | { mistake: string } {
  const body: Record<string, unknown> = {};
  const texts: Partial<Record<Text, string>> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return { help: true };
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const text = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if ((TEXTS as readonly string[]).includes(name)) {
      if (text === undefined || text === '') return { mistake: `${name} needs a value` };
      texts[name as Text] = text;
      continue;
    }
    const field = NUMBERS[name as keyof typeof NUMBERS];
    if (field === undefined) return { mistake: `unknown argument ${arg}` };
    const value = Number(text);
    if (text === undefined || text === '' || !Number.isFinite(value)) return { mistake: `${name} needs a number` };
    body[field] = value;
  }
  if (body.drop === undefined) return { mistake: 'name --drop' };
  if ((texts['--from-prometheus'] === undefined) !== (texts['--monitor'] === undefined)) {
    return { mistake: '--from-prometheus and --monitor go together' };
  }
  if (texts['--monitor'] !== undefined && !monitorRule().safeParse(texts['--monitor']).success) {
    return { mistake: `--monitor ${texts['--monitor']}: 1 to 64 letters, digits, '.', '_' or '-'` };
  }
  return { body, texts };
}

/** A report file's JSON: one report, or `--json`'s array holding exactly one. */
async function reportIn(file: string): Promise<{ report: unknown } | { mistake: string }> {
  let data: unknown;
  try {
    data = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    return { mistake: `--from-report ${file}: ${(error as Error).message}` };
  }
  if (!Array.isArray(data)) return { report: data };
  if (data.length === 1) return { report: data[0] };
  return { mistake: `--from-report ${file}: holds ${data.length} reports; give a file with one (e.g. jq '.[0]')` };
}

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  const mistake = (text: string) => {
    io.stderr(`agent-test-gateway plan: ${text}\n\n${USAGE}`);
    return 2;
  };
  const options = optionsOf(args);
  if ('help' in options) {
    io.stdout(USAGE);
    return 0;
  }
  if ('mistake' in options) return mistake(options.mistake);
  const { body, texts } = options;
  if (texts['--from-report'] !== undefined) {
    const read = await reportIn(texts['--from-report']);
    if ('mistake' in read) return mistake(read.mistake);
    body.report = read.report;
  }
  if (texts['--from-prometheus'] !== undefined) {
    const read = await monitorRates(texts['--from-prometheus'], texts['--monitor']!);
    if ('problem' in read) {
      io.stderr(`agent-test-gateway plan: ${read.problem}\n`);
      return 2;
    }
    body.baseline_rates = read.rates;
  }
  let request;
  try {
    request = planRequestOf(parse(planBody, body, 'arguments'));
  } catch (error) {
    if (!isGatewayError(error)) throw error;
    // The rule names the body field; say the option that set it.
    return mistake(error.message.replace(/; nothing was (sent to the engine|planned)$/, '').replace(/^\w+/, (f) => FLAG_OF[f] ?? f));
  }
  const plan = await planComparison(request);
  io.stdout(`${planLine(request, plan)}\n`);
  return plan.max_attempts === null ? 1 : 0;
}

/** The baseline pass rate `compare`'s line assumes (it has no report to read): the docs' running example. */
const ASSUMED_BASELINE_RATE = 0.9;

/**
 * The line `compare` prints before a suite's comparison: what its budget (the suite's, under the
 * command's overrides) catches among its conversations and what it spends at its concurrency, at
 * an assumed baseline pass rate of 0.9 and 30 s a session, both said in the line (it has no
 * report to measure sessions in; the progress line then says the time left at the run's pace). Undefined when
 * the suite with the overrides breaks a rule (the gateway will say which).
 */
export async function comparePlanLine(suite: PreparedSuite, overrides: SuiteOverrides): Promise<string | undefined> {
  const parsed = parseFileSuite(withOverrides(structuredClone(suite.loaded.data), overrides));
  if (!parsed.ok) return undefined;
  const { attempts, confidence, concurrency, conversations } = parsed.suite;
  const request: BudgetRequest = {
    conversations: conversations.length,
    baselineRate: ASSUMED_BASELINE_RATE,
    mode: attempts.kind === 'repeat' ? attempts : { kind: 'sequential', min: attempts.min, max: attempts.max },
    confidence,
    concurrency,
    sessionSeconds: DEFAULT_SESSION_SECONDS,
    sessionTime: 'assumed',
  };
  return budgetLine(request, await planBudget(request));
}
