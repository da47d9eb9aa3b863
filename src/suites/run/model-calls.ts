import { ModelFailure, type ModelClient, type ModelRequest } from '../../model/client.js';
import type { ErrorCode } from '../../errors.js';
import { addUsage, type ModelUsage } from '../report/run-report.js';

/** Why an attempt could not go on, as its report's `error` says it. */
export interface AttemptError {
  error: ErrorCode;
  message: string;
}

/** A model's answer, or why there is none (the attempt is then an error, not a failure). */
export type ModelAnswer<T> = { value: T; error?: undefined } | { value?: undefined; error: AttemptError };

/** The model as an attempt asks it: usage counted into the attempt's, a failure (after the adapter's one retry) worded. */
export interface AttemptModel {
  model: ModelClient | undefined;
  usage: ModelUsage;
  seed: number;
}

/** One model call for an attempt: its usage counted, a failure answered as the attempt's error. */
export async function askModel<T>(asker: AttemptModel, req: ModelRequest<T>): Promise<ModelAnswer<T>> {
  if (asker.model === undefined) {
    return { error: { error: 'model_not_configured', message: 'No model is configured on this gateway (MODEL_BASE_URL).' } };
  }
  try {
    const { value, usage } = await asker.model.ask(req);
    addUsage(asker.usage, usage);
    return { value };
  } catch (err) {
    if (!(err instanceof ModelFailure)) throw err;
    addUsage(asker.usage, err.usage);
    const what = req.schemaName === 'failure_review' ? 'The failure review' : req.role === 'judge' ? 'The judge' : 'The simulated user';
    return { error: { error: 'model_failed', message: `${what} could not answer: ${err.message}.` } };
  }
}
