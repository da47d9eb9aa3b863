import { basename, extname } from 'node:path';
import { runReportHtml, type NotRunSuite } from '../suites/report/html/render.js';
import { junitXml, type JUnitSuite } from '../suites/report/junit.js';
import type { RunReport, TurnEvent } from '../suites/report/run-report.js';
import type { ComparisonReport } from '../suites/report/comparison.js';
import { renderReport, turnTitle } from '../suites/report/text.js';
import { FAIL, PASS } from '../suites/report/wording.js';
import { MISSING_TOKEN, tokenFrom } from './connection.js';
import { defaultIo, type Io } from './io.js';
import { parseSuiteOptions, UsageError, type SuiteOptions } from './options.js';
import { postSuite, runPageUrl, startAsync, type HttpFailure } from './post.js';
import { failureText, prepareSuites, problemsReport, saveSnapshot, writeOutput, type PreparedSuite } from './suite-files.js';

/**
 * `agent-test-gateway run suite.yaml [more.yaml …] [--gateway URL] [--junit F] [--html F] [--json F]
 *  [--repeat N | --max-attempts N] [--concurrency N] [--agent REF] [--monitor NAME]`
 *
 * Reads every suite first (a problem is reported at its line, and nothing runs), then posts
 * each to the gateway's runs route, prints its transcript with a ✓ or ✗ per expectation and
 * criterion, and writes the reports asked for. Exit status: 0 all passed; 1 something failed (an
 * expectation, a criterion, a conversation under its pass rate), whatever else happened; 2
 * nothing failed but something could not run (usage, suite or HTTP problems, an attempt that
 * could not go on or be judged).
 */
export const USAGE = `usage: agent-test-gateway run <suite.yaml>… [--gateway URL] [--junit FILE] [--html FILE]
                                          [--json FILE] [--repeat N | --max-attempts N]
                                          [--concurrency N] [--agent REF] [--monitor NAME] [--detach]

  Runs test suites through a running gateway and prints each turn with a ✓ or ✗ per expectation.
  A run outlives its connection: when the stream breaks (the gateway pod went away) the command
  follows the run on through the gateway; Ctrl-C cancels it and still writes the reports.

  --gateway URL     the gateway (default: $AGENT_TEST_GATEWAY_URL, else http://127.0.0.1:8080)
  --junit FILE      also write JUnit XML to FILE, for CI
  --html FILE       also write one self-contained HTML report to FILE, for people
  --json FILE       also write the full reports to FILE (a JSON array, one report per suite);
                    - writes them to standard output, after the text
  --repeat N        run each conversation N times (1-20), over the suites' own repeat
  --max-attempts N  run each conversation N times (1-200), over the suites' own: each
                    conversation's pass rate comes with its interval
  --concurrency N   conversations of a run at once (1-50, default 10), over the suites' own
                    concurrency
  --monitor NAME    feed the monitor NAME: the run's attempts go into the gateway's pass-rate
                    series (docs/monitors.md)
  --agent REF       run the suites against this agent or revision (coach, coach.3), over their
                    own agent
  --detach          start each run and print its id, without following it (agent-test-gateway
                    follow ID, cancel ID)

  The platform access token is read from AGENT_TEST_GATEWAY_TOKEN.
  Exit status: 0 everything passed; 1 something failed (an expectation, a criterion, a pass rate);
  2 nothing failed but something could not run (usage, suite or HTTP errors, a model failure) or
  was cancelled before it was decided (cancel ID, DELETE, a drain); 130 cancelled with Ctrl-C.
`;

/** A suite's outcome for the exit status: a failure counts over a conversation that could not run. */
export type Outcome = 'passed' | 'failed' | 'broken';

/**
 * A run report's outcome: failed when a conversation failed (one decided before a cancel too), else
 * broken when one could not run or the run was cancelled before it was decided, else passed.
 */
export const runOutcome = (report: RunReport): Outcome =>
  report.passed === true
    ? 'passed'
    : report.conversations.some((c) => !c.passed && c.status !== 'error' && c.status !== 'cancelled')
      ? 'failed'
      : 'broken';

/**
 * A comparison report's outcome: failed when something regressed (also before a cancel: the
 * regression was found), else broken when something could not be compared or the comparison was
 * cancelled before it was decided, else passed.
 */
