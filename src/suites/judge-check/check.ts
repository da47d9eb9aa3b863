import { randomInt } from 'node:crypto';
import type { components } from '../../api/report-shapes.js';
import type { ModelClient } from '../../model/client.js';
import { cohenKappa } from '../../stats/index.js';
import { noUsage, type CriterionResult } from '../report/run-report.js';
import { judge } from '../run/judge.js';
import type { AttemptModel } from '../run/model-calls.js';
import { PROMPT_VERSION } from '../run/prompts.js';
import type { Criterion } from '../spec/format.js';
import type { CheckItem, JudgeCheckInput, Label } from './input.js';

// A judge-check: the gateway's judge rules again on transcripts a person labelled, as it rules in
// a run (judge.ts: the same prompt, votes and seeds), and the rulings are set against the labels.

type Schemas = components['schemas'];
export type JudgeCheckReport = Schemas['JudgeCheckReport'];
type JudgeAgreement = Schemas['JudgeAgreement'];
type JudgeDisagreement = Schemas['JudgeDisagreement'];

const MAX_DRAWN_SEED = 2 ** 31 - 1;
/** Judge calls of one check at once: a check of hundreds of rulings must not flood the model. */
const CONCURRENCY = 4;

/** One labelled ruling and what the judge made of it (undefined: it could not rule). */
interface Compared {
  item: CheckItem;
  criterion: Criterion;
  label: Label;
  ruling: CriterionResult | undefined;
}

/** Runs `work` over `items`, at most `limit` at once, answers in input order. */
async function limited<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

const share = (part: number, whole: number): number | null => (whole === 0 ? null : part / whole);

/** The person's labels against the judge's rulings: the 2×2 table, agreement, κ and the error rates. */
function agreementOf(compared: Compared[]): JudgeAgreement {
  const judged = compared.filter((c) => c.ruling !== undefined);
  const count = (label: Label, passed: boolean) => judged.filter((c) => c.label === label && c.ruling!.passed === passed).length;
  const bothPassed = count('passed', true);
  const bothFailed = count('failed', false);
  const falsePasses = count('failed', true);
  const falseFails = count('passed', false);
  // Rows: the person (passed, failed); columns: the judge.
  const kappa = cohenKappa([
    [bothPassed, falseFails],
    [falsePasses, bothFailed],
  ]);
  const labelClasses = [bothPassed + falseFails, falsePasses + bothFailed];
  const note =
    judged.length === 0
      ? 'undefined: no ruling was compared'
      : kappa.estimate === null
        ? `undefined: every label is ${labelClasses[0]! > 0 ? 'passed' : 'failed'}, so chance agreement is the judge's own rate; ` +
          `label rulings of both kinds`
        : kappa.low === null
          ? `0 by construction: the judge ruled every one ${bothPassed + falsePasses > 0 ? 'passed' : 'not passed'} ` +
            'and tells nothing apart; no interval'
          : null;
  return {
    compared: judged.length,
    not_judged: compared.length - judged.length,
    both_passed: bothPassed,
    both_failed: bothFailed,
    false_passes: falsePasses,
    false_fails: falseFails,
    agreement: share(bothPassed + bothFailed, judged.length),
    kappa: { estimate: kappa.estimate, standard_error: kappa.standardError, low: kappa.low, high: kappa.high, note },
    false_pass_rate: share(falsePasses, falsePasses + bothFailed),
    false_fail_rate: share(falseFails, bothPassed + falseFails),
  };
}

const disagreement = (c: Compared): JudgeDisagreement => ({
  item: c.item.where,
  turn: c.item.turn,
  label: c.label,
  verdict: c.ruling!.verdict,
  reasoning: c.ruling!.reasoning ?? '',
  votes: c.ruling!.votes,
  agreement: c.ruling!.agreement,
});

/**
 * Has the judge rule on every labelled transcript (one `judge` per item: its votes, seeds derived
 * from the check's, usage counted) and sets its rulings against the labels, per criterion (its id
 * and text) and over all. A judge that could not answer leaves that item's rulings not judged, said
 * in the notes; it never fails the check.
 */
export async function checkJudge(model: ModelClient | undefined, input: JudgeCheckInput): Promise<JudgeCheckReport> {
  const seed = input.seed ?? randomInt(MAX_DRAWN_SEED);
  const asker: AttemptModel = { model, usage: noUsage(), seed };
  const judged = await limited(input.items, CONCURRENCY, async (item) => {
    const judgement = await judge(asker, item.turns, item.criteria, item.memory);
    const note = judgement.error === undefined ? [] : [`${item.where}: not judged: ${judgement.error.message}`];
    const compared = item.criteria.map((criterion, i): Compared => ({
      item,
      criterion,
      label: item.labels.get(criterion.id)!,
      ruling: judgement.error === undefined ? judgement.criteria[i] : undefined,
    }));
    return { compared, note };
  });
  const all = judged.flatMap((j) => j.compared);
  const notes = judged.flatMap((j) => j.note);
  const byCriterion = new Map<string, { id: string; text: string; compared: Compared[] }>();
  for (const c of all) {
    const { id, text } = c.criterion;
    const key = `${id}\n${text}`;
    const entry = byCriterion.get(key) ?? { id, text, compared: [] };
    entry.compared.push(c);
    byCriterion.set(key, entry);
  }
  const criteria = [...byCriterion.values()].map(({ id, text, compared }) => ({
    id,
    text,
    statistics: agreementOf(compared),
    disagreements: compared.filter((c) => c.ruling !== undefined && c.ruling.passed !== (c.label === 'passed')).map(disagreement),
  }));
  const overall = agreementOf(all);
  const min = input.minAgreement;
  const rated = criteria.filter((c) => c.statistics.agreement !== null);
  return {
    agents: input.agents.map((a) => `agent:${a.key}`),
    seed,
    prompt_version: PROMPT_VERSION,
    labelled: all.length,
    min_agreement: min ?? null,
    meets_min_agreement: min === undefined || rated.length === 0 ? null : rated.every((c) => c.statistics.agreement! >= min),
    overall,
    criteria,
    model_usage: asker.usage,
    notes,
  };
}
