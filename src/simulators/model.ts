import Fastify from 'fastify';

// The model simulator: an OpenAI-compatible chat completions endpoint on loopback
// (`POST {url}/chat/completions`, url ending in /v1), exact to the model API the gateway speaks
// (docs/simulated-users.md): JSON-schema answers named `simulated_user_turn` or `judge_verdict`,
// `usage` in every answer. It is a deterministic stand-in for a real model, not one: the
// simulated user follows a fixed policy over the role-inverted history, and the judge rules by
// keywords. Faults make it misbehave for tests.

type Message = { role: string; content: string };

export interface ModelRequestRecord {
  authorization: string | undefined;
  body: {
    model?: string;
    temperature?: number;
    seed?: number;
    messages?: Message[];
    response_format?: { type?: string; json_schema?: { name?: string; strict?: boolean; schema?: unknown } };
  };
}

export type ModelFault =
  /** answer HTTP 503 */
  | 'http_503'
  /** never answer (the gateway's MODEL_TIMEOUT_MS cuts it) */
  | 'hang'
  /** message content that is not JSON */
  | 'non_json'
  /** the judge names a criterion it was not asked about */
  | 'wrong_ids'
  /** the judge leaves a criterion out */
  | 'missing_criterion'
  /** the simulated user says #exit */
  | 'exit_line'
  /** the simulated user's line holds a control character */
  | 'control_line'
  /** the simulated user never says it is done */
  | 'never_done';

export interface ModelSimulator {
  url: string;
  requests: ModelRequestRecord[];
  /** the fault, and how many calls it hits (default: every call); applies to the role it names, or to both */
  faults: { fault?: ModelFault; times?: number; role?: 'simulator' | 'judge' };
  close(): Promise<void>;
}

const DATE =
  /\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|june|july|august|september|october|november|december|\d{4}-\d{2}-\d{2})\b/i;
const REMEMBERED = /\b(welcome back|last time|you told me|remember)/i;

/** The persona, goal and facts, read back from the system message the gateway wrote. */
function userOf(system: string): { goal: string; facts: Array<[string, string]> } {
  const goal = /\nGoal:\n([\s\S]*?)\n\n/.exec(system)?.[1]?.trim() ?? '';
  const factBlock = /\nFacts you may reveal:\n([\s\S]*)$/.exec(system)?.[1] ?? '';
  const facts = [...factBlock.matchAll(/^- ([^:]+): (.*)$/gm)].map((m): [string, string] => [m[1]!, m[2]!]);
  return { goal, facts };
}

/**
 * The simulated user's policy: done once the agent has given a date or said goodbye; a fact the
 * agent asked for (its key, underscores as spaces, in the agent's words); else the goal.
 */
function simulatedTurn(messages: Message[], fault: ModelFault | undefined): { line: string; done: boolean } {
  const system = messages[0]?.content ?? '';
  const { goal, facts } = userOf(system);
  const mine = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
  const agentSaid = messages.filter((m) => m.role === 'user').map((m) => m.content);
  const agent = agentSaid.at(-1) ?? '';
  if (fault === 'exit_line') return { line: '#exit', done: false };
  if (fault === 'control_line') return { line: 'two\nlines', done: false };
  if (fault !== 'never_done' && agentSaid.some((said) => DATE.test(said) || /\bgoodbye\b/i.test(said))) {
    return { line: 'Thank you, that is all I needed.', done: true };
  }
  const asked = facts.find(
    ([key, value]) => agent.toLowerCase().includes(key.replace(/_/g, ' ').toLowerCase()) && !mine.some((l) => l.includes(value)),
  );
  if (asked !== undefined) return { line: `My ${asked[0].replace(/_/g, ' ')} is ${asked[1]}.`, done: false };
  return { line: mine.length === 0 ? goal : `Please help me: ${goal}`, done: false };
}

