/**
 * One engine pipeline socket and its turn reader. A turn is one text frame out and elements in
 * until the turn's own `exit` — the only reliable end of a turn, since the engine may speak
 * again after `response-end` — or until the budget, the caller or the engine cuts it short.
 */

import WebSocket from 'ws';
import type { TurnOutcome } from '../domain/vocabulary.js';
import { GatewayError } from '../errors.js';
import { frameText } from '../http/ws-frames.js';
import { endsSession, engineError, isExit, isSession, parseElement, type Element } from './elements.js';

export interface TurnRecord {
  outcome: TurnOutcome;
  elements: Element[];
  endedByAgent: boolean;
  notes: string[];
  /** The engine refused the session (FORBIDDEN, NOT_FOUND): an error for a socket's first turn. */
  refusal?: GatewayError;
  /** The socket's first turn: a refusal here means the session was never admitted. */
  first: boolean;
  durationMs: number;
}

export interface TurnOptions {
  budgetMs: number;
  signal?: AbortSignal;
  onElement?: (element: Element) => void;
}

export interface ClosedInfo {
  code: number;
  reason: string;
  byEngine: boolean;
}

interface ActiveTurn {
  record: TurnRecord;
  onElement: ((element: Element) => void) | undefined;
  finish: (outcome: TurnOutcome, note?: string) => void;
}

export interface SessionContext {
  agentKey: string;
  signedIn: boolean;
}

/** Maps an engine refusal to the API's error; the wire codes stay in this adapter. */
function refusalError(code: string, message: string, ctx: SessionContext): GatewayError | undefined {
  if (code === 'NOT_FOUND') {
    return new GatewayError('session_not_found', 'The engine does not know this session; start a new conversation instead.');
  }
  if (code !== 'FORBIDDEN') return undefined;
  return ctx.signedIn
    ? new GatewayError(
        'identity_not_enabled',
        `The engine knows the configured test identity but does not admit it to the project of agent:${ctx.agentKey}: ` +
          'it is not enabled for the project.',
      )
    : new GatewayError(
        'engine_refused',
        `The engine refused an anonymous session for agent:${ctx.agentKey}${message ? ` (${message})` : ''}.`,
      );
}

/** Told once how the session's admission ended: undefined when the engine admitted it. */
export type AdmissionListener = (refusal: GatewayError | undefined) => void;

export class EngineSocket {
  readonly sessionId: string;
  readonly resumed: boolean;
  readonly #ws: WebSocket;
  readonly #ctx: SessionContext;
  /** Elements that arrived outside a turn (the session element, stragglers): the next turn's first. */
  #pending: Element[];
  #active: ActiveTurn | undefined;
  #closed: ClosedInfo | undefined;
  #lastFault: string | undefined;
  /** The close code the gateway's side sent after a protocol fault of the engine (1009: frame too big). */
  #faultCloseCode: number | undefined;
  #onClose: ((info: ClosedInfo) => void) | undefined;
  #onAdmission: AdmissionListener | undefined;
  #turnsRun = 0;
  /** The budget timer, and the budget it runs for: see #armBudget. */
  #budget: NodeJS.Timeout | undefined;
  #budgetMs = 0;
  readonly #ended: Promise<void>;

