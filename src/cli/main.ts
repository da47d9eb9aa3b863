#!/usr/bin/env node
/**
 * The package's command: `agent-test-gateway chat …` talks to an agent from a terminal,
 * `agent-test-gateway run …` runs test suites and `agent-test-gateway compare …` compares two
 * revisions with them; all through a running gateway.
 * `agent-test-gateway serve` runs the gateway itself, configured from the environment.
 * The Node.js check comes first (Node 22 for the command, 24 for `serve`); the commands are imported
 * only after it (src/node-version.ts).
 */
import { CLI_NODE_MAJOR_NEEDED, NODE_MAJOR_NEEDED, nodeProblem, requireNode } from '../node-version.js';

/**
 * On a Node older than the command needs: the line saying so and what to do, and for `run` and
 * `compare` every report asked for (--junit, --html, --json) as not run, so that CI's report step
 * finds them; where even those writers do not load, the line alone. Exit 2.
 */
async function refuseOldNode(command: string | undefined, args: string[], problem: string): Promise<number> {
  process.stderr.write(`${problem}\n`);
  if (command !== 'run' && command !== 'compare') return 2;
  try {
    await (await import('./old-node.js')).writeReportsNotRun(command, args, problem);
  } catch {
    // A Node too old to load the report writers: the line above is all it can say.
  }
  return 2;
}

const USAGE = `usage:
  agent-test-gateway chat <agent> [--gateway URL] [--device-ref REF] [--locale TAG] [--session ID]
      talk to an agent from the terminal; --session reconnects to an earlier conversation
  agent-test-gateway run <suite.yaml>… [--gateway URL] [--junit FILE] [--html FILE] [--json FILE]
          [--repeat N | --max-attempts N] [--concurrency N] [--agent REF] [--monitor NAME] [--detach]
      run test suites; exit 1 when something failed, 2 when nothing failed but something could not run
  agent-test-gateway compare <suite.yaml>… --baseline REF --candidate REF [--repeat N | --max-attempts N]
          [--concurrency N] [--junit FILE] [--html FILE] [--json FILE] [--detach]
      run test suites against two revisions; exit 1 when the candidate regressed
  agent-test-gateway follow <run id> [--gateway URL] [--junit FILE] [--html FILE] [--json FILE]
      follow a run or comparison (started with --detach, REST or MCP) to its report, from any pod
  agent-test-gateway cancel <run id> [--gateway URL]
      cancel a run or comparison
  agent-test-gateway capture <run id> --conversation NAME --attempt N [--side SIDE] [--gateway URL] > regression.yaml
      turn a failed attempt into a suite that replays it, runnable with run
  agent-test-gateway judge-check FILE [--gateway URL] [--json] [--min-agreement F] [--votes N] [--seed N]
      check the gateway's judge against a person's labels (a labelled run report, or a YAML of items);
      exit 1 when a criterion agrees less than --min-agreement
  agent-test-gateway plan --conversations K --baseline-rate P --drop D [--confidence C] [--min-attempts N]
          [--concurrency N] [--session-seconds S]
      the max_attempts that catches a drop 80 % of the time, the sessions it spends and how long it takes
  agent-test-gateway attacks init --agent REF
      write a starter red-team suite (adversarial users) to stdout, to edit and run
  agent-test-gateway serve
      run the gateway (PROMETHIST_MCP_ENGINE_URL, PROMETHIST_PLATFORM_URL, … from the environment)
The token comes from AGENT_TEST_GATEWAY_TOKEN; the gateway from --gateway, AGENT_TEST_GATEWAY_URL
or http://127.0.0.1:8080.
`;

const [command, ...args] = process.argv.slice(2);
const tooOld = nodeProblem(CLI_NODE_MAJOR_NEEDED);
let code: number | undefined;
if (tooOld !== undefined) code = await refuseOldNode(command, args, tooOld);
else if (command === 'chat') code = await (await import('./chat.js')).main(args);
else if (command === 'run') code = await (await import('./run.js')).main(args);
else if (command === 'compare') code = await (await import('./compare.js')).main(args);
else if (command === 'follow' || command === 'cancel' || command === 'capture')
  code = await (await import('./runs.js')).main(command, args);
else if (command === 'judge-check') code = await (await import('./judge-check.js')).main(args);
else if (command === 'plan') code = await (await import('./plan.js')).main(args);
else if (command === 'attacks') code = await (await import('./attacks.js')).main(args);
else if (command === 'serve' && args.length === 0) {
  requireNode(NODE_MAJOR_NEEDED, 'agent-test-gateway serve (the gateway)');
  await (await import('../serve.js')).serveFromEnvironment();
} else {
  // Help asked for goes to stdout; help after a wrong command goes to stderr with status 2.
  const asked = command === undefined || command === 'help' || command === '--help' || command === '-h';
  (asked ? process.stdout : process.stderr).write(USAGE);
  code = asked ? 0 : 2;
}
// `serve` keeps running until a signal; its shutdown sets the exit code itself.
if (code !== undefined) process.exitCode = code;
