// The engine simulator (instant replies) and the platform simulator, in a process of their own,
// so that neither shares an event loop with the bench client or the gateway. Prints one JSON
// line `{"engine": url, "platform": url}` once both listen.
import { startEngineSimulator } from '../src/simulators/engine.js';
import { startPlatformSimulator } from '../src/simulators/platform.js';
import { demoWorld } from '../src/simulators/world.js';
import { exitWhenParentGoes } from './child.js';

const world = demoWorld();
// End-of-conversation work is not what is measured: keep it out of the run.
const engine = await startEngineSimulator({ world, sessionEndDelayMs: 600_000, replyDelayMs: 0 });
const platform = await startPlatformSimulator({ world });

// The simulators record every connection, frame and request for tests; a bench sends
// hundreds of thousands, so forget them regularly.
const forget = setInterval(() => {
  engine.reset();
  platform.reset();
}, 1_000);
forget.unref();

exitWhenParentGoes(async () => {
  clearInterval(forget);
  await Promise.allSettled([engine.close(), platform.close()]);
});

process.stdout.write(`${JSON.stringify({ engine: engine.url, platform: platform.url })}\n`);
