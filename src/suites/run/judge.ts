import type { Criterion } from '../spec/format.js';
import { unjudged, type CriterionResult, type CriterionVerdict, type TurnReport } from '../report/run-report.js';
import { askModel, type AttemptError, type AttemptModel } from './model-calls.js';
import { checkVerdicts, judgeMessages, judgeSchema, type MemoryEvidence } from './prompts.js';

const JUDGE_TEMPERATURE = 0;

/** The judge's rulings, one per criterion; with `error` when the judge failed (every criterion then unjudged). */
export interface Judgement {
  criteria: CriterionResult[];
  error?: AttemptError;
}

/** A large prime apart, vote by vote: the k-th vote's seed (the first is the run's own). */
const SEED_STEP = 1_000_003;
const SEEDS = 2 ** 31;
export const voteSeed = (seed: number, vote: number): number => (seed + vote * SEED_STEP) % SEEDS;

type Ballot = { verdict: CriterionVerdict; reasoning: string };

/**
 * The majority of a criterion's votes: the verdict more than half of them gave, else
 * `inconclusive`; `agreement` is the votes for it (the largest count when none has a majority),
 * and the reasoning the first such vote's.
 */
export function majority(criterion: Criterion, ballots: Ballot[]): CriterionResult {
  const counts = new Map<CriterionVerdict, number>();
  for (const b of ballots) counts.set(b.verdict, (counts.get(b.verdict) ?? 0) + 1);
  const [top, most] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
  const verdict: CriterionVerdict = most * 2 > ballots.length ? top : 'inconclusive';
  const tally = ['passed', 'failed', 'inconclusive'].map((v) => `${counts.get(v as CriterionVerdict) ?? 0} ${v}`).join(', ');
  const reasoning =
    most * 2 > ballots.length
      ? ballots.find((b) => b.verdict === verdict)!.reasoning
      : `The judge's votes split with no majority: ${tally}.`;
  return {
    id: criterion.id,
    text: criterion.text,
    verdict,
    passed: verdict === 'passed',
    reasoning,
    votes: ballots.length,
    agreement: most,
    split: most < ballots.length,
  };
}

/**
 * Rules on criteria over the turns so far (and the memory the conversation left, for memory
 * criteria): one call per vote (each criterion is asked as many
 * times as its `votes`), at temperature 0, the k-th with the k-th seed derived from the run's.
 * The gateway, not the judge, turns rulings into passes: only a majority of `passed` passes.
 */
export async function judge(asker: AttemptModel, turns: TurnReport[], criteria: Criterion[], memory?: MemoryEvidence): Promise<Judgement> {
  const rounds = Math.max(...criteria.map((c) => c.votes));
  const answers = await Promise.all(
    Array.from({ length: rounds }, (_, vote) => {
      const asked = criteria.filter((c) => c.votes > vote);
      const ids = asked.map((c) => c.id);
      return askModel(asker, {
        role: 'judge',
        model: undefined,
        temperature: JUDGE_TEMPERATURE,
        seed: voteSeed(asker.seed, vote),
        messages: judgeMessages(turns, asked, memory),
        schemaName: 'judge_verdict',
        schema: judgeSchema(ids),
        check: (rulings) => checkVerdicts(rulings, ids),
      });
    }),
  );
  const failed = answers.find((a) => a.error !== undefined)?.error;
  if (failed !== undefined) return { criteria: criteria.map((c) => unjudged(c, failed.message)), error: failed };
  return {
    criteria: criteria.map((c) =>
      majority(
        c,
        answers.slice(0, c.votes).map((a) => a.value!.get(c.id)!),
      ),
    ),
  };
}
