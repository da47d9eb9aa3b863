/**
 * HTTP for tests: the one call helper (`callAt`, which the stack, the pods and the server
 * processes call through), the gateway's paths, and a free loopback port.
 */
import { createServer } from 'node:net';
import { request } from 'undici';

/**
 * A parsed body (JSON, YAML or XML) as a test reads and asserts it: `any` on purpose, so a test
 * says `answer.body.turn.text` (eslint.config.js turns the no-unsafe rules off in test/).
 */
export type Json = any;

export interface CallOptions {
  /** The caller token, `demo-token` by default; `null` sends no Authorization header. */
  token?: string | null;
  /** Sent as JSON (with `content-type: application/json` unless `headers` names one); a string is sent as it is. */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** A new connection for this call (undici's `reset`): for a proxy that closes idle keep-alive connections. */
  reset?: boolean;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body parsed as JSON; `undefined` when it is empty or not JSON (then see `text`). */
  body: Json;
  text: string;
}

/** One call to a server on loopback: the gateway, a pod, or a proxy in front of them. */
export async function callAt(base: string, method: string, path: string, o: CallOptions = {}): Promise<Answer> {
  const token = o.token === undefined ? 'demo-token' : o.token;
  const headers: Record<string, string> = { ...o.headers };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (o.body !== undefined) {
    body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await request(base + path, {
    method: method as 'GET',
    headers,
    body,
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.reset ? { reset: true } : {}),
  });
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: parsed, text };
}

/** `/v1/agents/{agent}/conversations/{sessionId}`: one conversation. */
export const conversationPath = (sessionId: string, agent = 'coach'): string => `/v1/agents/${agent}/conversations/${sessionId}`;

/** `/v1/agents/{agent}/conversations/{sessionId}/turns`: where its turns are sent. */
export const turnPath = (sessionId: string, agent = 'coach'): string => `${conversationPath(sessionId, agent)}/turns`;

/** `/v1/agents/{agent}/runs`: where a suite is run. */
export const runPath = (agent = 'coach'): string => `/v1/agents/${agent}/runs`;

/** `/v1/agents/{candidate}/comparisons`: where a suite is run on two revisions. */
export const comparePath = (candidate = 'coach.3'): string => `/v1/agents/${candidate}/comparisons`;

/** `/v1/agents/{agent}/memory/{device}`: a simulated user's memory. */
export const memoryPath = (device: string, agent = 'coach'): string => `/v1/agents/${agent}/memory/${encodeURIComponent(device)}`;

/** A TCP port on 127.0.0.1 that nothing listens on (the OS picks it; it is free again when this returns). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
