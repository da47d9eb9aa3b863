import { z } from 'zod';
import type { AgentRef } from '../../domain/vocabulary.js';
import { agentSchema } from '../../schemas/requests.js';
import { turnReport, type TurnReport } from '../report/run-report.js';
import type { Criterion } from '../spec/format.js';
import type { SuiteProblem } from '../spec/problems.js';
import { boundedText, criteriaOf, criterionSchema, listOf, parseWith, seedSchema, votesSchema } from '../spec/schema.js';
import type { MemoryEvidence } from '../run/prompts.js';

// What a judge-check is given, checked: labelled transcripts in one of two forms — run reports in
// which a person set `label: passed | failed` on criteria rulings, or items of a transcript,
// criteria and labels — turned into the judge calls to make. Every problem names its field;
// nothing reaches the model until the whole input holds.

export type Label = 'passed' | 'failed';

/** One judge call of the check: a transcript and the labelled criteria ruled on over it. */
export interface CheckItem {
  /** Where it comes from: `reports[0] "order" attempt 2` or `items[3]` (with its name). */
  where: string;
  /** The turn of a turn criterion (`expect.judge`): the transcript ends there. */
  turn: number | null;
  turns: TurnReport[];
  memory: MemoryEvidence | undefined;
  criteria: Criterion[];
  labels: Map<string, Label>;
}

export interface JudgeCheckInput {
  /** The agents the transcripts are of: the caller needs Viewer on each one's project. */
  agents: AgentRef[];
  seed: number | undefined;
  minAgreement: number | undefined;
  items: CheckItem[];
}

const MAX_REPORTS = 20;
const MAX_ITEMS = 200;
/** Labelled rulings per check: each one costs a judge call per vote. */
const MAX_LABELLED = 500;
const MAX_TEXT_CHARS = 20_000;
const MAX_TURNS = 200;

const labelSchema = z.enum(['passed', 'failed'], { error: "must be passed or failed (the person's ruling)" });

const minAgreementSchema = z
  .number({ error: 'must be a fraction between 0 and 1' })
  .min(0, { error: 'must be at least 0' })
  .max(1, { error: 'must be at most 1 (a fraction: 0.8, not 80)' });

// A run report is read loosely: only what the judge needs, and the labels; the rest is left as written.
const reportCriterion = z.looseObject({
  id: z.string(),
  text: z.string(),
  votes: z.int().min(0).max(5),
  label: labelSchema.optional(),
});
const reportTurn = z.looseObject({
  index: z.int().min(1),
  line: z.string(),
  source: z.enum(['script', 'simulated_user']),
  status: z.enum(['passed', 'failed', 'skipped']),
  outcome: z.string().nullable(),
  text: z.string().nullable(),
  tools: z.array(z.string()),
  shown: z.array(z.string()),
  ended_by_agent: z.boolean(),
  criteria: z.array(reportCriterion),
});
const memoryUnits = z.array(z.record(z.string(), z.unknown()));
const reportAttempt = z.looseObject({
  attempt: z.int().min(1),
  turns: z.array(reportTurn),
  criteria: z.array(reportCriterion),
  memory: z.looseObject({ added: memoryUnits, removed: memoryUnits, criteria: z.array(reportCriterion) }).nullable(),
});
/** A report's `agent` is the engine key (`agent:coach.3`): the agent ref after `agent:`. */
const reportAgent = z
  .string({ error: 'must be the agent key of the run, such as agent:coach' })
  .regex(/^agent:/, { error: 'must be the agent key of the run, such as agent:coach' })
  .transform((key) => key.slice('agent:'.length))
  .pipe(agentSchema);
const reportSchema = z.looseObject(
  {
    agent: reportAgent,
    seed: z.int().min(0),
    conversations: z.array(z.looseObject({ name: z.string(), attempts: z.array(reportAttempt) })),
  },
  { error: 'must be a run report (the JSON of run --json, or of the runs route)' },
);

