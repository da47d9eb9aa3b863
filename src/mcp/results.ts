import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../domain/vocabulary.js';
import { GatewayError, isGatewayError, type Problem } from '../errors.js';

/**
 * What every tool shares: the caller of the HTTP request that carried the call, a result as
 * structured content with a short text a model reads, and a refusal as a tool error carrying the
 * gateway's code and sentence (`conversation_not_yours: This conversation belongs to …`).
 */
export const CALLER_ID = 'agent-test-gateway/caller-id';

/** The route authenticated the request and put the caller in the request's AuthInfo. */
export function callerOf(extra: { authInfo?: AuthInfo | undefined }): Caller {
  const id = extra.authInfo?.extra?.[CALLER_ID];
  if (typeof id !== 'string' || extra.authInfo === undefined) {
    throw new GatewayError('unauthenticated', 'Send Authorization: Bearer <platform access token>.');
  }
  return { id, token: extra.authInfo.token };
}

export function success(structured: object, text: string): CallToolResult {
  return { structuredContent: structured as Record<string, unknown>, content: [{ type: 'text', text }] };
}

/**
 * The gateway's code and sentence, as REST answers `error` and `message`; when more than one input
 * rule is broken (REST's `details.problems`), each further one on a line of its own.
 */
export function refusal(err: unknown, log: FastifyBaseLogger): CallToolResult {
  if (!isGatewayError(err)) log.error({ err }, 'an MCP tool failed');
  const error = isGatewayError(err) ? err : new GatewayError('internal', 'The gateway failed on this call; it has been logged.');
  const problems = (error.details as { problems?: unknown } | undefined)?.problems;
  const further = Array.isArray(problems) ? (problems as Problem[]).slice(1).map((p) => `also: ${p.rule}`) : [];
  return toolError(error.code, error.message, further);
}

/** A tool error as a model reads it: `code: sentence`, then any further lines. */
export function toolError(code: string, message: string, further: string[] = []): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: [`${code}: ${message}`, ...further].join('\n') }] };
}

/** Runs a tool body; a refusal or a fault becomes the tool's error result, never a protocol error. */
export async function guarded(log: FastifyBaseLogger, body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    return refusal(err, log);
  }
}

export const yesNo = (value: boolean): string => (value ? 'yes' : 'no');
