import { basename, extname } from 'node:path';
import { runReportHtml } from '../suites/report/html/render.js';
import { junitXml, type JUnitSuite } from '../suites/report/junit.js';
import type { RunReport, TurnEvent } from '../suites/report/run-report.js';
import { renderReport, turnTitle } from '../suites/report/text.js';
import { FAIL, PASS } from '../suites/report/wording.js';
import { MISSING_TOKEN, tokenFrom } from './connection.js';
import { defaultIo, type Io } from './io.js';
import { parseSuiteOptions, UsageError, type SuiteOptions } from './options.js';
import { postSuite, type HttpFailure } from './post.js';
import { failureText, prepareSuites, problemsReport, saveSnapshot, writeOutput, type PreparedSuite } from './suite-files.js';

/**
 * `agent-test-gateway run suite.yaml [more.yaml …] [--gateway URL] [--junit F] [--html F] [--json F] [--repeat N]
 *  [--concurrency N] [--agent REF]`
 *
 * Reads every suite first (a problem is reported at its line, and nothing runs), then posts
 * each to the gateway's runs route, prints its transcript with a ✓ or ✗ per expectation and
 * criterion, and writes the reports asked for. Exit status: 0 all passed; 1 something failed (an
 * expectation, a criterion, a conversation under its pass rate), whatever else happened; 2
 * nothing failed but something could not run (usage, suite or HTTP problems, an attempt that
 * could not go on or be judged).
 */
export const USAGE = `usage: agent-test-gateway run <suite.yaml>… [--gateway URL] [--junit FILE] [--html FILE] [--json FILE]
                                          [--repeat N] [--concurrency N] [--agent REF]

  Runs test suites through a running gateway and prints each turn with a ✓ or ✗ per expectation.

  --gateway URL   the gateway (default: $AGENT_TEST_GATEWAY_URL, else http://127.0.0.1:8080)
  --junit FILE    also write JUnit XML to FILE, for CI
  --html FILE     also write one self-contained HTML report to FILE, for people
  --json FILE     also write the full reports to FILE (a JSON array, one report per suite)
  --repeat N      run each conversation N times (1-20), over the suites' own repeat
  --concurrency N conversations of a run at once (1-50, default 10), over the suites' own concurrency
  --monitor NAME  feed the monitor NAME: the run's attempts go into the gateway's pass-rate series (docs/monitors.md)
  --agent REF     run the suites against this agent or revision (coach, coach.3), over their own agent

  The platform access token is read from AGENT_TEST_GATEWAY_TOKEN.
  Exit status: 0 everything passed; 1 something failed (an expectation, a criterion, a pass rate);
  2 nothing failed but something could not run (usage, suite or HTTP errors, a model failure).
`;

/** A suite's outcome for the exit status: a failure counts over a conversation that could not run. */
export type Outcome = 'passed' | 'failed' | 'broken';

/** The exit status of a command over its suites' outcomes. */
export const exitStatus = (outcomes: Outcome[]): number => (outcomes.includes('failed') ? 1 : outcomes.includes('broken') ? 2 : 0);

/** Prints each evaluated turn while a suite runs, when stderr is a terminal. */
export const progressOf =
  (io: Io, suite: PreparedSuite, prefix = '') =>
  (event: TurnEvent): void => {
    if (!io.progress) return;
    const mark = event.turn.status === 'passed' ? PASS : event.turn.status === 'failed' ? FAIL : '-';
    io.stderr(`  ${mark} ${suite.name}: ${prefix}${turnTitle(event.conversation, event.turn)}\n`);
  };

/** What a monitored run recorded: what a CronJob's log shows beside the report. */
const monitorLine = (m: { name: string; recorded: number; dropped: number }): string =>
  `monitor ${m.name}: recorded ${m.recorded} attempt${m.recorded === 1 ? '' : 's'} in its pass-rate series` +
  `${m.dropped > 0 ? `, ${m.dropped} dropped (MAX_MONITOR_SERIES reached on the pod)` : ''}\n`;

