/**
 * A small JSON-over-HTTP client on one undici keep-alive pool per upstream. It knows nothing of
 * the upstream's meaning: the adapters map statuses and failures to the API's errors.
 */

import type { Pool } from 'undici';

export type UpstreamFailure = 'timeout' | 'unreachable' | 'malformed';

export class UpstreamError extends Error {
  constructor(
    readonly failure: UpstreamFailure,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

export interface JsonRequest {
  method?: 'GET' | 'POST';
  /** Path below the base URL, already encoded. */
  path: string;
  /** A fixed name for metrics and logs, e.g. `/api/v1/agents/{id}`: never the path itself. */
  template: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export type ObserveRequest = (template: string, status: number | 'error', seconds: number) => void;

export interface JsonClient {
  request(req: JsonRequest): Promise<JsonResponse>;
  close(): Promise<void>;
}

export function createJsonClient(baseUrl: string, opts: { timeoutMs: number; connections?: number; observe?: ObserveRequest }): JsonClient {
  const url = new URL(baseUrl);
  const basePath = url.pathname.replace(/\/+$/, '');
  // undici loads with the first request, not at start-up (it is a tenth of the modules a pod loads).
  let pool: Promise<Pool> | undefined;
  const openPool = (): Promise<Pool> =>
    (pool ??= import('undici').then(
      ({ Pool }) =>
        new Pool(url.origin, {
          connections: opts.connections ?? 32,
          keepAliveTimeout: 30_000,
          headersTimeout: opts.timeoutMs,
          bodyTimeout: opts.timeoutMs,
          connectTimeout: opts.timeoutMs,
        }),
    ));

  async function request(req: JsonRequest): Promise<JsonResponse> {
    const started = performance.now();
    let status: number | 'error' = 'error';
    try {
      const res = await (
        await openPool()
      ).request({
        method: req.method ?? 'GET',
        path: basePath + req.path,
        headers: {
          accept: 'application/json',
          ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...req.headers,
        },
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      status = res.statusCode;
      const text = await res.body.text();
      if (text === '') return { status, body: undefined };
      try {
        return { status, body: JSON.parse(text) as unknown };
      } catch {
        throw new UpstreamError('malformed', `answered ${req.template} with a body that is not JSON`);
      }
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      const name = (err as { name?: string; code?: string }).name ?? '';
      const code = (err as { code?: string }).code ?? '';
      const timedOut = name === 'TimeoutError' || name === 'AbortError' || code.includes('TIMEOUT');
      throw timedOut
        ? new UpstreamError('timeout', `did not answer ${req.template} within ${opts.timeoutMs} ms`)
        : new UpstreamError('unreachable', `could not be reached for ${req.template} (${code || name || 'error'})`);
    } finally {
      opts.observe?.(req.template, status, (performance.now() - started) / 1000);
    }
  }

  return { request, close: async () => (pool === undefined ? undefined : (await pool).close()) };
}
