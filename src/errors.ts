/**
 * One error type for the whole service. Its `code` is the API's `error` field and decides the
 * HTTP status through the single table below, so callers (and code) switch on codes, never on
 * messages.
 */

/** The HTTP status of every error code: the one table that decides it. */
export const errorStatus = {
  // 400 — bad input; nothing reached the engine.
  invalid_request: 400,
  confirmation_required: 400,
  // 401 / 403 — who the caller is and what it may do.
  unauthenticated: 401,
  forbidden: 403,
  conversation_not_yours: 403,
  run_not_yours: 403,
  // 404
  not_found: 404,
  agent_not_found: 404,
  revision_not_found: 404,
  session_not_found: 404,
  device_not_found: 404,
  run_not_found: 404,
  // 409 — the request is fine but the state forbids it.
  no_published_revision: 409,
  revision_not_runnable: 409,
  turn_in_progress: 409,
  conversation_settings_fixed: 409,
  model_not_configured: 409,
  run_running: 409,
  // 413 / 415
  body_too_large: 413,
  unsupported_media_type: 415,
  // 429 / 503 — limits and availability.
  caller_conversation_limit: 429,
  pod_conversation_limit: 503,
  platform_unavailable: 503,
  identity_not_configured: 503,
  identity_malformed: 503,
  shutting_down: 503,
  run_unavailable: 503,
  // 502 — the engine did not do what was asked.
  engine_unavailable: 502,
  engine_refused: 502,
  // The model (simulated users, judges) did not answer as asked, twice: inside a run's report only.
  model_failed: 502,
  identity_unrecognised: 502,
  identity_not_enabled: 502,
  // 500 — a fault of the gateway itself.
  internal: 500,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return errorStatus[this.code];
  }

  toJSON(): { error: ErrorCode; message: string; details?: unknown } {
    return this.details === undefined
      ? { error: this.code, message: this.message }
      : { error: this.code, message: this.message, details: this.details };
  }
}

export const isGatewayError = (err: unknown): err is GatewayError => err instanceof GatewayError;

/** One broken input rule: the field (a dotted path, or the part: body, path, query) and the rule it breaks. */
export interface Problem {
  field: string;
  rule: string;
}

/**
 * 400 invalid_request for input that breaks one or more rules: the first rule is the message,
 * every problem is in `details.problems`. `outcome` says what did not happen (by default, that
 * nothing was sent to the engine).
 */
export function invalidRequest(problems: readonly [Problem, ...Problem[]], outcome = 'nothing was sent to the engine'): GatewayError {
  return new GatewayError('invalid_request', `${problems[0].rule}; ${outcome}`, { problems });
}

/** 503 shutting_down: this pod drains; `what` is the call to retry elsewhere. */
export const shuttingDown = (what = 'retry on another pod'): GatewayError =>
  new GatewayError('shutting_down', `This gateway pod is shutting down; ${what}.`);
