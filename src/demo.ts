import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadConfig } from './ops/config.js';
import { startEngineSimulator } from './simulators/engine.js';
import { startPlatformSimulator } from './simulators/platform.js';
import { demoWorld } from './simulators/world.js';

/**
 * `npm run demo`: the gateway on its embedded default — an engine and a platform simulator on
 * loopback, sharing one demo world — and a curl walk-through to copy and paste.
 */
const world = demoWorld();
const engine = await startEngineSimulator({ world });
const platform = await startPlatformSimulator({ world });
const config = loadConfig({
  ...process.env,
  PROMETHIST_MCP_ENGINE_URL: engine.url,
  PROMETHIST_PLATFORM_URL: platform.url,
  PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: process.env.PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY ?? 'tester:s3cret',
  HOST: process.env.HOST ?? '127.0.0.1',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  SHUTDOWN_GRACE_MS: process.env.SHUTDOWN_GRACE_MS ?? '2000',
});
const app = await buildApp(config);
closeWithGrace({ delay: config.shutdownGraceMs + 5_000 }, async () => {
  await app.conversations.drain(config.shutdownGraceMs);
  await app.close();
  await Promise.all([engine.close(), platform.close()]);
});
await app.listen({ port: config.port, host: config.host });

const gw = `http://${config.host}:${config.port}`;
const auth = `-H 'Authorization: Bearer demo-token'`;
const json = `-H 'Content-Type: application/json'`;
process.stdout.write(`
agent-test-gateway demo: gateway on ${gw}
  engine simulator   ${engine.url}
  platform simulator ${platform.url}
  token demo-token (user u-demo, Viewer); agents: coach (Published rev 2, Preview rev 3 as coach.3),
  draft-only, preview-only, secure (closed project, signed in with the demo test identity)

Hold a conversation (copy and paste):

  # 1. start: the agent's opening (#intro) for the simulated user alice; keep the session_id
  R=$(curl -s -X POST ${gw}/v1/agents/coach/conversations ${auth} ${json} -d '{"device_ref":"alice"}'); echo "$R"
  SID=$(echo "$R" | sed -E 's/.*"session_id":"([^"]+)".*/\\1/'); echo $SID

  # 2. two more turns over the same engine socket
  curl -s -X POST ${gw}/v1/agents/coach/conversations/$SID/turns ${auth} ${json} -d '{"line":"Where is my order?"}'
  curl -s -X POST ${gw}/v1/agents/coach/conversations/$SID/turns ${auth} ${json} -d '{"line":"Which size fits me?"}'

  # 3. watch a turn arrive element by element
  curl -sN -X POST ${gw}/v1/agents/coach/conversations/$SID/turns ${auth} ${json} -H 'Accept: application/x-ndjson' -d '{"line":"planning?"}'

  # 4. your conversations, then close this one (a plain close, never #exit)
  curl -s ${gw}/v1/conversations ${auth}
  curl -si -X DELETE ${gw}/v1/agents/coach/conversations/$SID ${auth}

  # 5. the simulated user's memory (the engine aggregates about 30 s after the close)
  curl -s ${gw}/v1/agents/coach/memory/alice ${auth}

  # metrics, health and the API contract
  curl -s ${gw}/metrics | grep agent_test_gateway_turn ; curl -s ${gw}/readyz ; curl -s ${gw}/openapi.json | head -c 300

AI assistants (MCP): the remote MCP server is ${gw}/mcp with the header 'Authorization: Bearer demo-token'
  npx mcp-inspector --cli ${gw}/mcp --header 'Authorization: Bearer demo-token' --method tools/call --tool-name test_agent --tool-arg agent=coach

Ctrl-C stops everything.
`);