const transcriptTurn = z.strictObject({
  user: boundedText(MAX_TEXT_CHARS),
  agent: z
    .string({ error: 'must be a string: what the agent said' })
    .max(MAX_TEXT_CHARS, { error: `must be at most ${MAX_TEXT_CHARS} characters` }),
  tools: z.array(z.string({ error: 'must be a string' }), { error: 'must be a list of tool names' }).optional(),
  shown: z.array(z.string({ error: 'must be a string' }), { error: 'must be a list of element refs' }).optional(),
  ended_by_agent: z.boolean({ error: 'must be true or false' }).optional(),
});
const itemSchema = z.strictObject({
  name: z.string({ error: 'must be a string' }).max(200, { error: 'must be at most 200 characters' }).optional(),
  transcript: listOf(transcriptTurn, 'turns, each { user, agent }', { one: 'turn', many: 'turns', max: MAX_TURNS }),
  criteria: listOf(criterionSchema, 'criteria: plain text, or { id, text }', { one: 'criterion', many: 'criteria', max: 50 }),
  labels: z.record(z.string(), labelSchema, { error: 'must map each criterion id to passed or failed' }),
});

const common = {
  seed: seedSchema.optional(),
  votes: votesSchema.optional(),
  min_agreement: minAgreementSchema.optional(),
};
const reportsRequest = z.strictObject({
  reports: listOf(reportSchema, 'run reports', { one: 'report', many: 'reports', max: MAX_REPORTS }),
  ...common,
});
const itemsRequest = z.strictObject({
  agent: agentSchema,
  items: listOf(itemSchema, 'items, each { transcript, criteria, labels }', { one: 'item', many: 'items', max: MAX_ITEMS }),
  ...common,
});

type RawRequest = z.output<typeof reportsRequest> | z.output<typeof itemsRequest>;
type RawReport = z.output<typeof reportSchema>;
type RawCriterion = z.output<typeof reportCriterion>;

/** The criteria of a report's rulings that carry a label, with their votes (the suite's, or the check's `votes`). */
function labelled(rulings: RawCriterion[], votes: number | undefined): { criteria: Criterion[]; labels: Map<string, Label> } {
  const marked = rulings.filter((r) => r.label !== undefined);
  return {
    criteria: marked.map((r) => ({ id: r.id, text: r.text, votes: votes ?? Math.max(1, r.votes) })),
    labels: new Map(marked.map((r) => [r.id, r.label!])),
  };
}

const asTurn = (t: RawReport['conversations'][number]['attempts'][number]['turns'][number]): TurnReport =>
  turnReport(
    { index: t.index, line: t.line, source: t.source },
    {
      status: t.status,
      outcome: t.outcome as TurnReport['outcome'],
      text: t.text,
      tools: t.tools,
      shown: t.shown,
      ended_by_agent: t.ended_by_agent,
    },
  );

/** Every labelled ruling of a report as the judge calls that re-rule it: per attempt its criteria, each turn's, its memory's. */
function reportItems(report: RawReport, r: number, votes: number | undefined): CheckItem[] {
  const items: CheckItem[] = [];
  for (const conv of report.conversations) {
    for (const attempt of conv.attempts) {
      const where = `reports[${r}] "${conv.name}" attempt ${attempt.attempt}`;
      const turns = attempt.turns.map(asTurn);
      const add = (rulings: RawCriterion[], turn: number | null, memory: MemoryEvidence | undefined) => {
        const { criteria, labels } = labelled(rulings, votes);
        if (criteria.length === 0) return;
        const upTo = turn === null ? turns : turns.filter((t) => t.index <= turn);
        items.push({ where: turn === null ? where : `${where} turn ${turn}`, turn, turns: upTo, memory, criteria, labels });
      };
      for (const turn of attempt.turns) add(turn.criteria, turn.index, undefined);
      add(attempt.criteria, null, undefined);
      if (attempt.memory !== null) add(attempt.memory.criteria, null, { added: attempt.memory.added, removed: attempt.memory.removed });
    }
  }
  return items;
}

