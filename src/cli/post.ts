import { request } from 'undici';
import { ndjsonLines } from '../http/ndjson.js';
import type { Io } from './io.js';
import { RunProgress } from './progress.js';

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

const unreachable = (url: string, err: unknown): HttpFailure => ({
  status: undefined,
  error: 'unreachable',
  message: `cannot reach the gateway at ${new URL(url).origin}: ${(err as { code?: string }).code ?? (err as Error).message}`,
});

const parseJson = (text: string): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

/** How long the command looks for its run again after its stream broke, before it gives up. */
const REATTACH_PATIENCE_MS = 180_000;
const REATTACH_BACKOFF_MS = [250, 500, 1000, 2000, 5000];

export type Followed<Report> = { report: Report; runId: string | undefined; cancelled: boolean } | { failure: HttpFailure };

export interface FollowOptions<Turn> {
  gateway: string;
  token: string;
  kind: 'run' | 'comparison';
  io: Io;
  onTurn: (event: Turn) => void;
  /** Tells a whole JSON report from an error body. */
  isReport: (body: Record<string, unknown>) => boolean;
}

/**
 * Posts a suite to a runs or comparisons route and follows the run it starts to its report: its
 * lines streamed (NDJSON) as they come, `{"turn": …}` to `onTurn`, a decided conversation and a
 * wait for room said on stderr, a live progress line (a line every 30 s without a terminal). When
 * the stream breaks (the pod went away, a proxy cut it), it follows the run on through the gateway
 * (`/v1/runs/{id}/events?after=N`), wherever the run continues. Ctrl-C cancels the run, and the
 * cancelled report is still read and answered.
 */
export async function postSuite<Report, Turn>(url: string, body: unknown, o: FollowOptions<Turn>): Promise<Followed<Report>> {
  let res;
  try {
    res = await request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json', accept: 'application/x-ndjson, application/json' },
      body: JSON.stringify(body),
      // A run lasts as long as its turns: no client-side timeout cuts it.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  } catch (err) {
    return { failure: unreachable(url, err) };
  }
  const type = String(res.headers['content-type'] ?? '');
  if (res.statusCode !== 200 || !type.includes('ndjson')) {
    const text = await res.body.text();
    const parsed = parseJson(text);
    if (res.statusCode === 200 && parsed !== undefined && o.isReport(parsed)) {
      return { report: parsed as Report, runId: typeof parsed.run_id === 'string' ? parsed.run_id : undefined, cancelled: false };
    }
    return { failure: failureOf(res.statusCode, text, parsed) };
  }
  return new Follower<Report, Turn>(o).follow(res.body);
}

/**
 * One call to the gateway whose answer is a JSON object: the object when the status is `ok` and
 * `holds` accepts it, else the gateway's error (or why it could not be reached).
 */
async function gatewayCall(
  url: string,
  init: { method: 'GET' | 'POST' | 'DELETE'; headers: Record<string, string>; body?: string },
  ok: number,
  holds: (body: Record<string, unknown>) => boolean,
  timeouts: { headersTimeout?: number; bodyTimeout?: number } = {},
): Promise<{ body: Record<string, unknown> } | { failure: HttpFailure }> {
  try {
    const res = await request(url, { ...init, ...timeouts });
    const text = await res.body.text();
    const parsed = parseJson(text);
    if (res.statusCode === ok && parsed !== undefined && holds(parsed)) return { body: parsed };
    return { failure: failureOf(res.statusCode, text, parsed) };
  } catch (err) {
    return { failure: unreachable(url, err) };
  }
}

/**
 * A POST whose answer is one JSON object (a judge-check): the object on 200, else the gateway's
 * error. No client-side timeout: the judge's calls take as long as they take.
 */
export const postJson = (
  url: string,
  token: string,
  body: unknown,
): Promise<{ body: Record<string, unknown> } | { failure: HttpFailure }> =>
  gatewayCall(
    url,
    { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) },
    200,
    () => true,
    { headersTimeout: 0, bodyTimeout: 0 },
  );

/** Starts a run with `Prefer: respond-async` (`--detach`): its id, or why it did not start. */
export async function startAsync(url: string, token: string, body: unknown): Promise<{ id: string } | { failure: HttpFailure }> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'respond-async' };
  const answer = await gatewayCall(url, { method: 'POST', headers, body: JSON.stringify(body) }, 202, (b) => typeof b.id === 'string');
  return 'failure' in answer ? answer : { id: answer.body.id as string };
}

