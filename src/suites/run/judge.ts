import type { Criterion } from '../spec/format.js';
import { unjudged, type CriterionResult, type TurnReport } from '../report/run-report.js';
import { askModel, type AttemptError, type AttemptModel } from './model-calls.js';
import { checkVerdicts, judgeMessages, judgeSchema, type MemoryEvidence } from './prompts.js';

const JUDGE_TEMPERATURE = 0;

/** The judge's rulings, one per criterion; with `error` when the judge failed (every criterion then unjudged). */
export interface Judgement {
  criteria: CriterionResult[];
  error?: AttemptError;
}

/**
 * Rules on criteria over the turns so far (and the memory the conversation left, for memory
 * criteria), in one call at temperature 0 with the run's seed. The gateway, not the judge, turns
 * rulings into passes: only `passed` passes.
 */
export async function judge(asker: AttemptModel, turns: TurnReport[], criteria: Criterion[], memory?: MemoryEvidence): Promise<Judgement> {
  const ids = criteria.map((c) => c.id);
  const answer = await askModel(asker, {
    role: 'judge',
    model: undefined,
    temperature: JUDGE_TEMPERATURE,
    seed: asker.seed,
    messages: judgeMessages(turns, criteria, memory),
    schemaName: 'judge_verdict',
    schema: judgeSchema(ids),
    check: (rulings) => checkVerdicts(rulings, ids),
  });
  if (answer.error !== undefined) return { criteria: criteria.map((c) => unjudged(c, answer.error.message)), error: answer.error };
  const rulings = answer.value;
  return {
    criteria: criteria.map((c) => {
      const r = rulings.get(c.id)!;
      return { id: c.id, text: c.text, verdict: r.verdict, passed: r.verdict === 'passed', reasoning: r.reasoning };
    }),
  };
}