export const comparisonOutcome = (report: ComparisonReport): Outcome =>
  report.totals.regressed > 0 || report.suite?.verdict === 'regressed'
    ? 'failed'
    : report.cancelled !== null || report.totals.error > 0
      ? 'broken'
      : 'passed';

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

/** One suite's entry in the reports: its report, or why it could not run. */
export type Entry<R> = { junit: JUnitSuite; report: R } | { junit: JUnitSuite; notRun: NotRunSuite };

/**
 * Writes every report asked for (--junit, --json, --html), a suite that could not run included (a
 * JUnit <error>, its error in the JSON, a red section in the HTML), and names each file written on
 * stderr; false when one could not be written.
 */
export async function writeReports<R>(
  command: string,
  options: Pick<SuiteOptions, 'junit' | 'json' | 'html'>,
  io: Io,
  entries: Array<Entry<R>>,
  htmlOf: (...reports: Array<R | NotRunSuite>) => string,
): Promise<boolean> {
  const reports = entries.map((e) => ('report' in e ? e.report : e.notRun));
  const written = [
    options.junit === undefined || (await writeOutput(command, options.junit, junitXml(entries.map((e) => e.junit)), io)),
    options.json === undefined || (await writeOutput(command, options.json, `${JSON.stringify(reports, null, 2)}\n`, io)),
    options.html === undefined || (await writeOutput(command, options.html, htmlOf(...reports), io)),
  ];
  return !written.includes(false);
}

/** A suite that did not run, as each report shows it. */
export const notRunEntry = <R>(
  suite: { name: string; file: string },
  error: NotRunSuite['error'],
  against: string | undefined,
): Entry<R> => ({
  junit: { name: suite.name, file: suite.file, error },
  notRun: { name: suite.name, file: suite.file, error, ...(against === undefined ? {} : { against }) },
});

/** The last line when no suite ran: what could not run and why, never a ✓. */
export function couldNotLine(verb: 'run' | 'compare', entries: Array<Entry<unknown>>, against: string | undefined): string {
  const codes = [...new Set(entries.flatMap((e) => ('notRun' in e ? [e.notRun.error.error] : [])))];
  // not_run (stopped by another suite's problem) says least: last.
  codes.sort((a, b) => Number(a === 'not_run') - Number(b === 'not_run'));
  const why = codes.length > 0 ? codes.join(', ') : 'no conversation could run';
  const what = entries.length === 1 ? 'the suite' : `any of ${entries.length} suites`;
  return `${FAIL} could not ${verb} ${what}${against === undefined ? '' : ` (${against})`}: ${why}\n`;
}

/**
 * Every report asked for, each suite file as not run for the reason `errorOf` gives (CI's report
 * step then finds its files, and no report looks green), and the last line saying so: exit 2.
 */
export async function writeNotRun<R>(
  command: 'run' | 'compare',
  options: SuiteOptions,
  io: Io,
  htmlOf: (...reports: Array<R | NotRunSuite>) => string,
  against: string | undefined,
  errorOf: (file: string) => { error: string; message: string },
): Promise<number> {
  const entries = options.files.map((file) => notRunEntry<R>({ name: basename(file, extname(file)), file }, errorOf(file), against));
  await writeReports(command, options, io, entries, htmlOf);
  io.stdout(couldNotLine(command, entries, against));
  return 2;
}

/**
 * The token and every suite, read before anything runs; when either is missing or wrong, says so
 * and still writes every report asked for, each file as not run.
 */
