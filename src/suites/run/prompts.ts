import type { ChatMessage } from '../../model/client.js';
import type { Criterion, SimulatedUser } from '../spec/format.js';
import type { TurnReport, CriterionVerdict } from '../report/run-report.js';

/**
 * The prompts of simulated users and judges, and the JSON schemas their answers must follow.
 * docs/simulated-users.md quotes them; PROMPT_VERSION (in every report) changes whenever their
 * wording does, so two reports tell whether they were prompted alike.
 */
export const PROMPT_VERSION = '2';

const SIMULATOR_INSTRUCTIONS = [
  'You play a user talking with a conversational agent, to test that agent. Stay in character: you are the user described below, ' +
    'never an assistant, never the agent.',
  'Answer with JSON: {"line": "<your next message>", "done": <true|false>}.',
  '- "line" is your next message to the agent: plain text on one line, short and natural, as this user would write it. Never ' +
    'start it with "#".',
  '- Reveal a fact only when the agent asks for it or when it is needed for your goal; never invent facts that are not listed.',
  '- Set "done" to true when your goal is met, or clearly cannot be met in this conversation; your line is then not sent.',
  '- The agent\'s messages reach you as "user" messages, your own earlier lines as "assistant" messages.',
].join('\n');

const JUDGE_INSTRUCTIONS = [
  'You are a strict, impartial judge of a conversation between a user and a conversational agent under test. Rule on each ' +
    'criterion using only the transcript below.',
  '- "passed": the transcript clearly shows the criterion holds.',
  '- "failed": the transcript clearly shows it does not hold.',
  '- "inconclusive": the transcript cannot tell.',
  'Give one sentence of reasoning for each ruling, pointing at the turn that decides it.',
  'Answer with JSON: {"criteria": [{"id": "<criterion id>", "verdict": "passed" | "failed" | "inconclusive", "reasoning": "<one ' +
    'sentence>"}]}, every criterion id listed exactly once.',
].join('\n');

/** The system message of a simulated user: the instructions, then persona, goal and facts verbatim. */
function simulatorSystem(user: SimulatedUser): string {
  const facts = Object.entries(user.facts);
  return [
    SIMULATOR_INSTRUCTIONS,
    '',
    'Persona:',
    user.persona,
    '',
    'Goal:',
    user.goal,
    '',
    'Facts you may reveal:',
    ...(facts.length === 0 ? ['(none)'] : facts.map(([key, value]) => `- ${key}: ${value}`)),
  ].join('\n');
}

/** What the agent said in a turn, as the simulated user reads it. */
export const agentSaid = (turn: TurnReport): string =>
  [
    turn.text === null || turn.text === '' ? '(the agent said nothing)' : turn.text,
    ...(turn.shown.length > 0 ? [`[shown: ${turn.shown.join(', ')}]`] : []),
  ].join('\n');

/**
 * The conversation from the simulated user's point of view: the agent's replies as `user`
 * messages, the user's own lines (scripted or simulated) as `assistant` messages, in order; the
 * gateway's `#intro` is the agent's opening, not a line of the user's.
 */
export function simulatorMessages(user: SimulatedUser, turns: TurnReport[]): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: simulatorSystem(user) }];
  for (const turn of turns) {
    if (turn.status === 'skipped') continue;
    if (turn.line !== '#intro') messages.push({ role: 'assistant', content: turn.line });
    messages.push({ role: 'user', content: agentSaid(turn) });
  }
  return messages;
}

export const SIMULATED_USER_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['line', 'done'],
  properties: { line: { type: 'string' }, done: { type: 'boolean' } },
};

export function checkSimulatedTurn(answer: unknown): { line: string; done: boolean } | string {
  const a = answer as { line?: unknown; done?: unknown } | null;
  if (typeof a !== 'object' || a === null || typeof a.line !== 'string' || typeof a.done !== 'boolean') {
    return 'the model did not answer {"line": string, "done": boolean} (simulated_user_turn)';
  }
  return { line: a.line, done: a.done };
}

