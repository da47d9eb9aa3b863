import type { ComparisonReport } from '../suites/report/comparison.js';
import { comparisonReportHtml, runReportHtml } from '../suites/report/html/render.js';
import type { RunReport } from '../suites/report/run-report.js';
import { renderComparison, renderReport } from '../suites/report/text.js';
import { FAIL, PASS } from '../suites/report/wording.js';
import { gatewayProblem, gatewayUrl, MISSING_TOKEN, tokenFrom } from './connection.js';
import { defaultIo, type Io } from './io.js';
import { cancelRun, captureRun, followRun, getRun } from './post.js';
import { cancelledExit, comparisonOutcome, exitStatus, runOutcome, writeReports, type Entry } from './run.js';

/**
 * `agent-test-gateway follow ID`, `cancel ID` and `capture ID`: a run started elsewhere (`--detach`,
 * REST, MCP, a CronJob) followed to its report from any pod, cancelled, or one of its failed
 * attempts written as a suite that replays it.
 */
export const USAGE = `usage: agent-test-gateway follow <run id> [--gateway URL] [--junit FILE] [--html FILE] [--json FILE]
       agent-test-gateway cancel <run id> [--gateway URL]
       agent-test-gateway capture <run id> --conversation NAME --attempt N [--side baseline|candidate] [--gateway URL]

  follow  prints the run's progress and report as run and compare do, writes the reports asked for,
          and exits as they would (0 passed, 1 failed or regressed, 2 could not run or was
          cancelled before it was decided, 130 Ctrl-C, which cancels the run)
  cancel  cancels the run: its running turns end with a plain close, its report says cancelled
  capture writes a failed attempt to stdout as a suite that replays its lines (the simulated user's
          too) as scripted turns with the checks that failed: > regression.yaml, then run it;
          --side picks a comparison's side (the candidate without it)

  The platform access token is read from AGENT_TEST_GATEWAY_TOKEN; the gateway from --gateway,
  AGENT_TEST_GATEWAY_URL or http://127.0.0.1:8080.
`;

const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Command = 'follow' | 'cancel' | 'capture';

interface Parsed {
  id: string;
  gateway: string;
  files: { junit?: string; html?: string; json?: string };
  capture: { conversation: string; attempt: string; side: string | undefined };
}

const OPTIONS: Record<Command, string[]> = {
  follow: ['--gateway', '--junit', '--html', '--json'],
  cancel: ['--gateway'],
  capture: ['--gateway', '--conversation', '--attempt', '--side'],
};

function parse(command: Command, args: string[], env: NodeJS.ProcessEnv): Parsed | string {
  let id: string | undefined;
  const values = new Map<string, string>();
  const known = OPTIONS[command];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) {
      if (id !== undefined) return `name one run id, not ${arg} too`;
      id = arg;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (!known.includes(name)) return `unknown option ${name}`;
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '') return `${name} needs a value`;
    values.set(name, value);
  }
  if (id === undefined || !RUN_ID.test(id)) return 'name the run id (a UUID, as run --detach printed it)';
  const gateway = gatewayUrl(values.get('--gateway'), env);
  const problem = gatewayProblem(gateway);
  if (problem !== undefined) return problem;
  const pick = (name: string) => values.get(name);
  if (command === 'capture') {
    if (!values.has('--conversation')) return 'name the conversation: --conversation NAME';
    if (!values.has('--attempt')) return 'name the attempt: --attempt N';
  }
  return {
    id: id.toLowerCase(),
    gateway,
    files: { junit: pick('--junit'), html: pick('--html'), json: pick('--json') },
    capture: { conversation: pick('--conversation') ?? '', attempt: pick('--attempt') ?? '', side: pick('--side') },
  };
}

