/** Where both commands find the gateway and the caller's token. */

/** The demo's address: the gateway when neither `--gateway` nor $AGENT_TEST_GATEWAY_URL names one. */
const DEFAULT_GATEWAY = 'http://127.0.0.1:8080';

/** `--gateway`, else $AGENT_TEST_GATEWAY_URL, else the demo's address; no trailing slash. */
export const gatewayUrl = (flag: string | undefined, env: NodeJS.ProcessEnv): string =>
  (flag || env.AGENT_TEST_GATEWAY_URL || DEFAULT_GATEWAY).replace(/\/+$/, '');

/** What is wrong with a gateway URL, if anything. */
export const gatewayProblem = (url: string): string | undefined =>
  /^https?:\/\/[^/\s]+/i.test(url) && URL.canParse(url) ? undefined : `--gateway must be an http:// or https:// URL, not ${url}`;

/** The platform access token from AGENT_TEST_GATEWAY_TOKEN, if set. */
export const tokenFrom = (env: NodeJS.ProcessEnv): string | undefined => env.AGENT_TEST_GATEWAY_TOKEN?.trim() || undefined;

export const MISSING_TOKEN = 'set AGENT_TEST_GATEWAY_TOKEN to your platform access token';
