/**
 * `agent-test-gateway chat <agent>`: a conversation with an agent from a terminal, through a
 * running gateway (usually reached with `kubectl port-forward`). It opens the conversation with
 * `#intro`, prints the agent's speech as the gateway streams it (NDJSON), marks tool calls and
 * shown elements, and sends each line typed as the next turn. Ctrl-C or end of input closes the
 * conversation (DELETE: a plain socket close, so the engine runs its end-of-conversation work).
 *
 * The gateway decides what a line may be: a refused line is sent and its 400 message shown.
 */

import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { request } from 'undici';
import { parseOptions, reconnectCommand, UsageError, USAGE, type Options } from './chat-options.js';
import { NDJSON, ndjsonLines } from '../http/ndjson.js';

export interface ChatIO {
  input: Readable;
  output: Writable;
  errors: Writable;
  env: NodeJS.ProcessEnv;
  /** Whether to colour the markers (a TTY without NO_COLOR). */
  color: boolean;
}

type Json = Record<string, unknown>;
type Element = { type: string; [field: string]: unknown };

interface ApiError {
  status: number;
  error: string;
  message: string;
}

/** How one turn ended, as far as the terminal is concerned. */
interface TurnEnd {
  sessionId: string | undefined;
  /** the turn's result (the API's TurnResult), when the gateway gave one */
  result?: Json;
  /** a refusal before the turn ran (400, 403, 409 …) or a failure after it began streaming */
  error?: ApiError;
  /** the call was cancelled here (Ctrl-C) */
  cancelled?: boolean;
}

export async function main(args: string[], io: ChatIO = processIO()): Promise<number> {
  let opts;
  try {
    opts = parseOptions(args, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message !== '') io.errors.write(`agent-test-gateway chat: ${err.message}\n\n`);
    io.errors.write(USAGE);
    return err.message === '' ? 0 : 2;
  }
  return new Chat(opts, io).run();
}

function processIO(): ChatIO {
  return {
    input: process.stdin,
    output: process.stdout,
    errors: process.stderr,
    env: process.env,
    color: process.stdout.isTTY === true && process.env.NO_COLOR === undefined,
  };
}

class Chat {
  readonly #opts: Options;
  readonly #io: ChatIO;
  readonly #base: string;
  #sessionId: string | undefined;
  /** Set by Ctrl-C: the running call is cancelled and no further line is sent. */
  readonly #quit = new AbortController();
  #rl: Interface | undefined;
  /** Running tool calls by name: `started` prints the marker, the matching `completed` does not. */
  readonly #running = new Map<string, number>();

  constructor(opts: Options, io: ChatIO) {
    this.#opts = opts;
    this.#io = io;
    this.#base = `${opts.gateway}/v1/agents/${encodeURIComponent(opts.agentKey)}/conversations`;
    this.#sessionId = opts.session;
  }

  async run(): Promise<number> {
    const onSigint = () => this.#interrupt();
    process.on('SIGINT', onSigint);
    try {
      return await this.#converse();
    } finally {
      process.off('SIGINT', onSigint);
      this.#rl?.close();
    }
  }