function itemsOf(raw: Extract<RawRequest, { items: unknown }>): CheckItem[] {
  return raw.items.map((item, i) => {
    const turns = item.transcript.map((t, j) =>
      turnReport(
        { index: j + 1, line: t.user, source: 'script' },
        {
          status: 'passed',
          outcome: 'exit',
          text: t.agent,
          tools: t.tools ?? [],
          shown: t.shown ?? [],
          ended_by_agent: t.ended_by_agent ?? false,
        },
      ),
    );
    const criteria = criteriaOf(item.criteria, raw.votes ?? 1).map((c) => (raw.votes === undefined ? c : { ...c, votes: raw.votes }));
    return {
      where: item.name === undefined ? `items[${i}]` : `items[${i}] "${item.name}"`,
      turn: null,
      turns,
      memory: undefined,
      criteria,
      labels: new Map(Object.entries(item.labels)),
    };
  });
}

/** The rules across fields: labels match criteria one to one; a report holds a label; not too many to ask. */
function crossCheck(raw: RawRequest, items: CheckItem[]): SuiteProblem[] {
  const problems: SuiteProblem[] = [];
  const problem = (path: Array<string | number>, rule: string) => {
    const field = path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
    problems.push({ field, path, rule: `${field} ${rule}` });
  };
  if ('items' in raw) {
    raw.items.forEach((item, i) => {
      const ids = criteriaOf(item.criteria, 1).map((c) => c.id);
      const seen = new Set<string>();
      ids.forEach((id, j) => {
        if (seen.has(id)) problem(['items', i, 'criteria', j, 'id'], `must be unique within the item: ${id} is used twice`);
        seen.add(id);
        if (item.labels[id] === undefined) problem(['items', i, 'labels', id], 'is required: label every criterion passed or failed');
      });
      for (const id of Object.keys(item.labels)) {
        if (!ids.includes(id)) problem(['items', i, 'labels', id], `names no criterion of this item (its criteria: ${ids.join(', ')})`);
      }
    });
  } else {
    raw.reports.forEach((_, r) => {
      if (!items.some((item) => item.where.startsWith(`reports[${r}] `))) {
        problem(['reports', r], 'holds no label: set "label": "passed" or "failed" on the criteria rulings a person checked');
      }
    });
  }
  const count = items.reduce((n, item) => n + item.criteria.length, 0);
  if (count > MAX_LABELLED) problem([], `labels ${count} rulings: at most ${MAX_LABELLED} in one check`);
  return problems;
}

const NEITHER =
  'the judge-check must be an object with reports (run reports in which a person set label: passed or failed on criteria ' +
  'rulings) or with agent and items (each { transcript, criteria, labels })';

/** A judge-check's input (the REST body, the tool's arguments, the command's file), or its problems. */
export function parseJudgeCheck(value: unknown): { ok: true; input: JudgeCheckInput } | { ok: false; problems: SuiteProblem[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !['reports', 'items', 'agent'].some((key) => key in value)) {
    return { ok: false, problems: [{ field: 'body', path: [], rule: NEITHER }] };
  }
  const parsed = 'reports' in value ? parseWith(reportsRequest, value) : parseWith(itemsRequest, value);
  if (!parsed.ok) return parsed;
  const raw: RawRequest = parsed.suite;
  const items = 'items' in raw ? itemsOf(raw) : raw.reports.flatMap((report, r) => reportItems(report, r, raw.votes));
  const problems = crossCheck(raw, items).map((p) => (p.field === '' ? { ...p, field: 'body', rule: p.rule.trim() } : p));
  if (problems.length > 0) return { ok: false, problems };
  const agents = 'items' in raw ? [raw.agent] : raw.reports.map((r) => r.agent);
  const seed = raw.seed ?? ('reports' in raw ? raw.reports[0]!.seed : undefined);
  return {
    ok: true,
    input: {
      agents: [...new Map(agents.map((a) => [a.key, a])).values()],
      seed,
      minAgreement: raw.min_agreement,
      items,
    },
  };
}
