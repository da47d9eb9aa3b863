import { ModelFailure, type ModelRequest } from '../model/client.js';
import { INTRO, lineSchema } from '../schemas/connect.js';
import type { AttemptRun } from './attempt.js';
import { CANCELLED } from './cancel.js';
import { quote } from './expectations.js';
import type { Criterion, SimulatedUser } from './format.js';
import { checkSimulatedTurn, checkVerdicts, judgeMessages, judgeSchema, SIMULATED_USER_SCHEMA, simulatorMessages } from './prompts.js';
import { addUsage, unjudged, type CriterionResult, type TurnReport } from './report.js';

// The model's two parts in an attempt: the simulated user, who answers what the agent actually
// said, and the judge, who rules on criteria over the transcript. A model failure (after the
// adapter's one retry) ends the attempt as an error, not a failure.

const JUDGE_TEMPERATURE = 0;

/** One model call for the attempt: its usage counted, a failure turned into the attempt's error. */
async function ask<T>(run: AttemptRun, req: ModelRequest<T>): Promise<T | undefined> {
  const { model } = run.ctx;
  if (model === undefined) {
    run.fail({ error: 'model_not_configured', message: 'No model is configured on this gateway (MODEL_BASE_URL).' });
    return undefined;
  }
  try {
    const { value, usage } = await model.ask(req);
    addUsage(run.report.model_usage, usage);
    return value;
  } catch (err) {
    if (!(err instanceof ModelFailure)) throw err;
    addUsage(run.report.model_usage, err.usage);
    const what = req.role === 'judge' ? 'The judge' : 'The simulated user';
    run.fail({ error: 'model_failed', message: `${what} could not answer: ${err.message}.` });
    return undefined;
  }
}

/** Rules on criteria over the turns so far; undefined when the judge failed (the attempt is then an error). */
export async function judge(run: AttemptRun, turns: TurnReport[], criteria: Criterion[]): Promise<CriterionResult[]> {
  if (run.report.error !== null) return criteria.map((c) => unjudged(c, 'the attempt could not go on'));
  const ids = criteria.map((c) => c.id);
  const rulings = await ask(run, {
    role: 'judge',
    model: undefined,
    temperature: JUDGE_TEMPERATURE,
    seed: run.state.seed,
    messages: judgeMessages(turns, criteria),
    schemaName: 'judge_verdict',
    schema: judgeSchema(ids),
    check: (answer) => checkVerdicts(answer, ids),
  });
  if (rulings === undefined) return criteria.map((c) => unjudged(c, run.report.error?.message ?? 'the judge failed'));
  return criteria.map((c) => {
    const r = rulings.get(c.id)!;
    return { id: c.id, text: c.text, verdict: r.verdict, passed: r.verdict === 'passed', reasoning: r.reasoning };
  });
}

/**
 * The simulated user's lines, after the scripted turns (or after the agent's #intro when there
 * were none), over the same socket: one model call per line; each line passes the line rules
 * before it is sent. It stops when the user is done (at or after min_turns), the agent ends the
 * conversation, a turn fails, max_turns is reached, or the model fails.
 */
export async function simulateUser(run: AttemptRun, user: SimulatedUser): Promise<void> {
  const { ctx } = run;
  if (run.report.turns.length === 0) await run.say(INTRO, 'script', {}, 0);
  let said = 0;
  while (run.skip === undefined) {
    if (ctx.signal.aborted) {
      run.skip = CANCELLED;
      return;
    }
    if (said >= user.maxTurns) {
      run.stop = 'max_turns';
      return;
    }
    const answer = await ask(run, {
      role: 'simulator',
      model: user.model,
      temperature: user.temperature,
      seed: run.state.seed,
      messages: simulatorMessages(user, run.report.turns),
      schemaName: 'simulated_user_turn',
      schema: SIMULATED_USER_SCHEMA,
      check: checkSimulatedTurn,
    });
    if (answer === undefined) return;
    if (answer.done && said >= user.minTurns) {
      run.stop = 'user_done';
      return;
    }
    const line = lineSchema.safeParse(answer.line);
    const rule = !line.success
      ? line.error.issues[0]!.message
      : line.data === INTRO
        ? 'line may not be #intro: only the gateway opens with it'
        : undefined;
    if (rule !== undefined) {
      run.fail({ error: 'model_failed', message: `The simulated user's line ${quote(answer.line)} was not sent: ${rule}.` });
      return;
    }
    said += 1;
    await run.say(line.data!, 'simulated_user', {}, 0);
  }
}
