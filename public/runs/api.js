// The public API with the reader's platform token. The token lives in this tab's sessionStorage
// only: never in a URL, a cookie or a log; "Sign out" forgets it.

const TOKEN_KEY = 'agent-test-gateway.token';

export const token = () => sessionStorage.getItem(TOKEN_KEY);
export const signIn = (value) => sessionStorage.setItem(TOKEN_KEY, value);
export const signOut = () => sessionStorage.removeItem(TOKEN_KEY);

/** An answer of the API that was not 2xx: its status, error code and sentence. */
export class ApiError extends Error {
  constructor(status, body) {
    super(typeof body.message === 'string' ? body.message : `The gateway answered ${status}.`);
    this.status = status;
    this.code = typeof body.error === 'string' ? body.error : 'http_' + status;
  }
}

export async function api(method, path, { accept = 'application/json', signal } = {}) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${token()}`, accept },
    signal,
    cache: 'no-store',
    credentials: 'omit',
    referrerPolicy: 'no-referrer',
  });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    throw new ApiError(res.status, body);
  }
  return res;
}

export const getJson = async (path, signal) => (await api('GET', path, { signal })).json();

const pause = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => clearTimeout(timer), { once: true });
  });

/** Lines of an NDJSON body as they arrive, parsed. */
async function* ndjson(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 1);
      if (text !== '') yield JSON.parse(text);
    }
  }
}

/**
 * Follows a run's lines (`/v1/runs/{id}/events`) until its last one, `{"report"}` or `{"error"}`.
 * A stream that ends before it (the pod went away: a drain, a crash) or a connection that fails is
 * picked up again from any pod with `after=` the lines seen, so every line comes once, in order.
 * An error line is the run's last only when the run has ended; otherwise the following failed and
 * is retried. `onLine(line)` is called for each; `onCut()` when it reconnects, `onResumed()` once a
 * pod answers again after a cut.
 */
export async function followRun(id, { onLine, onCut = () => {}, onResumed = () => {}, signal, retryMs = 500 }) {
  let seen = 0;
  let cut = false;
  while (!signal?.aborted) {
    try {
      const res = await api('GET', `/v1/runs/${id}/events?after=${seen}`, { accept: 'application/x-ndjson', signal });
      if (cut) onResumed();
      cut = false;
      for await (const line of ndjson(res.body)) {
        if (line.error !== undefined && line.run === undefined) {
          const run = await getJson(`/v1/runs/${id}`, signal);
          if (run.status === 'running') break;
        }
        seen += 1;
        onLine(line);
        if (line.report !== undefined || line.error !== undefined) return;
      }
    } catch (err) {
      if (signal?.aborted) return;
      // A refusal (no token, no access, no such run) is the answer; anything else is a cut.
      if (err instanceof ApiError && err.status < 500) throw err;
    }
    cut = true;
    onCut();
    await pause(retryMs, signal);
  }
}
