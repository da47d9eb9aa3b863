import { request } from 'undici';
import { ndjsonLines } from '../http/ndjson.js';

/** Why a suite did not run: the gateway's error, or why it could not be reached or read. */
export interface HttpFailure {
  status: number | undefined;
  error: string;
  message: string;
  problems?: Array<{ field?: string; rule?: string }>;
}

/** A JSON body's error fields, as every gateway error carries them. */
function failureOf(status: number, text: string, body: Record<string, unknown> | undefined): HttpFailure {
  const problems = (body?.details as { problems?: unknown } | undefined)?.problems;
  return {
    status,
    error: typeof body?.error === 'string' ? body.error : 'http_error',
    message: typeof body?.message === 'string' ? body.message : `the gateway answered HTTP ${status}: ${text.slice(0, 200)}`,
    ...(Array.isArray(problems) ? { problems: problems as HttpFailure['problems'] } : {}),
  };
}

/**
 * Posts a suite to a runs or comparisons route and reads the answer streamed (NDJSON), so that a
 * long run keeps its connection alive: `{"turn": …}` lines go to `onTurn`, the `{"report": …}`
 * line is the answer. `isReport` tells a whole JSON report from an error body.
 */
export async function postSuite<Report, Turn>(
  url: string,
  token: string,
  body: unknown,
  onTurn: (event: Turn) => void,
  isReport: (body: Record<string, unknown>) => boolean,
): Promise<{ report: Report } | { failure: HttpFailure }> {
  let res;
  try {
    res = await request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/x-ndjson, application/json' },
      body: JSON.stringify(body),
      // A run lasts as long as its turns: no client-side timeout cuts it.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const gateway = new URL(url).origin;
    return {
      failure: {
        status: undefined,
        error: 'unreachable',
        message: `cannot reach the gateway at ${gateway}: ${code ?? (err as Error).message}`,
      },
    };
  }
  const type = String(res.headers['content-type'] ?? '');
  if (res.statusCode !== 200 || !type.includes('ndjson')) {
    const text = await res.body.text();
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    if (res.statusCode === 200 && parsed !== undefined && isReport(parsed)) return { report: parsed as Report };
    return { failure: failureOf(res.statusCode, text, parsed) };
  }
  let report: Report | undefined;
  let failure: HttpFailure | undefined;
  try {
    for await (const line of ndjsonLines(res.body)) {
      let item: Record<string, unknown>;
      try {
        item = JSON.parse(line) as Record<string, unknown>;
      } catch {
        failure = { status: 200, error: 'bad_stream', message: 'the gateway sent a line that is not JSON' };
        continue;
      }
      if (item.turn !== undefined) onTurn(item.turn as Turn);
      else if (item.report !== undefined) report = item.report as Report;
      else if (typeof item.error === 'string') failure = failureOf(200, line, item);
    }
  } catch (err) {
    return {
      failure: {
        status: 200,
        error: 'stream_broken',
        message: `the connection to the gateway broke during the run: ${(err as Error).message}`,
      },
    };
  }
  if (report !== undefined) return { report };
  return { failure: failure ?? { status: 200, error: 'no_report', message: 'the gateway ended the run without a report' } };
}
