import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { mcpSessionIdSchema } from '../schemas/requests.js';

/**
 * MCP sessions live on the pod that answered `initialize`. Behind routing that is not sticky, a
 * later request of the session reaches another pod: this one asks its peers who holds the
 * session and passes the raw request on to that pod's /mcp, marked as forwarded (so it is never
 * forwarded again), streaming the answer back as it comes (SSE event by event). The holder
 * authenticates the bearer token again and checks the session is that user's.
 */

/** Connection-level headers: each hop has its own. The body is sent again, so its length is too. */
const NOT_PASSED_ON = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

function passedOn(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  drop: string[] = [],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NOT_PASSED_ON.has(name) || drop.includes(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export type McpForwarder = (request: FastifyRequest, reply: FastifyReply, mcpSessionId: string) => Promise<boolean>;

/** Forwards a request of an MCP session held on a peer; undefined on a single pod. */
export function mcpForwarder(app: FastifyInstance, path: string): McpForwarder | undefined {
  const peers = app.peers;
  if (peers === null) return undefined;
  /** True when the request was answered (by the holder, or the caller hung up); false when no peer holds the session. */
  return async (request, reply, mcpSessionId) => {
    if (peers.isForwarded(request.headers) || !mcpSessionIdSchema.safeParse(mcpSessionId).success) return false;
    const holder = await peers.mcpSessionHolder(mcpSessionId);
    if (holder === undefined) return false;

    const upstream = new AbortController();
    const hangUp = (): void => {
      if (!reply.raw.writableFinished) upstream.abort();
    };
    reply.raw.once('close', hangUp);
    let res;
    try {
      res = await peers.client.relay(holder, {
        method: request.method as 'GET' | 'POST' | 'DELETE',
        path,
        headers: passedOn(request.headers, ['content-length']),
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: upstream.signal,
      });
    } catch {
      reply.raw.off('close', hangUp);
      if (!upstream.signal.aborted) return false; // the holder went away, and its sessions with it
      reply.hijack();
      reply.raw.destroy();
      return true;
    }
    reply.hijack();
    reply.raw.writeHead(res.statusCode, passedOn(res.headers));
    reply.raw.flushHeaders();
    await pipeline(res.body, reply.raw).catch(() => upstream.abort());
    return true;
  };
}
