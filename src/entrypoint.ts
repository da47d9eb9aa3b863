/**
 * The container image's command: without arguments (or with `serve`) it runs the gateway;
 * otherwise it is the `agent-test-gateway` command (`run`, `chat`, `--help`), so one image both
 * serves and runs suites in CI: `docker run IMAGE run /suites/*.yaml --gateway URL`.
 * It imports nothing statically: cli/main.js checks the Node.js version before it loads anything.
 */
if (process.argv.length <= 2) process.argv.push('serve');
await import('./cli/main.js');