/** Every turn's line and source, the agent's text, tools, shown elements, and whether the agent ended the conversation. */
export function transcriptText(turns: TurnReport[]): string {
  const out: string[] = [];
  for (const turn of turns) {
    if (turn.status === 'skipped') continue;
    const who = turn.source === 'simulated_user' ? 'simulated user' : 'script';
    out.push(`Turn ${turn.index} (${who}) user: ${turn.line}`);
    out.push(`  agent: ${turn.text === null || turn.text === '' ? '(nothing)' : turn.text.replace(/\n/g, ' ')}`);
    out.push(`  tools called: ${turn.tools.length === 0 ? 'none' : turn.tools.join(', ')}`);
    out.push(`  shown: ${turn.shown.length === 0 ? 'none' : turn.shown.join(', ')}`);
    if (turn.outcome !== 'exit') out.push(`  the turn did not end normally (${turn.outcome ?? 'not run'})`);
  }
  out.push(`The agent ended the conversation: ${turns.some((t) => t.ended_by_agent) ? 'yes' : 'no'}`);
  return out.join('\n');
}

/** The added and removed memory units a memory criterion is ruled on: one JSON unit a line. */
export interface MemoryEvidence {
  added: Array<Record<string, unknown>>;
  removed: Array<Record<string, unknown>>;
}

const MEMORY_INSTRUCTION =
  '- The memory block lists the units the engine stored about the user after this conversation (added) and those it dropped ' +
  '(removed), as JSON: rule on the criteria by what they hold, the transcript showing what was said.';

function memoryText({ added, removed }: MemoryEvidence): string[] {
  const lines = (units: Array<Record<string, unknown>>) => (units.length === 0 ? ['(none)'] : units.map((u) => JSON.stringify(u)));
  return ['Memory units added:', ...lines(added), 'Memory units removed:', ...lines(removed), ''];
}

/** The judge's messages; with `memory`, the units the conversation left behind too (`expect.memory.criteria`). */
export function judgeMessages(turns: TurnReport[], criteria: Criterion[], memory?: MemoryEvidence): ChatMessage[] {
  return [
    { role: 'system', content: memory === undefined ? JUDGE_INSTRUCTIONS : `${JUDGE_INSTRUCTIONS}\n${MEMORY_INSTRUCTION}` },
    {
      role: 'user',
      content: [
        'Transcript:',
        transcriptText(turns),
        '',
        ...(memory === undefined ? [] : memoryText(memory)),
        'Criteria:',
        ...criteria.map((c) => `- ${c.id}: ${c.text}`),
      ].join('\n'),
    },
  ];
}

const VERDICTS = ['passed', 'failed', 'inconclusive'] as const;

export const judgeSchema = (ids: string[]) => ({
  type: 'object',
  additionalProperties: false,
  required: ['criteria'],
  properties: {
    criteria: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'verdict', 'reasoning'],
        properties: { id: { type: 'string', enum: ids }, verdict: { type: 'string', enum: VERDICTS }, reasoning: { type: 'string' } },
      },
    },
  },
});

type Ruling = { id: string; verdict: CriterionVerdict; reasoning: string };

/** The judge's rulings, exactly one per criterion asked about, or what is wrong with them. */
export function checkVerdicts(answer: unknown, ids: string[]): Map<string, Ruling> | string {
  const list = (answer as { criteria?: unknown } | null)?.criteria;
  if (!Array.isArray(list)) return 'the judge did not answer {"criteria": [...]} (judge_verdict)';
  const rulings = new Map<string, Ruling>();
  for (const item of list as Array<Record<string, unknown>>) {
    const { id, verdict, reasoning } = item ?? {};
    if (typeof id !== 'string' || !ids.includes(id)) return `the judge named an unknown criterion ${JSON.stringify(id)}`;
    if (rulings.has(id)) return `the judge ruled twice on ${id}`;
    if (!VERDICTS.includes(verdict as CriterionVerdict) || typeof reasoning !== 'string')
      return `the judge's ruling on ${id} is not {verdict, reasoning}`;
    rulings.set(id, { id, verdict: verdict as CriterionVerdict, reasoning });
  }
  const missing = ids.filter((id) => !rulings.has(id));
  return missing.length > 0 ? `the judge did not rule on ${missing.join(', ')}` : rulings;
}