export async function suitesOrExit<R>(
  command: 'run' | 'compare',
  options: SuiteOptions,
  io: Io,
  agent: SuiteOptions['agents'][string],
  htmlOf: (...reports: Array<R | NotRunSuite>) => string,
  against: string | undefined,
): Promise<{ token: string; suites: PreparedSuite[] } | number> {
  const notRun = (errorOf: (file: string) => { error: string; message: string }): Promise<number> =>
    writeNotRun(command, options, io, htmlOf, against, errorOf);
  const token = tokenFrom(io.env);
  if (!token) {
    io.stderr(`agent-test-gateway ${command}: ${MISSING_TOKEN}\n`);
    return notRun(() => ({ error: 'no_token', message: `Not run: ${MISSING_TOKEN}.` }));
  }
  const { suites, problems } = await prepareSuites(options.files, {
    repeat: options.repeat,
    maxAttempts: options.maxAttempts,
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

/** Exit status after Ctrl-C: the run was cancelled, its reports (marked cancelled) written. */
export function cancelledExit(io: Io, verb: 'run' | 'comparison'): number {
  io.stdout(`${FAIL} cancelled: the ${verb} was cancelled (Ctrl-C); the reports asked for hold what it completed\n`);
  return 130;
}

/** `--detach`: starts the run, prints its id and how to follow it; the outcome only says whether it started. */
export async function startDetached(
  io: Io,
  url: string,
  token: string,
  suite: PreparedSuite,
  kind: 'run' | 'comparison',
  body: unknown = suite.body,
): Promise<Outcome> {
  const started = await startAsync(url, token, body);
  if ('failure' in started) {
    io.stderr(failureText(suite, started.failure));
    return 'broken';
  }
  io.stdout(
    `${started.id}\t${kind} of ${suite.name} (${suite.file}): agent-test-gateway follow ${started.id}` +
      ` · ${runPageUrl(url.slice(0, url.indexOf('/v1/agents/')), started.id)}\n`,
  );
  return 'passed';
}

/** A suite the gateway did not run: why, on stderr, and its entry in the reports. */
export function notRun<R>(io: Io, suite: PreparedSuite, failure: HttpFailure, against: string): Entry<R> {
  io.stderr(failureText(suite, failure));
  return notRunEntry(suite, { error: failure.error, message: failure.message }, against);
}

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  const options = optionsOrExit('run', USAGE, args, io, ['--agent']);
  if (typeof options === 'number') return options;
  const against = options.agents.agent?.key;
  const ready = await suitesOrExit<RunReport>('run', options, io, options.agents.agent, runReportHtml, against);
  if (typeof ready === 'number') return ready;

  const entries: Array<Entry<RunReport>> = [];
  const reports: RunReport[] = [];
  const outcomes: Outcome[] = [];
  let interrupted = false;
  for (const suite of ready.suites) {
    const url = `${options.gateway}/v1/agents/${encodeURIComponent(suite.loaded.suite.agent!.key)}/runs`;
    if (options.detach) {
      outcomes.push(await startDetached(io, url, ready.token, suite, 'run'));
      continue;
    }
    const answer = await postSuite<RunReport, TurnEvent>(url, suite.body, {
      gateway: options.gateway,
      token: ready.token,
      kind: 'run',
      io,
      onTurn: progressOf(io, suite),
      isReport: (b) => typeof b.run_id === 'string',
    });
    if ('failure' in answer) {
      outcomes.push('broken');
      entries.push(notRun(io, suite, answer.failure, suite.loaded.suite.agent!.key));
      continue;
    }
    const { report } = answer;
    reports.push(report);
    io.stdout(renderReport(report, `${suite.name} (${suite.file})`));
    if (report.monitor !== null) io.stdout(monitorLine(report.monitor));
    // A conversation that failed counts over one that could not run (status error).
    outcomes.push(runOutcome(report));
    entries.push({ junit: { name: suite.name, file: suite.file, report }, report });
    if (!(await saveSnapshot(suite, report.memory?.snapshot, report.memory?.error?.message, io))) outcomes.push('broken');
    io.stdout('\n');
    if (answer.cancelled) {
      interrupted = true;
      break;
    }
  }
  if (options.detach) return exitStatus(outcomes);

  if (!(await writeReports('run', options, io, entries, runReportHtml))) outcomes.push('broken');
  if (interrupted) return cancelledExit(io, 'run');
  const ran = reports.length;
  const total = ready.suites.length;
  const passedCount = reports.filter((r) => r.passed).length;
  const status = exitStatus(outcomes);
  if (reports.every((r) => r.conversations.every((c) => c.status === 'error'))) {
    io.stdout(couldNotLine('run', entries, against));
    return status;
  }
  io.stdout(
    `${status === 0 ? PASS : FAIL} ${passedCount} of ${total} suite${total === 1 ? '' : 's'} passed${
      ran < total ? ` (${total - ran} could not run)` : ''
    }\n`,
  );
  return status;
}