/** The stand-in judge: quoted words must appear in the agent's text; "date" and "remember" criteria by pattern; else inconclusive. */
function ruling(criterion: string, agentText: string): { verdict: string; reasoning: string } {
  const quoted = [...criterion.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
  if (quoted.length > 0) {
    const missing = quoted.filter((q) => !agentText.toLowerCase().includes(q.toLowerCase()));
    return missing.length === 0
      ? { verdict: 'passed', reasoning: `The agent said ${quoted.map((q) => `"${q}"`).join(', ')}.` }
      : { verdict: 'failed', reasoning: `The agent never said ${missing.map((q) => `"${q}"`).join(', ')}.` };
  }
  if (/\bdate\b/i.test(criterion)) {
    const date = DATE.exec(agentText)?.[0];
    return date
      ? { verdict: 'passed', reasoning: `The agent named a date (${date}).` }
      : { verdict: 'failed', reasoning: 'The agent named no date.' };
  }
  if (/\bremember/i.test(criterion)) {
    const said = REMEMBERED.exec(agentText)?.[0];
    return said
      ? { verdict: 'passed', reasoning: `The agent recalled the earlier visit ("${said}").` }
      : { verdict: 'failed', reasoning: 'The agent did not show it remembered the earlier visit.' };
  }
  return { verdict: 'inconclusive', reasoning: 'The stand-in judge rules only on quoted words, dates and remembering.' };
}

function judgeVerdict(messages: Message[], fault: ModelFault | undefined) {
  const content = messages.find((m) => m.role === 'user')?.content ?? '';
  const [transcript = '', criteriaBlock = ''] = content.split('\nCriteria:\n');
  // A memory criterion is ruled on the units added (its quoted words must be in one of them).
  const added = /\nMemory units added:\n([\s\S]*?)\nMemory units removed:\n/.exec(transcript)?.[1];
  const agentText = added ?? [...transcript.matchAll(/^ {2}agent: (.*)$/gm)].map((m) => m[1]).join('\n');
  const criteria = [...criteriaBlock.matchAll(/^- ([^:]+): (.*)$/gm)].map((m) => ({ id: m[1]!, text: m[2]! }));
  const rulings = criteria.map((c) => ({ id: c.id, ...ruling(c.text, agentText) }));
  if (fault === 'wrong_ids') rulings.push({ id: 'not_asked', verdict: 'passed', reasoning: 'An id nobody asked about.' });
  if (fault === 'missing_criterion') rulings.pop();
  return { criteria: rulings };
}

const words = (messages: Message[]): number => messages.reduce((n, m) => n + m.content.split(/\s+/).length, 0);

export async function startModelSimulator(opts: { host?: string; port?: number } = {}): Promise<ModelSimulator> {
  const app = Fastify({ logger: false });
  const sim: ModelSimulator = { url: '', requests: [], faults: {}, close: async () => undefined };
  const hanging = new Set<() => void>();

  app.post<{ Body: ModelRequestRecord['body'] }>('/v1/chat/completions', async (req, reply) => {
    const body = req.body ?? {};
    sim.requests.push({ authorization: req.headers.authorization, body });
    const schema = body.response_format?.json_schema?.name;
    const role = schema === 'judge_verdict' ? 'judge' : 'simulator';
    const { faults } = sim;
    const hit = faults.fault !== undefined && (faults.role === undefined || faults.role === role) && (faults.times ?? Infinity) > 0;
    if (hit && faults.times !== undefined) faults.times -= 1;
    const fault = hit ? faults.fault : undefined;
    if (fault === 'http_503') return reply.code(503).send({ error: { message: 'The model is overloaded.' } });
    if (fault === 'hang') return new Promise<void>((resolve) => hanging.add(resolve));
    const messages = body.messages ?? [];
    if (schema !== 'simulated_user_turn' && schema !== 'judge_verdict') {
      return reply.code(400).send({ error: { message: 'response_format.json_schema.name must be simulated_user_turn or judge_verdict' } });
    }
    const answer = schema === 'judge_verdict' ? judgeVerdict(messages, fault) : simulatedTurn(messages, fault);
    const content = fault === 'non_json' ? 'Sure! Here is my answer.' : JSON.stringify(answer);
    return {
      id: `chatcmpl-sim-${sim.requests.length}`,
      object: 'chat.completion',
      model: body.model ?? 'simulated',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
      usage: { prompt_tokens: words(messages), completion_tokens: content.split(/\s+/).length },
    };
  });

  await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  sim.url = `http://${opts.host ?? '127.0.0.1'}:${port}/v1`;
  sim.close = async () => {
    for (const resolve of hanging) resolve();
    await app.close();
  };
  return sim;
}