/** The run's kind, asked of the gateway; or why it could not be asked. */
async function kindOf(gateway: string, token: string, id: string): Promise<{ kind: 'run' | 'comparison' } | { problem: string }> {
  const answer = await getRun(gateway, token, id);
  if ('failure' in answer) return { problem: answer.failure.message };
  const { kind } = answer.body;
  return kind === 'run' || kind === 'comparison' ? { kind } : { problem: 'the gateway answered a run without its kind' };
}

export async function main(command: Command, args: string[], io: Io = defaultIo()): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parse(command, args, io.env);
  if (typeof parsed === 'string') {
    io.stderr(`agent-test-gateway ${command}: ${parsed}\n\n${USAGE}`);
    return 2;
  }
  const token = tokenFrom(io.env);
  if (!token) {
    io.stderr(`agent-test-gateway ${command}: ${MISSING_TOKEN}\n`);
    return 2;
  }
  if (command === 'capture') {
    const answer = await captureRun(parsed.gateway, token, parsed.id, parsed.capture);
    if ('failure' in answer) {
      const problems = (answer.failure.problems ?? []).slice(1).map((p) => `  also: ${p.rule}\n`);
      io.stderr(`agent-test-gateway capture: ${answer.failure.message}\n${problems.join('')}`);
      return 2;
    }
    io.stdout(answer.yaml);
    return 0;
  }
  if (command === 'cancel') {
    const answer = await cancelRun(parsed.gateway, token, parsed.id);
    if ('failure' in answer) {
      io.stderr(`agent-test-gateway cancel: ${answer.failure.message}\n`);
      return 2;
    }
    io.stdout(`run ${parsed.id}: ${answer.status}\n`);
    return 0;
  }
  const known = await kindOf(parsed.gateway, token, parsed.id);
  if ('problem' in known) {
    io.stderr(`agent-test-gateway follow: ${known.problem}\n`);
    return 2;
  }
  const { kind } = known;
  const options = { junit: parsed.files.junit, html: parsed.files.html, json: parsed.files.json };
  const follow = { gateway: parsed.gateway, token, kind, io, onTurn: () => undefined, isReport: () => false } as const;
  const suite = { name: parsed.id, file: parsed.id };
  if (kind === 'run') {
    const answer = await followRun<RunReport, unknown>(parsed.id, follow);
    if ('failure' in answer) {
      io.stderr(`agent-test-gateway follow: ${answer.failure.message}\n`);
      return 2;
    }
    const { report } = answer;
    io.stdout(renderReport(report, report.name ?? parsed.id));
    const entries: Array<Entry<RunReport>> = [{ junit: { ...suite, report }, report }];
    const written = await writeReports('follow', options, io, entries, runReportHtml);
    if (answer.cancelled) return cancelledExit(io, 'run');
    const outcome = runOutcome(report);
    const ended = report.cancelled !== null ? 'was cancelled, not decided' : report.passed ? 'passed' : 'failed';
    io.stdout(`${report.passed === true ? PASS : FAIL} run ${parsed.id} ${ended}\n`);
    return exitStatus([outcome, ...(written ? [] : ['broken' as const])]);
  }
  const answer = await followRun<ComparisonReport, unknown>(parsed.id, follow);
  if ('failure' in answer) {
    io.stderr(`agent-test-gateway follow: ${answer.failure.message}\n`);
    return 2;
  }
  const { report } = answer;
  io.stdout(`${renderComparison(report, report.name ?? parsed.id)}\n`);
  const entries: Array<Entry<ComparisonReport>> = [{ junit: { ...suite, report: report.runs.candidate, comparison: report }, report }];
  const written = await writeReports('follow', options, io, entries, comparisonReportHtml);
  if (answer.cancelled) return cancelledExit(io, 'comparison');
  const outcome = comparisonOutcome(report);
  io.stdout(
    `${outcome === 'passed' ? PASS : FAIL} ${report.totals.regressed} conversation${report.totals.regressed === 1 ? '' : 's'} regressed` +
      `${report.cancelled === null ? '' : '; cancelled before it was decided'}\n`,
  );
  return exitStatus([outcome, ...(written ? [] : ['broken' as const])]);
}
