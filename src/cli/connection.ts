/** Where both commands find the gateway and the caller's token. */
export const DEFAULT_GATEWAY = 'http://127.0.0.1:8080';

/** `--gateway`, else $AGENT_TEST_GATEWAY_URL, else the demo's address; no trailing slash. */
export const gatewayUrl = (flag: string | undefined, env: NodeJS.ProcessEnv): string =>
  (flag || env.AGENT_TEST_GATEWAY_URL || DEFAULT_GATEWAY).replace(/\/+$/, '');

/** What is wrong with a gateway URL, if anything. */
export const gatewayProblem = (url: string): string | undefined =>
  /^https?:\/\/[^/\s]+/i.test(url) && URL.canParse(url) ? undefined : `--gateway must be an http:// or https:// URL, not ${url}`;

/** The platform access token from AGENT_TEST_GATEWAY_TOKEN, if set. */
export const tokenFrom = (env: NodeJS.ProcessEnv): string | undefined => env.AGENT_TEST_GATEWAY_TOKEN?.trim() || undefined;

export const MISSING_TOKEN = 'set AGENT_TEST_GATEWAY_TOKEN to your platform access token';

/** The non-blank lines of an NDJSON body as they arrive, decoded as one UTF-8 stream. */
export async function* ndjsonLines(body: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    buffered += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim() !== '') yield line;
    }
  }
  buffered += decoder.decode();
  if (buffered.trim() !== '') yield buffered;
}