  constructor(ws: WebSocket, greeting: Element[], ctx: SessionContext, maxFrameBytes: number, onAdmission?: AdmissionListener) {
    const session = greeting.find(isSession)!;
    this.sessionId = String(session.sessionId).toLowerCase();
    this.resumed = session.resumed === true;
    this.#ws = ws;
    this.#ctx = ctx;
    this.#pending = greeting;
    this.#onAdmission = onAdmission;
    this.#ended = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('message', (data, isBinary) => this.#onFrame(data, isBinary));
    ws.on('error', (err: Error & { code?: string }) => {
      this.#lastFault = describeSocketError(err, maxFrameBytes);
      this.#faultCloseCode ??= faultCloseCode(err);
    });
    ws.on('close', (code, reason) => this.#onSocketClose(code, reason.toString()));
  }

  get isOpen(): boolean {
    return this.#closed === undefined && this.#ws.readyState === WebSocket.OPEN;
  }

  whenEnded(): Promise<void> {
    return this.#ended;
  }

  /** Called once when the socket closes while no turn is running (the engine hung up, idle). */
  onClose(listener: (info: ClosedInfo) => void): void {
    this.#onClose = listener;
  }

  runTurn(line: string, opts: TurnOptions): Promise<TurnRecord> {
    const started = performance.now();
    const first = this.#turnsRun++ === 0;
    const record: TurnRecord = { outcome: 'exit', elements: [], endedByAgent: false, notes: [], durationMs: 0, first };
    return new Promise<TurnRecord>((resolve) => {
      const onAbort = () => finish('cancelled', cancelNote(opts.signal?.reason));
      const finish = (outcome: TurnOutcome, note?: string) => {
        if (this.#active !== turn) return;
        this.#active = undefined;
        opts.signal?.removeEventListener('abort', onAbort);
        record.outcome = outcome;
        if (note !== undefined) record.notes.push(note);
        record.durationMs = Math.round(performance.now() - started);
        if (first) this.#admitted(record.refusal);
        resolve(record);
      };
      const turn: ActiveTurn = { record, onElement: opts.onElement, finish };
      this.#active = turn;
      this.#armBudget(opts.budgetMs);
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });

      const earlier = this.#pending;
      this.#pending = [];
      for (const element of earlier) this.#deliver(turn, element);
      if (!this.isOpen) return finish('engine_closed', this.#closedNote());
      this.#ws.send(line, (err) => {
        if (err) finish('engine_closed', `The line could not be sent: ${err.message}.`);
      });
    });
  }

  /**
   * One budget timer per socket, re-armed as each turn starts (a refresh, not a new timer per
   * turn): when it fires, the turn running is the one that started `budgetMs` ago, and it is cut
   * off; with no turn running it does nothing.
   */
  #armBudget(budgetMs: number): void {
    if (this.#budget !== undefined && this.#budgetMs === budgetMs) {
      this.#budget.refresh();
      return;
    }
    clearTimeout(this.#budget);
    this.#budgetMs = budgetMs;
    this.#budget = setTimeout(
      () => this.#active?.finish('timeout', `The turn was cut off at its ${budgetMs} ms budget before the engine's exit element.`),
      budgetMs,
    ).unref();
  }

  /** A plain close (1000, or 1001 on shutdown): never `#exit`, so the engine runs its end-of-conversation work. */
  close(code: 1000 | 1001 = 1000, reason = ''): void {
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) {
      this.#ws.close(code, reason);
    }
    this.#closed ??= { code, reason, byEngine: false };
    this.#active?.finish('cancelled', 'The conversation was closed while the turn was running.');
    this.#admitted(undefined);
  }

  /** Ends the TCP connection without a close handshake: for an engine that stopped answering. */
  terminate(): void {
    this.#ws.terminate();
  }

  #onFrame(data: WebSocket.RawData, isBinary: boolean): void {
    const element = isBinary ? undefined : parseElement(frameText(data));
    const turn = this.#active;
    if (element === undefined) {
      const note = 'The engine sent a frame that is not a JSON element; it was skipped.';
      if (turn && !turn.record.notes.includes(note)) turn.record.notes.push(note);
      return;
    }
    if (turn) this.#deliver(turn, element);
    else this.#pending.push(element);
  }

  #deliver(turn: ActiveTurn, element: Element): void {
    turn.record.elements.push(element);
    turn.onElement?.(element);
    if (isExit(element)) {
      turn.record.endedByAgent = endsSession(element);
      turn.finish('exit');
      return;
    }
    const failure = engineError(element);
    if (failure) {
      turn.record.refusal = refusalError(failure.code, failure.message, this.#ctx);
      turn.finish('engine_error', `The engine reported ${failure.code}${failure.message ? `: ${failure.message}` : ''}.`);
    }
  }

  /** The session element came; the first turn (or a close before any) settles the admission. */
  #admitted(refusal: GatewayError | undefined): void {
    const listener = this.#onAdmission;
    this.#onAdmission = undefined;
    listener?.(refusal);
  }

  #onSocketClose(code: number, reason: string): void {
    clearTimeout(this.#budget);
    this.#budget = undefined;
    const byEngine = this.#closed === undefined;
    this.#closed ??= { code, reason, byEngine };
    const turn = this.#active;
    if (turn) {
      turn.finish(this.#lastFault ? 'engine_error' : 'engine_closed', this.#closedNote());
      return;
    }
    this.#admitted(undefined);
    if (byEngine) this.#onClose?.(this.#closed);
  }

  #closedNote(): string {
    // The client library closed it, not the engine: the code the engine's side reports (1006) would mislead.
    if (this.#faultCloseCode !== undefined) {
      return `The gateway closed the engine socket with code ${this.#faultCloseCode} before the turn's exit element: ${this.#lastFault}.`;
    }
    const info = this.#closed;
    const how = info ? ` with code ${info.code}${info.reason ? ` (${info.reason})` : ''}` : '';
    return `The engine socket closed${how} before the turn's exit element${this.#lastFault ? `: ${this.#lastFault}` : ''}.`;
  }
}

