/**
 * `npm run demo`: the gateway on its embedded default — an engine and a platform simulator on
 * loopback, sharing one demo world — and a curl walk-through to copy and paste (docs/demo.md
 * has it all, with every phrase and agent of the demo world).
 */

import type { AddressInfo } from 'node:net';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { commandLine } from './cli/launcher.js';
import { ConfigError, loadConfig, type Config } from './ops/config.js';
import { startEngineSimulator } from './simulators/engine.js';
import { startModelSimulator } from './simulators/model.js';
import { startPlatformSimulator } from './simulators/platform.js';
import { demoWorld } from './simulators/world.js';

/** The demo agent's pause between sentences, so a streamed turn visibly arrives element by element. */
const SPEECH_PACE_MS = 400;
/** How long after a conversation's socket closes the demo engine aggregates it into memory (the real engine: about 30 s). */
const AGGREGATION_MS = 5_000;

function fail(message: string): never {
  process.stderr.write(`agent-test-gateway demo: ${message}\n`);
  process.exit(1);
}

const world = demoWorld();
const engine = await startEngineSimulator({ world, sessionEndDelayMs: AGGREGATION_MS, speechPaceMs: SPEECH_PACE_MS });
const platform = await startPlatformSimulator({ world });
// Simulated users and judges: the model simulator, unless MODEL_BASE_URL puts a real model in front of the simulated engine.
const realModel = Boolean(process.env.MODEL_BASE_URL);
const model = realModel ? undefined : await startModelSimulator();
const closeSimulators = () => Promise.all([engine.close(), platform.close(), model?.close()]);

let config: Config;
try {
  config = loadConfig({
    ...process.env,
    PROMETHIST_MCP_ENGINE_URL: engine.url,
    PROMETHIST_PLATFORM_URL: platform.url,
    PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: process.env.PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY ?? 'tester:s3cret',
    HOST: process.env.HOST ?? '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    SHUTDOWN_GRACE_MS: process.env.SHUTDOWN_GRACE_MS ?? '2000',
    // Memory checks read the memory this often while the demo's engine aggregates (5 s, not 30 s).
    MEMORY_POLL_MS: process.env.MEMORY_POLL_MS ?? '1000',
    ...(model ? { MODEL_BASE_URL: model.url, SIMULATOR_MODEL: 'simulated-user', JUDGE_MODEL: 'simulated-judge', MODEL_API_KEY: '' } : {}),
  });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  await closeSimulators();
  fail(err.message);
}
const app = await buildApp(config);
try {
  await app.listen({ port: config.port, host: config.host });
} catch (err) {
  await app.close();
  await closeSimulators();
  const { code } = err as { code?: string };
  const where = `port ${config.port} on ${config.host}`;
  if (code === 'EADDRINUSE') {
    fail(
      `${where} is already in use (another demo or gateway?). ` +
        `Stop it, or move the demo to another port: PORT=${config.port + 1} npm run demo`,
    );
  }
  if (code === 'EACCES') fail(`${where} needs privileges this user lacks. Pick a port above 1023: PORT=8081 npm run demo`);
  throw err;
}
closeWithGrace({ delay: config.shutdownGraceMs + 5_000 }, async () => {
  await app.conversationRegistry.drain(config.shutdownGraceMs);
  await app.close();
  await closeSimulators();
});

