import { lineSchema } from '../../schemas/connect.js';
import type { SimulatedUser, SuiteConversation } from '../spec/format.js';
import type { AttemptReport, AttemptReview } from '../report/run-report.js';
import { quote } from './expectations.js';
import { askModel, type AttemptModel } from './model-calls.js';
import { checkReview, REVIEW_SCHEMA, reviewMessages } from './review-prompt.js';

// Whose failure is it: a failed attempt whose conversation has a simulated user or criteria is
// reviewed — deterministic checks of the simulated user first, then one model call — and an
// attempt the simulated user spoiled is `invalid`, left out like an error.

const REVIEW_TEMPERATURE = 0;

/** Words too common to say anything of a goal. */
const COMMON = new Set([
  ...'about after again also because been before being could does done from have into just like make more most much need'.split(' '),
  ...'only other over please same should some such than that their them then there these they this very want what when'.split(' '),
  ...'where which while will with would your'.split(' '),
]);

/** A goal's telling words: four letters or more, not among the commonest. */
const goalWords = (goal: string): string[] =>
  [...goal.toLowerCase().matchAll(/[\p{L}\p{N}]{4,}/gu)].map((m) => m[0]).filter((w) => !COMMON.has(w));

const normalized = (line: string): string => line.toLowerCase().replace(/\s+/g, ' ').trim();

const FAREWELL = /\b(bye|goodbye|that is all|that's all|never mind)\b/i;

/** Whether a conversation's failures are reviewed: it has a simulated user or something for a judge. */
export const reviewable = (conv: SuiteConversation): boolean =>
  conv.attack === undefined &&
  (conv.simulatedUser !== undefined || conv.criteria.length > 0 || conv.turns.some((t) => t.judge !== undefined));

const byChecks = (turn: number, reason: string): AttemptReview => ({
  responsible: 'simulated_user',
  turn,
  reason,
  by: 'checks',
  note: null,
});

/**
 * The deterministic checks of the simulated user over its sent lines: a line the line rules
 * refuse, a line it said before, or a conversation that ended on its line (done, or a farewell
 * the agent closed on) before `min_turns` lines or before any line said anything of its goal.
 * The first that fires, or undefined.
 */
export function checkSimulatedUser(user: SimulatedUser, attempt: Pick<AttemptReport, 'turns' | 'stop_reason'>): AttemptReview | undefined {
  const sent = attempt.turns.filter((t) => t.status !== 'skipped' && t.outcome !== 'error');
  const lines = sent.filter((t) => t.source === 'simulated_user');
  if (lines.length === 0) return undefined;
  for (const turn of lines) {
    const parsed = lineSchema.safeParse(turn.line);
    if (!parsed.success) {
      return byChecks(
        turn.index,
        `The simulated user sent ${quote(turn.line)}, which the line rules refuse: ${parsed.error.issues[0]!.message}.`,
      );
    }
  }
  for (const [k, turn] of lines.entries()) {
    const earlier = lines.slice(0, k).find((t) => normalized(t.line) === normalized(turn.line));
    if (earlier !== undefined)
      return byChecks(turn.index, `The simulated user repeated its line of turn ${earlier.index}, ${quote(turn.line)}.`);
  }
  const last = sent.at(-1)!;
  const endedOnItsLine =
    last.source === 'simulated_user' &&
    (attempt.stop_reason === 'user_done' || (attempt.stop_reason === 'agent_ended' && FAREWELL.test(last.line)));
  if (!endedOnItsLine && attempt.stop_reason !== 'user_done') return undefined;
  if (lines.length < user.minTurns) {
    return byChecks(last.index, `The simulated user ended the conversation after ${lines.length} of its min_turns ${user.minTurns} lines.`);
  }
  const words = goalWords(user.goal);
  const said = lines.map((t) => t.line.toLowerCase()).join('\n');
  if (words.length > 0 && !words.some((w) => said.includes(w))) {
    return byChecks(last.index, `The simulated user ended the conversation at turn ${last.index} without saying anything of its goal.`);
  }
  return undefined;
}

/**
 * Who is responsible for a failed attempt: the simulated user when a deterministic check fires,
 * else the model's `failure_review` (the run's seed, temperature 0, its usage counted into the
 * attempt's). An answer outside the schema, or none, is `unclear` with a note saying why.
 */
export async function reviewFailure(asker: AttemptModel, conv: SuiteConversation, attempt: AttemptReport): Promise<AttemptReview> {
  const user = conv.simulatedUser;
  const checked = user === undefined ? undefined : checkSimulatedUser(user, attempt);
  if (checked !== undefined) return checked;
  const answer = await askModel(asker, {
    role: 'judge',
    model: undefined,
    temperature: REVIEW_TEMPERATURE,
    seed: asker.seed,
    messages: reviewMessages(user, attempt),
    schemaName: 'failure_review',
    schema: REVIEW_SCHEMA,
    check: (review) => checkReview(review, attempt.turns),
  });
  if (answer.error !== undefined) {
    return {
      responsible: 'unclear',
      turn: null,
      reason: 'The review gave no usable answer.',
      by: 'model',
      note: answer.error.message,
    };
  }
  return { ...answer.value, by: 'model', note: null };
}
