import type { AgentRef } from '../domain/vocabulary.js';
import { agentSchema } from '../schemas/requests.js';
import { monitorRule } from '../suites/spec/request.js';
import { attemptsRule, concurrencyRule, repeatRule } from '../suites/spec/schema.js';
import { gatewayProblem, gatewayUrl } from './connection.js';

/** A command-line mistake: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}

/** The options `run` and `compare` share, and the agent refs each names. */
export interface SuiteOptions {
  files: string[];
  gateway: string;
  junit: string | undefined;
  html: string | undefined;
  json: string | undefined;
  /** `--repeat N`: attempts of each conversation, over the suites' own `repeat` */
  repeat: number | undefined;
  /** `--max-attempts N`: a sequential budget per side and conversation, over the suites' own */
  maxAttempts: number | undefined;
  /** `--monitor NAME`: the monitor a run feeds (its pass-rate series) */
  monitor: string | undefined;
  /** `--concurrency N`: the run's conversations at once, over the suites' own `concurrency` */
  concurrency: number | undefined;
  /** `--agent`, `--baseline`, `--candidate`: as the command lists them */
  agents: Record<string, AgentRef | undefined>;
  /** `--detach`: start each run, print its id, do not follow it */
  detach: boolean;
}

const FILE_OPTIONS = ['--junit', '--html', '--json'] as const;

/** An agent ref option's value, or the rule it breaks in the option's words. */
function agentOption(name: string, value: string): AgentRef {
  const parsed = agentSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`${name} ${parsed.error.issues[0]!.message.replace(/^agent /, '')}`);
  return parsed.data;
}

/**
 * Parses `<suite.yaml>… [--gateway URL] [--junit F] [--html F] [--json F] [--repeat N] [--concurrency N]` and the
 * command's own agent options (`agentOptions`, e.g. `--agent`); `--` ends the options.
 */
export function parseSuiteOptions(args: string[], env: NodeJS.ProcessEnv, agentOptions: readonly string[]): SuiteOptions | 'help' {
  const known = ['--gateway', '--repeat', '--max-attempts', '--concurrency', '--monitor', ...FILE_OPTIONS, ...agentOptions];
  const files: string[] = [];
  const values = new Map<string, string>();
  let onlyFiles = false;
  let detach = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (onlyFiles || !arg.startsWith('-') || arg === '-') {
      files.push(arg);
      continue;
    }
    if (arg === '--') {
      onlyFiles = true;
      continue;
    }
    if (arg === '-h' || arg === '--help') return 'help';
    if (arg === '--detach') {
      detach = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (!known.includes(name)) throw new UsageError(`unknown option ${name}`);
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '' || (eq < 0 && value.startsWith('--'))) throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  if (files.length === 0) throw new UsageError('name at least one suite file');
  const gateway = gatewayUrl(values.get('--gateway'), env);
  const problem = gatewayProblem(gateway);
  if (problem !== undefined) throw new UsageError(problem);
  if (values.has('--repeat') && values.has('--max-attempts')) {
    throw new UsageError('--repeat and --max-attempts exclude each other: exactly N attempts, or sequential up to N');
  }
  const repeat = numberOption(values, '--repeat', repeatRule('--repeat '));
  const maxAttempts = numberOption(values, '--max-attempts', attemptsRule('--max-attempts '));
  const concurrency = numberOption(values, '--concurrency', concurrencyRule('--concurrency '));
  let monitor: string | undefined;
  if (values.has('--monitor')) {
    const parsed = monitorRule('--monitor ').safeParse(values.get('--monitor'));
    if (!parsed.success) throw new UsageError(parsed.error.issues[0]!.message);
    monitor = parsed.data;
  }
  const agents = Object.fromEntries(
    agentOptions.map((name) => {
      const value = values.get(name);
      return [name.slice(2), value === undefined ? undefined : agentOption(name, value)];
    }),
  );
  return {
    files,
    gateway,
    junit: values.get('--junit'),
    html: values.get('--html'),
    json: values.get('--json'),
    repeat,
    maxAttempts,
    concurrency,
    monitor,
    agents,
    detach,
  };
}

/** A whole-number option's value under its rule, or undefined when not given. */
function numberOption(values: Map<string, string>, name: string, rule: ReturnType<typeof repeatRule>): number | undefined {
  if (!values.has(name)) return undefined;
  const parsed = rule.safeParse(Number(values.get(name)));
  if (!parsed.success) throw new UsageError(parsed.error.issues[0]!.message);
  return parsed.data;
}