const { port } = app.server.address() as AddressInfo;
const host = ['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;
process.stdout.write(banner(`http://${host}:${port}`, config.debugPage));

function banner(gw: string, debugPage: boolean): string {
  const aggregationS = AGGREGATION_MS / 1000;
  const engineNote =
    `its agents speak in sentences ${SPEECH_PACE_MS} ms apart, a one-sentence reply at once; ` +
    `memory aggregated ${aggregationS} s after a close`;
  const inspector = `npx mcp-inspector --cli ${gw}/mcp --header 'Authorization: Bearer demo-token'`;
  const indented = walkThrough(gw, aggregationS, debugPage)
    .split('\n')
    .map((line) => (line === '' ? '' : `  ${line}`))
    .join('\n');
  return `
agent-test-gateway demo: gateway on ${gw}
  engine simulator   ${engine.url}  (${engineNote})
  platform simulator ${platform.url}
  model              ${
    model
      ? `${model.url}  (a deterministic stand-in for simulated users and judges; MODEL_BASE_URL=… npm run ` + `demo uses a real one)`
      : `${config.model?.baseUrl} (MODEL_BASE_URL: a real model for simulated users and judges)`
  }
  token demo-token (user u-demo, Viewer); agents: coach (Published rev 2, Preview rev 3 as coach.3), preview-only,
  draft-only (only a Draft: refused until promoted), secure (closed project, signed in with the demo test identity)
  Every phrase (planning?, sim:delay:N, sim:hang, sim:remember:…, bye) and agent: docs/demo.md

Hold a conversation (copy and paste; docs/demo.md has the same walk-through):

${indented}

AI assistants (MCP): the remote MCP server is ${gw}/mcp with the header 'Authorization: Bearer demo-token'
  ${inspector} --method tools/call --tool-name test_agent --tool-arg agent=coach

Ctrl-C stops everything. Port taken? PORT=8081 npm run demo
`;
}

/**
 * The walk-through: docs/demo.md shows it for the default port, and its first commands are the
 * README's (test/docs.test.ts holds them to that).
 */
function walkThrough(gw: string, aggregationS: number, debugPage: boolean): string {
  const turns = '$GW/v1/agents/coach/conversations/$SID/turns -H "$AUTH" -H "$JSON"';
  const snapshot = '{"confirm":true,"snapshot":{"units":[{"kind":"fact","text":"likes jazz"}]}}';
  // On a machine whose Node is older than the command needs, with the launcher in front.
  const run = `AGENT_TEST_GATEWAY_TOKEN=demo-token ${commandLine()}`;
  const debug = debugPage
    ? `open ${gw}/debug`
    : `DEBUG_PAGE=true npm run demo   # then open ${gw}/debug (off by default: it shows every caller's conversations)`;
  return `GW=${gw}; AUTH='Authorization: Bearer demo-token'; JSON='Content-Type: application/json'

# 1. start a conversation for the simulated user alice: the answer holds the agent's opening
#    (#intro) as "text"; keep its session_id (sed picks it out: no jq needed)
R=$(curl -s $GW/v1/agents/coach/conversations -H "$AUTH" -H "$JSON" -d '{"device_ref":"alice"}'); echo "$R"
SID=$(echo "$R" | sed -E 's/.*"session_id":"([^"]+)".*/\\1/'); echo $SID

# 2. more turns over the same engine socket (sim:remember:… leaves a fact in alice's memory)
curl -s ${turns} -d '{"line":"Where is my order?"}'
curl -s ${turns} -d '{"line":"sim:remember:prefers size M"}'

# 3. watch a turn arrive element by element: one JSON line per element, then {"result": …}
curl -sN ${turns} -H 'Accept: application/x-ndjson' -d '{"line":"Which size fits me?"}'

# 4. or talk from a terminal (Ctrl-D closes; it prints the command that reconnects)
${run} chat coach --gateway $GW

# 5. your conversations, then close this one (a plain close, never #exit)
curl -s $GW/v1/conversations -H "$AUTH"
curl -si -X DELETE $GW/v1/agents/coach/conversations/$SID -H "$AUTH"

# 6. alice's memory. The engine aggregates a conversation about 30 s after its socket closes
#    (this demo's engine: ${aggregationS} s), so a snapshot read at once is empty and says why: wait first.
curl -s $GW/v1/agents/coach/memory/alice -H "$AUTH"
sleep ${aggregationS + 1}; curl -s $GW/v1/agents/coach/memory/alice -H "$AUTH"
#    restore a snapshot: delete-then-write, it replaces alice's memory, for every agent
curl -s -X PUT $GW/v1/agents/coach/memory/alice -H "$AUTH" -H "$JSON" -d '${snapshot}'

# 7. test suites as CI runs them (exit 0 when every expectation passed); the second brings
#    a simulated user and a judge, played by the demo's model (docs/simulated-users.md)
${run} run examples/basic.yaml --gateway $GW
${run} run examples/simulated-user.yaml --gateway $GW

# 8. a release gate: may coach.3 replace coach? Exit 1: it regressed one conversation (and fixed
#    one), each decided with 95 % confidence after the 7 rounds it took to be sure, the third
#    stopped after 7, no verdict within reach; reports/gate.html plots both sides (docs/release-gate.md)
${run} compare examples/release-gate/coach.yaml --baseline coach --candidate coach.3 --gateway $GW --html reports/gate.html

# the debug page: every conversation on this gateway, live
${debug}

# metrics, health and the API contract
curl -s $GW/metrics | grep agent_test_gateway_turn ; curl -s $GW/readyz ; curl -s $GW/openapi.json | head -c 300`;
}
