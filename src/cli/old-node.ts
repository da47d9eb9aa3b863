import { comparisonReportHtml, runReportHtml } from '../suites/report/html/render.js';
import { defaultIo, type Io } from './io.js';
import { optionsOrExit, writeNotRun } from './run.js';

/** The error code of a suite not run because the command's Node is too old. */
const NODE_TOO_OLD = 'node_too_old';

/**
 * `run` or `compare` started by a Node older than the command needs (src/cli/main.ts): nothing is
 * read or sent, but every report asked for is written, each suite as not run with `problem` (which
 * says what to do) — a JUnit <error>, the HTML "could not run" page, the JSON error — and the last
 * line says so. Loaded only on such a Node: this module's imports load on Node 20 (no `fs.glob`
 * by name, src/cli/globs.ts).
 */
export async function writeReportsNotRun(command: 'run' | 'compare', args: string[], problem: string, io: Io = defaultIo()): Promise<void> {
  const agentOptions = command === 'run' ? ['--agent'] : ['--baseline', '--candidate'];
  const options = optionsOrExit(command, '', args, { ...io, stdout: () => undefined }, agentOptions);
  if (typeof options === 'number') return;
  const { agent, baseline, candidate } = options.agents;
  const against = command === 'run' ? agent?.key : baseline && candidate ? `${baseline.key} → ${candidate.key}` : undefined;
  const error = { error: NODE_TOO_OLD, message: `Not run: ${problem}` };
  if (command === 'run') await writeNotRun(command, options, io, runReportHtml, against, () => error);
  else await writeNotRun(command, options, io, comparisonReportHtml, against, () => error);
}
