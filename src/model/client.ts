import { createJsonClient, UpstreamError } from '../http/json-client.js';
import type { ModelConfig } from '../ops/config.js';
import type { MODEL_OUTCOMES, MODEL_ROLES, Metrics } from '../ops/metrics.js';

// The model adapter, the one module that knows the wire (docs/simulated-users.md, "The model
// API"): OpenAI-compatible `POST {MODEL_BASE_URL}/chat/completions`, no streaming, a JSON-schema
// answer (`strict`), the run's seed and the call's temperature. An answer that fails (an HTTP
// error, no answer in time, unreachable) or is not the JSON asked for is retried once; the
// second failure is thrown as a ModelFailure. The key goes in the Authorization header only.

export type ModelRole = (typeof MODEL_ROLES)[number];
export type ModelOutcome = (typeof MODEL_OUTCOMES)[number];

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ModelRequest<T> {
  role: ModelRole;
  /** the suite's model name, else the configured one for the role */
  model: string | undefined;
  temperature: number;
  seed: number;
  messages: ChatMessage[];
  schemaName: 'simulated_user_turn' | 'judge_verdict' | 'failure_review';
  schema: Record<string, unknown>;
  /** The answer as asked for, or a sentence saying what is wrong with it. */
  check: (answer: unknown) => T | string;
}

export interface Usage {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  duration_ms: number;
}

export class ModelFailure extends Error {
  constructor(
    readonly outcome: Exclude<ModelOutcome, 'ok'>,
    message: string,
    /** the calls made, failed ones too */
    readonly usage: Usage,
  ) {
    super(message);
    this.name = 'ModelFailure';
  }
}

export interface ModelClient {
  ask<T>(req: ModelRequest<T>): Promise<{ value: T; usage: Usage }>;
  close(): Promise<void>;
}

const ATTEMPTS = 2;

interface Answer {
  choices?: Array<{ message?: { content?: unknown; refusal?: unknown } }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
  error?: { message?: unknown };
}

const tokens = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n >= 0 ? Math.round(n) : 0);

export function createModelClient(config: ModelConfig, metrics: Metrics): ModelClient {
  const http = createJsonClient(config.baseUrl, { timeoutMs: config.timeoutMs, connections: 16 });
  const headers: Record<string, string> = config.apiKey === undefined ? {} : { authorization: `Bearer ${config.apiKey}` };

  /** One call: the parsed, checked answer, or why not. */
  async function once<T>(
    req: ModelRequest<T>,
    usage: Usage,
  ): Promise<{ ok: true; value: T } | { ok: false; outcome: Exclude<ModelOutcome, 'ok'>; why: string }> {
    const started = performance.now();
    const model = req.model ?? (req.role === 'judge' ? config.judgeModel : config.simulatorModel);
    let outcome: ModelOutcome = 'ok';
    try {
      const res = await http.request({
        method: 'POST',
        path: '/chat/completions',
        template: '/chat/completions',
        headers,
        body: {
          model,
          temperature: req.temperature,
          seed: req.seed,
          messages: req.messages,
          response_format: { type: 'json_schema', json_schema: { name: req.schemaName, strict: true, schema: req.schema } },
        },
      });
      const body = (res.body ?? {}) as Answer;
      const prompt = tokens(body.usage?.prompt_tokens);
      const completion = tokens(body.usage?.completion_tokens);
      usage.prompt_tokens += prompt;
      usage.completion_tokens += completion;
      metrics.modelTokens.inc({ role: req.role, kind: 'prompt' }, prompt);
      metrics.modelTokens.inc({ role: req.role, kind: 'completion' }, completion);
      if (res.status !== 200) {
        outcome = 'http_error';
        return { ok: false, outcome, why: `the model answered HTTP ${res.status}` };
      }
      const content = body.choices?.[0]?.message?.content;
      if (typeof content !== 'string') {
        outcome = 'invalid_answer';
        const refused = body.choices?.[0]?.message?.refusal;
        return {
          ok: false,
          outcome,
          why: typeof refused === 'string' ? 'the model refused to answer' : 'the model answered no message content',
        };
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(content);
      } catch {
        outcome = 'invalid_answer';
        return { ok: false, outcome, why: `the model's answer is not JSON (${req.schemaName} was asked for)` };
      }
      const checked = req.check(parsed);
      if (typeof checked === 'string') {
        outcome = 'invalid_answer';
        return { ok: false, outcome, why: checked };
      }
      return { ok: true, value: checked };
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      outcome = err.failure === 'timeout' ? 'timeout' : err.failure === 'malformed' ? 'http_error' : 'unreachable';
      return {
        ok: false,
        outcome,
        why:
          err.failure === 'timeout'
            ? `the model did not answer within ${config.timeoutMs} ms`
            : err.failure === 'malformed'
              ? 'the model answered a body that is not JSON'
              : 'the model could not be reached',
      };
    } finally {
      const seconds = (performance.now() - started) / 1000;
      usage.calls += 1;
      usage.duration_ms += Math.round(seconds * 1000);
      metrics.modelRequests.inc({ role: req.role, outcome });
      metrics.modelRequestDuration.observe({ role: req.role }, seconds);
    }
  }

  return {
    async ask(req) {
      const usage: Usage = { calls: 0, prompt_tokens: 0, completion_tokens: 0, duration_ms: 0 };
      let last: { outcome: Exclude<ModelOutcome, 'ok'>; why: string } | undefined;
      for (let i = 0; i < ATTEMPTS; i++) {
        const result = await once(req, usage);
        if (result.ok) return { value: result.value, usage };
        last = result;
      }
      throw new ModelFailure(last!.outcome, `${last!.why} (asked twice)`, usage);
    },
    close: () => http.close(),
  };
}
