import { INTRO, lineSchema } from '../../schemas/connect.js';
import type { SimulatedUser } from '../spec/format.js';
import type { TurnReport } from '../report/run-report.js';
import { quote } from './expectations.js';
import { askModel, type AttemptError, type AttemptModel } from './model-calls.js';
import { checkSimulatedTurn, SIMULATED_USER_SCHEMA, simulatorMessages } from './prompts.js';

/** What the simulated user does next: say a line, stop (done, or out of lines), or fail the attempt. */
export type SimulatedStep = { line: string } | { stop: 'user_done' | 'max_turns' } | { error: AttemptError };

/**
 * The simulated user's next step after `said` lines, from one model call over the conversation so
 * far. A "done" before min_turns is ignored; the line must pass the line rules (never a `#` line,
 * a control character or an over-long line), else the attempt is an error naming the line.
 */
export async function nextStep(asker: AttemptModel, user: SimulatedUser, turns: TurnReport[], said: number): Promise<SimulatedStep> {
  if (said >= user.maxTurns) return { stop: 'max_turns' };
  const answer = await askModel(asker, {
    role: 'simulator',
    model: user.model,
    temperature: user.temperature,
    seed: asker.seed,
    messages: simulatorMessages(user, turns),
    schemaName: 'simulated_user_turn',
    schema: SIMULATED_USER_SCHEMA,
    check: checkSimulatedTurn,
  });
  if (answer.error !== undefined) return { error: answer.error };
  const { line, done } = answer.value;
  if (done && said >= user.minTurns) return { stop: 'user_done' };
  const checked = lineRule(line);
  if ('rule' in checked)
    return { error: { error: 'model_failed', message: `The simulated user's line ${quote(line)} was not sent: ${checked.rule}.` } };
  return checked;
}

/** A model's line as the gateway would send it, or the line rule it breaks (a `#` line, a control character, too long). */
export function lineRule(line: string): { line: string } | { rule: string } {
  const parsed = lineSchema.safeParse(line);
  if (!parsed.success) return { rule: parsed.error.issues[0]!.message };
  return parsed.data === INTRO ? { rule: 'line may not be #intro: only the gateway opens with it' } : { line: parsed.data };
}