/** Parses the options, or answers the usage: the options, or the exit status. */
export function optionsOrExit(command: string, usage: string, args: string[], io: Io, agentOptions: string[]): SuiteOptions | number {
  try {
    const options = parseSuiteOptions(args, io.env, agentOptions);
    if (options !== 'help' && options.monitor !== undefined && command !== 'run') {
      throw new UsageError('--monitor goes with run: a comparison feeds no monitor');
    }
    if (options !== 'help') return options;
    io.stdout(usage);
    return 0;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`agent-test-gateway ${command}: ${err.message}\n\n${usage}`);
    return 2;
  }
}

/**
 * The token and every suite, read before anything runs; when either is missing or wrong, says so
 * and leaves a JUnit <error> behind for each file (CI's report step then finds its file).
 */
export async function suitesOrExit(
  command: string,
  options: SuiteOptions,
  io: Io,
  agent: SuiteOptions['agents'][string],
): Promise<{ token: string; suites: PreparedSuite[] } | number> {
  const notRun = async (errorOf: (file: string) => { error: string; message: string }): Promise<number> => {
    if (options.junit !== undefined) {
      const suites = options.files.map((file) => ({ name: basename(file, extname(file)), file, error: errorOf(file) }));
      await writeOutput(command, options.junit, junitXml(suites), io);
    }
    return 2;
  };
  const token = tokenFrom(io.env);
  if (!token) {
    io.stderr(`agent-test-gateway ${command}: ${MISSING_TOKEN}\n`);
    return notRun(() => ({ error: 'no_token', message: `Not run: ${MISSING_TOKEN}.` }));
  }
  const { suites, problems } = await prepareSuites(options.files, {
    repeat: options.repeat,
    concurrency: options.concurrency,
    monitor: options.monitor,
    agent,
  });
  if (problems.length > 0) {
    const report = problemsReport(problems);
    io.stderr(report.text);
    return notRun(report.errorOf);
  }
  return { token, suites };
}

/** A suite the gateway did not run: why, on stderr, and its JUnit <error>. */
export function notRun(io: Io, suite: PreparedSuite, failure: HttpFailure): JUnitSuite {
  io.stderr(failureText(suite, failure));
  return { name: suite.name, file: suite.file, error: { error: failure.error, message: failure.message } };
}

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  const options = optionsOrExit('run', USAGE, args, io, ['--agent']);
  if (typeof options === 'number') return options;
  const ready = await suitesOrExit('run', options, io, options.agents.agent);
  if (typeof ready === 'number') return ready;

  const junit: JUnitSuite[] = [];
  const reports: RunReport[] = [];
  const outcomes: Outcome[] = [];
  for (const suite of ready.suites) {
    const url = `${options.gateway}/v1/agents/${encodeURIComponent(suite.loaded.suite.agent!.key)}/runs`;
    const answer = await postSuite<RunReport, TurnEvent>(
      url,
      ready.token,
      suite.body,
      progressOf(io, suite),
      (b) => typeof b.run_id === 'string',
    );
    if ('failure' in answer) {
      outcomes.push('broken');
      junit.push(notRun(io, suite, answer.failure));
      continue;
    }
    const { report } = answer;
    reports.push(report);
    io.stdout(renderReport(report, `${suite.name} (${suite.file})`));
    if (report.monitor !== null) io.stdout(monitorLine(report.monitor));
    // A conversation that failed counts over one that could not run (status error).
    outcomes.push(report.passed ? 'passed' : report.conversations.some((c) => !c.passed && c.status !== 'error') ? 'failed' : 'broken');
    junit.push({ name: suite.name, file: suite.file, report });
    if (!(await saveSnapshot(suite, report.memory?.snapshot, report.memory?.error?.message, io))) outcomes.push('broken');
    io.stdout('\n');
  }

  const written = [
    options.junit === undefined || (await writeOutput('run', options.junit, junitXml(junit), io)),
    options.json === undefined || (await writeOutput('run', options.json, `${JSON.stringify(reports, null, 2)}\n`, io)),
    options.html === undefined || (await writeOutput('run', options.html, runReportHtml(...reports), io)),
  ];
  if (written.includes(false)) outcomes.push('broken');
  const ran = reports.length;
  const total = ready.suites.length;
  const passedCount = reports.filter((r) => r.passed).length;
  const status = exitStatus(outcomes);
  io.stdout(
    `${status === 0 ? PASS : FAIL} ${passedCount} of ${total} suite${total === 1 ? '' : 's'} passed${
      ran < total ? ` (${total - ran} could not run)` : ''
    }\n`,
  );
  return status;
}
