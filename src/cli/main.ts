#!/usr/bin/env node
/**
 * The package's command: `agent-test-gateway chat …` talks to an agent from a terminal,
 * `agent-test-gateway run …` runs test suites; both through a running gateway.
 */
const USAGE = `usage:
  agent-test-gateway chat <agent> [--gateway URL] [--device-ref REF] [--locale TAG] [--session ID]
      talk to an agent from the terminal; --session reconnects to an earlier conversation
  agent-test-gateway run <suite.yaml>… [--gateway URL] [--junit FILE]
      run test suites; exit 1 when an expectation failed
The token comes from AGENT_TEST_GATEWAY_TOKEN; the gateway from --gateway, AGENT_TEST_GATEWAY_URL
or http://127.0.0.1:8080.
`;

const [command, ...args] = process.argv.slice(2);
let code: number;
if (command === 'chat') code = await (await import('./chat.js')).main(args);
else if (command === 'run') code = await (await import('./run.js')).main(args);
else {
  process.stderr.write(USAGE);
  code = command === undefined || command === '--help' || command === '-h' ? 0 : 2;
}
process.exitCode = code;
