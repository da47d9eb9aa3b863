/** NDJSON: one JSON value per line, how the gateway streams a turn (and how callers read it). */
export const NDJSON = 'application/x-ndjson';

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
