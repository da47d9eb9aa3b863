import type { ChatMessage } from '../../model/client.js';
import type { SimulatedUser } from '../spec/format.js';
import type { AttemptReport, CriterionResult, Responsibility, TurnReport } from '../report/run-report.js';
import { describeExpectation } from '../report/wording.js';
import { transcriptText } from './prompts.js';

/**
 * The prompt of a failed attempt's review (`failure_review`): the simulated user's persona, goal
 * and facts, the transcript as the judge saw it, the criteria with their rulings and reasoning,
 * and the expectations that failed; and the check of its answer, which is untrusted input.
 * docs/simulated-users.md quotes the instructions; PROMPT_VERSION changes with them.
 */

const RESPONSIBLE: readonly Responsibility[] = ['agent', 'simulated_user', 'judge', 'unclear'];

const REVIEW_INSTRUCTIONS = [
  'A test of a conversational agent failed. The test has up to three parties: the agent under test, a simulated user (a ' +
    'model playing a user with a persona, a goal and facts) and a judge (a model ruling on plain-language criteria). Decide ' +
    'who is responsible for the failure, using only what is below.',
  '- "agent": the agent did not do what the criteria or expectations ask, although the user gave it what it needed.',
  '- "simulated_user": the simulated user spoiled the test: it left its persona or goal, contradicted its facts, stopped ' +
    'before stating its goal, or said something no real user with this goal would say.',
  '- "judge": the transcript shows a criterion holds (or fails) and the judge ruled otherwise.',
  '- "unclear": the transcript cannot tell.',
  'Answer with JSON: {"responsible": "agent" | "simulated_user" | "judge" | "unclear", "turn": <the turn where it went wrong, ' +
    'counted from 1, or null>, "reason": "<one sentence>"}.',
].join('\n');

/** A reason is one sentence: a model that writes more is cut here. */
const MAX_REASON = 500;

const rulingText = (c: CriterionResult, turn: number | null): string =>
  `- ${c.id}${turn === null ? '' : ` (turn ${turn})`}: ${c.text} → ${c.verdict}: ${c.reasoning ?? '(no reasoning)'}`;

function failedExpectations(attempt: Pick<AttemptReport, 'turns' | 'expectations'>): string[] {
  const turnLevel = attempt.turns.flatMap((t) =>
    t.expectations.filter((e) => e.passed === false).map((e) => `- turn ${t.index}: ${describeExpectation(e)} (${e.evidence})`),
  );
  const conversation = attempt.expectations
    .filter((e) => e.passed === false)
    .map((e) => `- conversation: ${describeExpectation(e)} (${e.evidence})`);
  return [...turnLevel, ...conversation];
}

export function reviewMessages(
  user: SimulatedUser | undefined,
  attempt: Pick<AttemptReport, 'turns' | 'expectations' | 'criteria'>,
): ChatMessage[] {
  const facts = Object.entries(user?.facts ?? {});
  const who =
    user === undefined
      ? ['Simulated user: none (every user line was scripted).']
      : [
          'Simulated user:',
          'Persona:',
          user.persona,
          'Goal:',
          user.goal,
          'Facts it may reveal:',
          ...(facts.length === 0 ? ['(none)'] : facts.map(([key, value]) => `- ${key}: ${value}`)),
        ];
  const rulings = [
    ...attempt.turns.flatMap((t) => t.criteria.map((c) => rulingText(c, t.index))),
    ...attempt.criteria.map((c) => rulingText(c, null)),
  ];
  const failed = failedExpectations(attempt);
  return [
    { role: 'system', content: REVIEW_INSTRUCTIONS },
    {
      role: 'user',
      content: [
        ...who,
        '',
        'Transcript:',
        transcriptText(attempt.turns),
        '',
        'Criteria and the judge’s rulings:',
        ...(rulings.length === 0 ? ['(none)'] : rulings),
        '',
        'Expectations that failed:',
        ...(failed.length === 0 ? ['(none)'] : failed),
      ].join('\n'),
    },
  ];
}

export const REVIEW_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['responsible', 'turn', 'reason'],
  properties: {
    responsible: { type: 'string', enum: RESPONSIBLE },
    turn: { type: ['integer', 'null'] },
    reason: { type: 'string' },
  },
};

export interface ReviewAnswer {
  responsible: Responsibility;
  turn: number | null;
  reason: string;
}

/** The review's answer, or what is wrong with it: `turn` must be one of the transcript's turns. */
export function checkReview(answer: unknown, turns: TurnReport[]): ReviewAnswer | string {
  const a = answer as { responsible?: unknown; turn?: unknown; reason?: unknown } | null;
  if (typeof a !== 'object' || a === null) return 'the review is not {"responsible", "turn", "reason"} (failure_review)';
  if (!RESPONSIBLE.includes(a.responsible as Responsibility))
    return `the review names an unknown responsible party ${JSON.stringify(a.responsible)}`;
  const last = turns.length;
  if (a.turn !== null && !(Number.isInteger(a.turn) && (a.turn as number) >= 1 && (a.turn as number) <= last))
    return `the review's turn ${JSON.stringify(a.turn)} is not a turn of the transcript (1–${last}) or null`;
  if (typeof a.reason !== 'string' || a.reason.trim() === '') return "the review's reason is not a sentence";
  const reason = a.reason.trim().replace(/\s+/g, ' ');
  return {
    responsible: a.responsible as Responsibility,
    turn: a.turn as number | null,
    reason: reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}…` : reason,
  };
}