  async #converse(): Promise<number> {
    const { agentKey } = this.#opts;
    // Read the input from the start, so lines typed (or piped) while the opening streams wait their turn.
    const terminal = (this.#io.input as { isTTY?: boolean }).isTTY === true && (this.#io.output as { isTTY?: boolean }).isTTY === true;
    const rl = createInterface({ input: this.#io.input, output: this.#io.output, terminal });
    this.#rl = rl;
    rl.setPrompt('you> ');
    // A terminal's Ctrl-C arrives here, not as a signal, when the input is a TTY.
    rl.on('SIGINT', () => this.#interrupt());
    const lines = rl[Symbol.asyncIterator]();
    // Lines typed ahead are still read after the input ends; only the prompt needs an open interface.
    let inputEnded = false;
    rl.once('close', () => (inputEnded = true));

    if (this.#opts.session === undefined) {
      this.#say(`Opening a conversation with ${agentKey} at ${this.#opts.gateway} …`);
      const opened = await this.#turn('#intro', true);
      if (opened.cancelled) return this.#close();
      if (opened.error !== undefined || opened.result === undefined) {
        this.#refused(opened.error);
        return opened.sessionId === undefined ? 1 : this.#close(1);
      }
      this.#afterTurn(opened.result);
      const reconnect = reconnectCommand(this.#opts, this.#sessionId!);
      this.#say(this.#paint('dim', `session ${this.#sessionId} · reconnect later with: ${reconnect}`));
      if (this.#ended(opened.result)) return 0;
    } else {
      this.#say(`Session ${this.#sessionId} with ${agentKey}: your first line reconnects to it.`);
    }

    for (;;) {
      if (this.#quit.signal.aborted) break;
      if (!inputEnded) rl.prompt();
      const next = await lines.next();
      if (next.done || this.#quit.signal.aborted) break;
      const line = next.value;
      if (line.trim() === '') continue;
      const end = await this.#turn(line, false);
      if (end.cancelled) break;
      if (end.error !== undefined || end.result === undefined) {
        this.#refused(end.error);
        continue;
      }
      this.#afterTurn(end.result);
      if (this.#ended(end.result)) return 0;
    }
    if (!this.#quit.signal.aborted) this.#io.output.write('\n');
    return this.#close();
  }

  #interrupt(): void {
    if (this.#quit.signal.aborted) {
      // A second Ctrl-C while closing: leave at once; the gateway closes it after its idle time.
      this.#io.errors.write('Interrupted again: quitting without waiting for the close.\n');
      process.exit(130);
    }
    this.#quit.abort();
    this.#io.output.write('\n');
    this.#rl?.close();
  }

  /** Runs one turn over the gateway, printing its elements as they stream. */
  async #turn(line: string, opening: boolean): Promise<TurnEnd> {
    const body: Json = { line };
    if (this.#opts.deviceRef !== undefined) body.device_ref = this.#opts.deviceRef;
    if (this.#opts.locale !== undefined) body.locale = this.#opts.locale;
    const url = opening ? this.#base : `${this.#base}/${encodeURIComponent(this.#sessionId ?? '')}/turns`;
    this.#running.clear();
    try {
      const res = await request(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.#opts.token}`,
          accept: `${NDJSON}, application/json;q=0.5`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
        signal: this.#quit.signal,
        // A turn may run its whole budget (90 s by default) before the first byte of its result.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const type = String(res.headers['content-type'] ?? '');
      if (res.statusCode >= 300) {
        return { sessionId: this.#sessionId, error: apiError(res.statusCode, await res.body.text()) };
      }
      if (!type.startsWith(NDJSON)) {
        // A gateway that does not stream: the whole result at once.
        const result = JSON.parse(await res.body.text()) as Json;
        for (const element of elementsOf(result)) this.#show(element);
        return { sessionId: this.#sessionId, result };
      }
      let end: TurnEnd = { sessionId: this.#sessionId };
      for await (const record of ndjson(res.body)) {
        if (isObject(record.element)) this.#show(record.element as Element);
        else if (isObject(record.result)) end = { sessionId: this.#sessionId, result: record.result };
        else if (typeof record.error === 'string') {
          end = {
            sessionId: this.#sessionId,
            error: { status: res.statusCode, error: record.error, message: stringField(record.message) },
          };
        }
      }
      if (end.result === undefined && end.error === undefined) {
        end.error = { status: res.statusCode, error: 'incomplete', message: "The gateway ended the stream before the turn's result." };
      }
      return end;
    } catch (err) {
      if (this.#quit.signal.aborted) return { sessionId: this.#sessionId, cancelled: true };
      return {
        sessionId: this.#sessionId,
        error: {
          status: 0,
          error: 'unreachable',
          message: `The gateway at ${this.#opts.gateway} could not be reached (${describe(err)}).`,
        },
      };
    }
  }

  /** One element as it arrives: speech on its own line, markers for tools and shown elements. */
  #show(element: Element): void {
    const p = isObject(element.params) ? element.params : {};
    switch (element.type) {
      case 'session':
        if (typeof element.sessionId === 'string') this.#sessionId = element.sessionId.toLowerCase();
        return;
      case 'text': {
        const text = typeof element.text === 'string' ? element.text.trim() : '';
        if (text !== '') this.#say(`${this.#paint('bold', `${this.#opts.agentKey}>`)} ${text}`);
        return;
      }
      case 'error': {
        const message = stringField(element.message);
        this.#say(this.#paint('red', `[engine error ${stringField(element.code)}${message ? `: ${message}` : ''}]`));
        return;
      }
      case 'exit':
        if (element.sessionEnded === true) this.#say(this.#paint('dim', '[the agent ended the conversation]'));
        return;
      case 'command':
        break;
      default:
        return;
    }
    if (element.name === 'tool-call' && typeof p.name === 'string') {
      const open = this.#running.get(p.name) ?? 0;
      if (p.result === 'completed' && open > 0) {
        this.#running.set(p.name, open - 1);
        return;
      }
      if (p.result !== 'completed') this.#running.set(p.name, open + 1);
      this.#say(this.#paint('cyan', `[tool ${p.name}]`));
    } else if (element.name === 'multimodal-interaction' && typeof p.ref === 'string') {
      this.#say(this.#paint('cyan', `[shown ${p.ref}]`));
    }
  }

  /** What the terminal should know beyond the speech: why the turn or the connection ended, reconnects. */
  #afterTurn(result: Json): void {
    if (typeof result.session_id === 'string') this.#sessionId = result.session_id;
    const turn = isObject(result.turn) ? result.turn : {};
    const conversation = isObject(result.conversation) ? result.conversation : {};
    const notes = Array.isArray(result.notes) ? result.notes.filter((n): n is string => typeof n === 'string') : [];
    const unusual = turn.outcome !== 'exit' || conversation.connection === 'closed' || conversation.reconnected === true;
    if (unusual) for (const note of notes) this.#say(this.#paint('dim', `  note: ${note}`));
    if (conversation.connection === 'closed' && conversation.ended_by_agent !== true) {
      this.#say(this.#paint('dim', '  (the connection closed: your next line reconnects to the same session)'));
    }
  }

  #ended(result: Json): boolean {
    const conversation = isObject(result.conversation) ? result.conversation : {};
    if (conversation.ended_by_agent !== true) return false;
    this.#say(this.#paint('dim', `Conversation ${this.#sessionId} ended by the agent.`));
    return true;
  }

  #refused(error: ApiError | undefined): void {
    if (error === undefined) return;
    this.#io.errors.write(
      `${this.#paint('red', `gateway: ${error.message}`)}${error.error ? this.#paint('dim', ` (${error.error})`) : ''}\n`,
    );
  }

  /** Closes the conversation (DELETE: a plain socket close, never #exit); closing twice is harmless. */
  async #close(code = 0): Promise<number> {
    const id = this.#sessionId;
    if (id === undefined) return code;
    try {
      const res = await request(`${this.#base}/${encodeURIComponent(id)}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${this.#opts.token}` },
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.body.text();
      if (res.statusCode === 204) {
        this.#say(this.#paint('dim', `Closed session ${id}. Reconnect to it with: ${reconnectCommand(this.#opts, id)}`));
        const note = res.headers['x-conversation-note'];
        if (typeof note === 'string' && note !== '') this.#say(this.#paint('dim', `  note: ${note}`));
        return code;
      }
      if (res.statusCode === 404) {
        // Never connected here (a refused reconnect, a failed opening): nothing is open to close.
        this.#say(this.#paint('dim', `Nothing to close: this gateway pod holds no conversation ${id}.`));
        return code;
      }
      this.#refused(apiError(res.statusCode, text));
    } catch (err) {
      this.#refused({ status: 0, error: 'unreachable', message: `The conversation could not be closed (${describe(err)}).` });
    }
    // The gateway closes it itself after its idle time.
    return code === 0 ? 1 : code;
  }

  #say(text: string): void {
    this.#io.output.write(`${text}\n`);
  }

  #paint(style: 'bold' | 'dim' | 'red' | 'cyan', text: string): string {
    if (!this.#io.color) return text;
    const codes = { bold: '1', dim: '2', red: '31', cyan: '36' } as const;
    return `\u001b[${codes[style]}m${text}\u001b[0m`;
  }
}

/** A string field of an element or record, or '' when it is missing or not a string. */
const stringField = (value: unknown): string => (typeof value === 'string' ? value : '');
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function elementsOf(result: Json): Element[] {
  const turn = isObject(result.turn) ? result.turn : {};
  return Array.isArray(turn.elements) ? (turn.elements.filter(isObject) as Element[]) : [];
}

function apiError(status: number, text: string): ApiError {
  try {
    const body: unknown = JSON.parse(text);
    if (isObject(body) && typeof body.message === 'string') {
      return { status, error: typeof body.error === 'string' ? body.error : String(status), message: body.message };
    }
  } catch {
    // not JSON: fall through
  }
  return { status, error: String(status), message: `The gateway answered ${status}${text ? `: ${text.slice(0, 200)}` : ''}.` };
}

/** The records of an NDJSON body, one per line, as they arrive; a line that is not a JSON object is skipped. */
async function* ndjson(body: AsyncIterable<Buffer | string>): AsyncGenerator<Json> {
  for await (const line of ndjsonLines(body)) {
    try {
      const value: unknown = JSON.parse(line);
      if (isObject(value)) yield value;
    } catch {
      // not JSON: skipped
    }
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string; message?: string }; message?: string };
  return e?.cause?.code ?? e?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}
