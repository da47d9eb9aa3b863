import type { ComparisonReport, Side } from '../suites/report/comparison.js';
import { comparisonReportHtml } from '../suites/report/html/render.js';
import type { TurnEvent } from '../suites/report/run-report.js';
import { renderComparison } from '../suites/report/text.js';
import { FAIL, PASS } from '../suites/report/wording.js';
import { defaultIo, type Io } from './io.js';
import { comparePlanLine } from './plan.js';
import { postSuite } from './post.js';
import {
  cancelledExit,
  couldNotLine,
  comparisonOutcome,
  exitStatus,
  notRun,
  optionsOrExit,
  progressOf,
  startDetached,
  suitesOrExit,
  writeReports,
  type Entry,
  type Outcome,
} from './run.js';

/**
 * `agent-test-gateway compare suite.yaml [more.yaml …] --baseline REF --candidate REF [--repeat N | --max-attempts N]
 *  [--concurrency N] [--junit F] [--html F] [--json F]`
 *
 * Runs each suite against both revisions through the gateway's comparisons route (attempts
 * interleaved, one seed and fixture for both) and prints, per conversation, whether the candidate
 * regressed, fixed or left it unchanged, and what differs. Exit status: 1 something regressed; 2
 * nothing regressed but something could not run or be compared; 0 otherwise.
 */
export const USAGE = `usage: agent-test-gateway compare <suite.yaml>… --baseline REF --candidate REF [--gateway URL]
                                              [--repeat N | --max-attempts N] [--concurrency N]
                                              [--junit FILE] [--html FILE] [--json FILE] [--detach]

  Runs test suites against a baseline and a candidate revision (e.g. --baseline coach, the Published
  revision, --candidate coach.3) and says, per conversation, whether the candidate regressed. The
  comparison outlives its connection: a broken stream is followed on through the gateway, with a
  live progress line; Ctrl-C cancels it and still writes the reports.

  --baseline REF    the revision to compare with (an agent ref, or ref.N)
  --candidate REF   the revision under test; each suite's own agent is ignored
  --gateway URL     the gateway (default: $AGENT_TEST_GATEWAY_URL, else http://127.0.0.1:8080)
  --repeat N        exactly N attempts of each conversation on each side (1-20), tested at the end
  --max-attempts N  a sequential budget per side and conversation (1-200): each stops once decided
                    (default: the suites' own; else sequential, 5 to 20)
  --concurrency N   conversations at once, both sides together (1-50, default 10), over the suites'
                    own concurrency
  --junit FILE      also write JUnit XML to FILE: a testcase per conversation, a <failure> when it
                    regressed
  --html FILE       also write one self-contained HTML report to FILE, both sides next to each other
  --json FILE       also write the full comparison reports to FILE (a JSON array, one per suite)
  --detach          start each comparison and print its id, without following it

  The platform access token is read from AGENT_TEST_GATEWAY_TOKEN.
  Exit status: 0 nothing regressed; 1 a conversation regressed; 2 nothing regressed but something
  could not run or be compared (usage, suite or HTTP errors, a side that could not run) or was
  cancelled before it was decided (cancel ID, DELETE, a drain); 130 cancelled with Ctrl-C.
`;

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  const options = optionsOrExit('compare', USAGE, args, io, ['--baseline', '--candidate']);
  if (typeof options === 'number') return options;
  const { baseline, candidate } = options.agents;
  if (baseline === undefined || candidate === undefined) {
    io.stderr(`agent-test-gateway compare: name both --baseline and --candidate\n\n${USAGE}`);
    return 2;
  }
  const against = `${baseline.key} → ${candidate.key}`;
  // The suite's own agent stays in what is sent: the URL names the candidate, and the report says which agent the suite names.
  const ready = await suitesOrExit<ComparisonReport>('compare', options, io, undefined, comparisonReportHtml, against);
  if (typeof ready === 'number') return ready;

  const entries: Array<Entry<ComparisonReport>> = [];
  const reports: ComparisonReport[] = [];
  const outcomes: Outcome[] = [];
  let interrupted = false;
  const url = `${options.gateway}/v1/agents/${encodeURIComponent(candidate.key)}/comparisons`;
  for (const suite of ready.suites) {
    const onTurn = (event: TurnEvent & { side: Side }) => progressOf(io, suite, `${event.side}: `)(event);
    const body = { ...suite.body, baseline: baseline.key };
    const overrides = { repeat: options.repeat, max_attempts: options.maxAttempts, concurrency: options.concurrency };
    const plan = await comparePlanLine(suite, overrides);
    if (plan !== undefined) io.stdout(`${plan}\n`);
    if (options.detach) {
      outcomes.push(await startDetached(io, url, ready.token, suite, 'comparison', body));
      continue;
    }
    const answer = await postSuite<ComparisonReport, TurnEvent & { side: Side }>(url, body, {
      gateway: options.gateway,
      token: ready.token,
      kind: 'comparison',
      io,
      onTurn,
      isReport: (b) => typeof b.comparison_id === 'string',
    });
    if ('failure' in answer) {
      outcomes.push('broken');
      entries.push(notRun(io, suite, answer.failure, against));
      continue;
    }
    const { report } = answer;
    reports.push(report);
    io.stdout(`${renderComparison(report, `${suite.name} (${suite.file})`)}\n`);
    outcomes.push(comparisonOutcome(report));
    entries.push({ junit: { name: suite.name, file: suite.file, report: report.runs.candidate, comparison: report }, report });
    if (answer.cancelled) {
      interrupted = true;
      break;
    }
  }
  if (options.detach) return exitStatus(outcomes);

  if (!(await writeReports('compare', options, io, entries, comparisonReportHtml))) outcomes.push('broken');
  if (interrupted) return cancelledExit(io, 'comparison');
  const regressed = reports.reduce((n, r) => n + r.totals.regressed, 0);
  const bothFail = reports.reduce((n, r) => n + r.totals.fails_on_both_sides, 0);
  const cancelled = reports.filter((r) => r.cancelled !== null).length;
  const status = exitStatus(outcomes);
  if (reports.every((r) => r.totals.error === r.totals.conversations)) {
    io.stdout(couldNotLine('compare', entries, against));
    return status;
  }
  io.stdout(
    `${status === 0 ? PASS : FAIL} ${regressed} conversation${regressed === 1 ? '' : 's'} regressed in ${reports.length} of ` +
      `${ready.suites.length} suite${ready.suites.length === 1 ? '' : 's'} compared (${baseline.key} → ${candidate.key})` +
      `${bothFail > 0 ? `; ${bothFail} fail${bothFail === 1 ? 's' : ''} on both sides` : ''}` +
      `${cancelled > 0 ? `; ${cancelled} cancelled before ${cancelled === 1 ? 'it was' : 'they were'} decided` : ''}\n`,
  );
  return status;
}