/** A run's view (`GET /v1/runs/{id}`): `follow` learns its kind from it. */
export const getRun = (
  gateway: string,
  token: string,
  runId: string,
): Promise<{ body: Record<string, unknown> } | { failure: HttpFailure }> =>
  gatewayCall(`${gateway}/v1/runs/${runId}`, { method: 'GET', headers: { authorization: `Bearer ${token}` } }, 200, () => true);

/** A run's page on the gateway (`/runs/{id}`), as the command prints it when it starts the run. */
export const runPageUrl = (gateway: string, runId: string): string => `${gateway}/runs/${runId}`;

/** A failed attempt of a run as a suite (`capture ID`): the YAML the gateway wrote, or why it failed. */
export async function captureRun(
  gateway: string,
  token: string,
  runId: string,
  ask: { conversation: string; attempt: string; side: string | undefined },
): Promise<{ yaml: string } | { failure: HttpFailure }> {
  const query = new URLSearchParams({ conversation: ask.conversation, attempt: ask.attempt, ...(ask.side && { side: ask.side }) });
  const url = `${gateway}/v1/runs/${runId}/capture?${query}`;
  try {
    const res = await request(url, { method: 'GET', headers: { authorization: `Bearer ${token}` } });
    const text = await res.body.text();
    return res.statusCode === 200 ? { yaml: text } : { failure: failureOf(res.statusCode, text, parseJson(text)) };
  } catch (err) {
    return { failure: unreachable(url, err) };
  }
}

/** Follows a run already started (`follow ID`) from its first line. */
export function followRun<Report, Turn>(runId: string, o: FollowOptions<Turn>): Promise<Followed<Report>> {
  return new Follower<Report, Turn>(o, runId).follow(undefined);
}

/** Cancels a run (`cancel ID`, Ctrl-C): the gateway's answer, or why it failed. */
export async function cancelRun(gateway: string, token: string, runId: string): Promise<{ status: string } | { failure: HttpFailure }> {
  const url = `${gateway}/v1/runs/${runId}`;
  const answer = await gatewayCall(
    url,
    { method: 'DELETE', headers: { authorization: `Bearer ${token}` } },
    200,
    (b) => typeof b.status === 'string',
  );
  return 'failure' in answer ? answer : { status: answer.body.status as string };
}

class Follower<Report, Turn> {
  readonly #o: FollowOptions<Turn>;
  #runId: string | undefined;
  /** Lines read so far: where a re-attached stream starts. */
  #read = 0;
  #report: Report | undefined;
  #failure: HttpFailure | undefined;
  #cancelled = false;
  /** The gateway said the run is not there for this caller (404, 403): nothing to follow. */
  #gone = false;
  readonly #progress: RunProgress;

  /** This command started the run (its POST's stream), rather than following one by id. */
  readonly #started: boolean;

  constructor(o: FollowOptions<Turn>, runId?: string) {
    this.#o = o;
    this.#runId = runId;
    this.#started = runId === undefined;
    this.#progress = new RunProgress(o.io, o.kind, (id) => this.#view(id));
  }

