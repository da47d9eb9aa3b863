import { planComparison, type ComparisonPlan, type PlanRequest } from '../stats/plan.js';
import { defaultIo, type Io } from './io.js';

/**
 * `agent-test-gateway plan --conversations K --baseline-rate P --drop D [--confidence C]
 *  [--min-attempts N] [--concurrency N] [--session-seconds S]`
 *
 * Before a comparison: the `max_attempts` that catches a drop of D from a baseline pass rate P
 * 80 % of the time with K conversations, the sessions it spends and how long it takes. Computed
 * here (src/stats), no gateway needed.
 */
export const USAGE = `usage: agent-test-gateway plan --conversations K --baseline-rate P --drop D [--confidence C]
                           [--min-attempts N] [--concurrency N] [--session-seconds S]

  Says, before a comparison, the max_attempts that catches a drop of D (e.g. 0.2) from the baseline's
  pass rate P (e.g. 0.9) 80 % of the time among K conversations, the engine sessions it spends
  (expected when nothing changed, at most) and the wall time at the given concurrency (default 10)
  and session length (default 30 s). --confidence defaults to 0.95, --min-attempts to 5.
  Exit status: 0 a budget up to 200 catches the drop; 1 none does; 2 usage errors.
`;

const OPTIONS = {
  '--conversations': 'conversations',
  '--baseline-rate': 'baselineRate',
  '--drop': 'drop',
  '--confidence': 'confidence',
  '--min-attempts': 'minAttempts',
  '--concurrency': 'concurrency',
  '--session-seconds': 'sessionSeconds',
} as const;

/** Parses the options: the request, `help`, or the usage mistake. */
function requestOf(args: string[]): PlanRequest | { help: true } | { mistake: string } {
  const values: Record<string, number> = { concurrency: 10, sessionSeconds: 30 };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return { help: true };
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const key = OPTIONS[name as keyof typeof OPTIONS];
    if (key === undefined) return { mistake: `unknown argument ${arg}` };
    const text = eq < 0 ? args[++i] : arg.slice(eq + 1);
    const value = Number(text);
    if (text === undefined || text === '' || !Number.isFinite(value)) return { mistake: `${name} needs a number` };
    values[key] = value;
  }
  for (const name of ['--conversations', '--baseline-rate', '--drop'] as const) {
    if (values[OPTIONS[name]] === undefined) return { mistake: `name ${name}` };
  }
  return values as unknown as PlanRequest;
}

/** Minutes (or hours and minutes) for a person: "48 min", "1 h 47 min". */
function duration(seconds: number): string {
  const minutes = Math.max(1, Math.round(seconds / 60));
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** The plan in one line, as `plan` and `compare` print it. */
export function planLine(request: PlanRequest, plan: ComparisonPlan): string {
  const { baselineRate: rate, drop } = request;
  const target = `${rate} → ${Number((rate - drop).toFixed(4))}`;
  const among = `${request.conversations} conversation${request.conversations === 1 ? '' : 's'}`;
  if (plan.max_attempts === null) return `plan: no max_attempts up to 200 catches ${target} 80 % of the time among ${among}`;
  const sessions = `sessions: about ${Math.round(plan.sessions.unchanged)} if nothing changed, at most ${plan.sessions.at_most}`;
  const time =
    `wall time at concurrency ${request.concurrency} and ${request.sessionSeconds} s a session: ` +
    `about ${duration(plan.seconds.unchanged)}, at most ${duration(plan.seconds.at_most)}`;
  return `plan: max_attempts: ${plan.max_attempts} catches ${target} 80 % of the time among ${among} · ${sessions} · ${time}`;
}

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  const request = requestOf(args);
  if ('help' in request) {
    io.stdout(USAGE);
    return 0;
  }
  if ('mistake' in request) {
    io.stderr(`agent-test-gateway plan: ${request.mistake}\n\n${USAGE}`);
    return 2;
  }
  let plan: ComparisonPlan;
  try {
    plan = planComparison(request);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    io.stderr(`agent-test-gateway plan: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  io.stdout(`${planLine(request, plan)}\n`);
  return plan.max_attempts === null ? 1 : 0;
}