function cancelNote(reason: unknown): string {
  return typeof reason === 'string' ? reason : 'The turn was cancelled: the caller hung up before it ended.';
}

/** The close code ws sends when it gives up on a frame (its receiver errors); any other WS_ERR_ is a protocol error. */
const WS_FAULT_CLOSE: Record<string, number> = {
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1009,
  WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH: 1009,
  WS_ERR_INVALID_UTF8: 1007,
  WS_ERR_TOO_MANY_BUFFERED_PARTS: 1008,
};

const faultCloseCode = ({ code = '' }: Error & { code?: string }): number | undefined =>
  WS_FAULT_CLOSE[code] ?? (code.startsWith('WS_ERR_') ? 1002 : undefined);

function describeSocketError(err: Error & { code?: string }, maxFrameBytes: number): string {
  if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
    return `the engine sent a frame larger than the configured limit of ${maxFrameBytes} bytes (ENGINE_MAX_FRAME_BYTES)`;
  }
  return err.message;
}

/** Opens the socket and waits for the engine's session element, within one connect budget. */
export function openEngineSocket(
  url: string,
  opts: {
    headers: Record<string, string>;
    timeoutMs: number;
    maxPayload: number;
    ctx: SessionContext;
    onAdmission?: AdmissionListener;
  },
): Promise<EngineSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: opts.headers, perMessageDeflate: false, maxPayload: opts.maxPayload });
    const greeting: Element[] = [];
    let settled = false;
    const fail = (err: GatewayError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
      reject(err);
    };
    const timer = setTimeout(
      () => fail(unavailable(`did not complete the connection and send its session element within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    ws.on('unexpected-response', (req, res) => {
      req.destroy();
      fail(handshakeError(res.statusCode ?? 0, opts.ctx));
    });
    ws.on('error', (err: Error & { code?: string }) => fail(unavailable(`could not be reached (${err.code ?? err.message})`)));
    ws.on('close', (code) => fail(unavailable(`closed the socket (code ${code}) before its session element`)));
    ws.on('message', (data, isBinary) => {
      const element = isBinary ? undefined : parseElement(frameText(data));
      if (element === undefined) return;
      const failure = engineError(element);
      if (failure) {
        fail(
          refusalError(failure.code, failure.message, opts.ctx) ??
            unavailable(`reported ${failure.code} before the session started${failure.message ? `: ${failure.message}` : ''}`),
        );
        return;
      }
      greeting.push(element);
      if (!isSession(element) || settled) return;
      settled = true;
      clearTimeout(timer);
      ws.removeAllListeners();
      resolve(new EngineSocket(ws, greeting, opts.ctx, opts.maxPayload, opts.onAdmission));
    });
  });
}

const unavailable = (what: string) => new GatewayError('engine_unavailable', `The engine ${what}.`);

function handshakeError(status: number, ctx: SessionContext): GatewayError {
  if (status === 401) {
    return ctx.signedIn
      ? new GatewayError(
          'identity_unrecognised',
          'The engine answered 401 to the configured test identity: the configured value is not one this engine has.',
        )
      : new GatewayError('engine_refused', 'The engine answered 401 to an anonymous session.');
  }
  if (status === 404) {
    return new GatewayError('agent_not_found', `The engine has no such agent or no runnable revision for agent:${ctx.agentKey}.`);
  }
  return unavailable(`answered the socket upgrade with HTTP ${status}`);
}