  async follow(first: AsyncIterable<Buffer> | undefined): Promise<Followed<Report>> {
    const stopInterrupts = this.#o.io.onInterrupt(() => this.#interrupt());
    try {
      let stream = first;
      let lostSince: number | undefined;
      for (let tries = 0; ; tries++) {
        if (stream === undefined) stream = await this.#events();
        else {
          const readBefore = this.#read;
          if (await this.#readStream(stream)) break;
          if (this.#runId === undefined) {
            this.#failure ??= {
              status: 200,
              error: 'stream_broken',
              message: 'the connection to the gateway broke before the run started',
            };
            break;
          }
          if (this.#read > readBefore || lostSince === undefined) {
            this.#progress.say(`the pod running this ${this.#o.kind} went away; following it on another\n`);
            lostSince = Date.now();
            tries = 0;
          }
          stream = undefined;
        }
        if (this.#gone) break;
        if (stream !== undefined) continue;
        if (lostSince !== undefined && Date.now() - lostSince > REATTACH_PATIENCE_MS) {
          this.#failure = {
            status: undefined,
            error: 'stream_broken',
            message: `lost the ${this.#o.kind} ${this.#runId}: no pod of the gateway followed it on`,
          };
          break;
        }
        lostSince ??= Date.now();
        await new Promise((r) => setTimeout(r, REATTACH_BACKOFF_MS[Math.min(tries, REATTACH_BACKOFF_MS.length - 1)]));
      }
    } finally {
      stopInterrupts();
      this.#progress.stop();
    }
    if (this.#report !== undefined) return { report: this.#report, runId: this.#runId, cancelled: this.#cancelled };
    return { failure: this.#failure ?? { status: 200, error: 'no_report', message: 'the gateway ended the run without a report' } };
  }

  /** Reads lines until the run's last line (true), or the stream ends or breaks first (false). */
  async #readStream(stream: AsyncIterable<Buffer>): Promise<boolean> {
    try {
      for await (const line of ndjsonLines(stream)) {
        this.#read += 1;
        const item = parseJson(line);
        if (item === undefined) {
          this.#failure = { status: 200, error: 'bad_stream', message: 'the gateway sent a line that is not JSON' };
          continue;
        }
        if (this.#take(item, line)) return true;
      }
    } catch {
      // The stream broke: follow the run again where it continues.
    }
    return false;
  }

  /** One line of the run; true when it was the last. */
  #take(item: Record<string, unknown>, line: string): boolean {
    const o = this.#o;
    if (item.run !== undefined) {
      const run = item.run as { id?: unknown; sessions_budget?: unknown };
      if (typeof run.id === 'string' && this.#runId === undefined) {
        this.#runId = run.id;
        this.#progress.start(run.id);
        // A run this command started (not one it follows by id): where to watch it in a browser.
        if (this.#started) this.#progress.say(`${o.kind} ${run.id}: ${runPageUrl(o.gateway, run.id)}\n`);
      }
    } else if (item.turn !== undefined) this.#progress.above(() => o.onTurn(item.turn as Turn));
    else if (item.decided !== undefined) {
      // `verdict` where the stop decided it (a gateway of the previous release sends none).
      const d = item.decided as { conversation: string; stop: string; rounds: number; verdict?: string | null };
      const why = d.verdict == null ? d.stop : `${d.stop}: ${d.verdict}`;
      this.#progress.say(`  ${d.conversation}: stopped after ${d.rounds} round${d.rounds === 1 ? '' : 's'} (${why})\n`);
    } else if (item.waiting !== undefined) this.#progress.say(`  ${(item.waiting as { message: string }).message}\n`);
    else if (item.moved !== undefined) {
      const m = item.moved as { to: string; cause: string; attempts_rerun: number };
      this.#progress.say(
        `  the ${o.kind} continues on ${m.to} (${m.cause === 'drain' ? 'its pod shut down' : 'its pod stopped answering'}); ` +
          `${m.attempts_rerun} attempt${m.attempts_rerun === 1 ? '' : 's'} in flight run again\n`,
      );
    } else if (item.report !== undefined) {
      this.#report = item.report as Report;
      return true;
    } else if (typeof item.error === 'string') {
      this.#failure = failureOf(200, line, item);
      return true;
    }
    return false;
  }

  /** The run's lines after those read, from any pod; undefined when the gateway could not be asked. */
  async #events(): Promise<AsyncIterable<Buffer> | undefined> {
    const url = `${this.#o.gateway}/v1/runs/${this.#runId}/events?after=${this.#read}`;
    try {
      const res = await request(url, { headers: { authorization: `Bearer ${this.#o.token}` }, headersTimeout: 0, bodyTimeout: 0 });
      if (res.statusCode === 200) return res.body;
      const text = await res.body.text();
      // A run no pod knows, or not the caller's: nothing to wait for.
      if (res.statusCode === 404 || res.statusCode === 403 || res.statusCode === 401) {
        this.#failure = failureOf(res.statusCode, text, parseJson(text));
        this.#gone = true;
      }
    } catch {
      // Not reachable now: tried again.
    }
    return undefined;
  }

  async #view(id: string): Promise<Record<string, unknown> | undefined> {
    const answer = await getRun(this.#o.gateway, this.#o.token, id);
    return 'body' in answer ? answer.body : undefined;
  }

  /** Ctrl-C: the run is cancelled, its report still read; a second Ctrl-C leaves at once. */
  #interrupt(): boolean {
    if (this.#cancelled || this.#runId === undefined) return false;
    this.#cancelled = true;
    this.#progress.say(`cancelling the ${this.#o.kind} ${this.#runId} (Ctrl-C again to leave at once)\n`);
    void cancelRun(this.#o.gateway, this.#o.token, this.#runId);
    return true;
  }
}
