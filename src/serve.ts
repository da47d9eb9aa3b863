import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './ops/config.js';
import { drainBoundMs } from './runs/registry.js';

/**
 * Runs the service from the environment. On SIGTERM/SIGINT readiness turns false at once,
 * running turns get SHUTDOWN_GRACE_MS, then every engine socket closes plainly and it exits 0.
 */
async function runServer(config: Config): Promise<void> {
  const app = await buildApp(config);
  // The hard stop (exit 1) comes 10 s after the longest a drain takes, never in the middle of one.
  closeWithGrace({ delay: drainBoundMs(config.shutdownGraceMs) + 10_000, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'stopping after an unexpected error');
    app.log.info(
      { signal, grace_ms: config.shutdownGraceMs, ...app.conversationRegistry.stats, runs: app.runs.running.length },
      'draining',
    );
    const deadline = Date.now() + config.shutdownGraceMs;
    // Runs first: they stop starting attempts and move to a sibling before the conversations drain.
    await Promise.all([app.runs.drain(deadline), app.conversationRegistry.drain(config.shutdownGraceMs)]);
    await app.close();
    app.log.info('stopped');
  });
  await app.listen({ port: config.port, host: config.host });
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`agent-test-gateway: ${err.message}\n`);
    process.exit(1);
  }
}

/** `npm start` (dist/server.js), `agent-test-gateway serve` and the image: the service as the environment configures it. */
export const serveFromEnvironment = (): Promise<void> => runServer(configOrExit());
