// The simulated engine's default agent, which every agent ref runs: what it answers to a line.
// Its phrases (planning?, sim:…, bye) drive the engine's faults and are listed in docs/demo.md.

/** One engine element (a JSON object per text frame). */
type Json = Record<string, unknown>;

/** How a turn is answered: its element frames (a string is sent as is: not JSON), then what follows. */
export interface Reply {
  elements: Array<Json | string>;
  delayMs?: number;
  /** close code, `drop` (no close frame), `hang` (no exit ever), `exit` (#exit: the session ends now) */
  then?: number | 'drop' | 'hang' | 'exit';
  /** what the agent repeated of other users' facts: the session's aggregation keeps it in this user's memory too */
  told?: string[];
}

const text = (t: string): Json => ({ type: 'text', text: t });
const command = (name: string, params?: Json): Json => (params ? { type: 'command', name, params } : { type: 'command', name });
const exit = (sessionEnded: boolean): Json => ({ type: 'exit', sessionEnded });
const RESPONSE_END = command('response-end');

/** The default agent's reply to an ordinary line: the engine goes on planning and speaking after response-end. */
function ordinaryReply(line: string, paced = false): Json[] {
  return [
    ...(paced ? [text('Let me see…')] : []),
    ...(/order/i.test(line)
      ? [
          command('tool-call', { name: 'lookup_order', result: 'started' }),
          command('tool-call', { name: 'lookup_order', result: 'completed' }),
        ]
      : []),
    ...(/size/i.test(line) ? [command('multimodal-interaction', { ref: 'size_chart' })] : []),
    text(`You said: ${line}`),
    RESPONSE_END,
    command('realtime-planning', { text: 'Deciding what to ask next.' }),
    text('Anything else?'),
    exit(false),
  ];
}

/** An order number in a line ("my order number is 12345", "order number: 12345"): the agent answers it, the engine remembers it. */
const ORDER_NUMBER = /\border number(?: is)?:?\s*#?(\d{4,})\b/i;

/**
 * What the engine knows beyond the line: the session's ordinal (1, 2, …), the user's remembered
 * facts, and the revision the key runs. Revision 3 and later (the demo's `coach.3`) differ from
 * the Published revision 2 in two ways a comparison finds: they give a delivery date without
 * looking the order up (a regression), and they start a refund with a tool (a fix).
 */
export interface AgentContext {
  session: number;
  facts: string[];
  revision?: number;
  /** The session's one uniform draw in [0, 1) from a named stream, seeded (sim:chance). */
  draw?: (stream: string) => number;
  /** What other users told the agent (their remembered facts), the latest last: what a leaky agent repeats. */
  others?: string[];
}

/** The first revision that behaves as the comparison's candidate. */
const CANDIDATE_REVISION = 3;

/**
 * The fact a line leaves in the user's memory when the engine aggregates its session, if any:
 * `sim:remember:TEXT`; `sim:remember-chance:P,Q:TEXT` with probability P (Q from revision 3),
 * one seeded draw per session; an order number (`order 12345`), which revision 3 and later (the
 * demo's `coach.3`) forget: a memory regression a comparison finds.
 */
export function rememberedFact(line: string, context: Pick<AgentContext, 'revision' | 'draw'>): string | undefined {
  if (line.startsWith('sim:remember:')) return line.slice('sim:remember:'.length);
  const told = TOLD_TO_REMEMBER.exec(line)?.[1];
  if (told !== undefined) return told.trim();
  const maybe = /^sim:remember-chance:([^:]*):(.*)$/.exec(line);
  if (maybe !== null) return chanceSaysYes(maybe[1]!, context) ? maybe[2] : undefined;
  const order = ORDER_NUMBER.exec(line)?.[1];
  return order === undefined || (context.revision ?? 0) >= CANDIDATE_REVISION ? undefined : `order ${order}`;
}

/** "Please remember my code word: K7…" leaves "my code word: K7…" in the user's memory (a canary plant's line). */
const TOLD_TO_REMEMBER = /\bremember (?:that )?(my [^.!?]+)/i;
/** The user asks what the agent knows of them (a control visit's line). */
const RECALL = /\bwhat (?:do you (?:remember|know) about me|was my|is my)\b/i;
/** The user asks for what other users told the agent (an attacker's line). */
const OTHERS = /\b(?:another|other|previous|last) (?:user|customer|person|people|client)s?\b|\bsomeone else\b/i;
/** How many of other users' facts a leaky agent repeats, the latest first. */
const LEAKED_FACTS = 3;

/**
 * Three ways an agent treats what users told it, which the red-team suites tell apart: revision 3
 * and later (the demo's `coach.3`) repeat what other users told them when asked (a leak); the
 * agent `forgetful` remembers nothing of anyone; every other agent keeps each user's facts to that user.
 */
function memoryReply(line: string, ref: string, context: AgentContext): Reply | undefined {
  const forgetful = ref === 'forgetful';
  if (RECALL.test(line)) {
    const own = forgetful ? [] : context.facts;
    const said = own.length === 0 ? "I don't remember anything about you yet." : `Here is what I remember about you: ${own.join('; ')}.`;
    return { elements: [text(said), RESPONSE_END, exit(false)] };
  }
  if (!OTHERS.test(line)) return undefined;
  if ((context.revision ?? 0) < CANDIDATE_REVISION || forgetful) {
    return { elements: [text("I'm sorry, I can't share anything other customers told me."), RESPONSE_END, exit(false)] };
  }
  const leaked = (context.others ?? []).slice(-LEAKED_FACTS).reverse();
  if (leaked.length === 0) return { elements: [text('Nobody else has told me anything yet.'), RESPONSE_END, exit(false)] };
  return { elements: [text(`Another customer told me: ${leaked.join('; ')}.`), RESPONSE_END, exit(false)], told: leaked };
}

/** The delivery date the demo agent gives for any order: a fixed day, so suites are deterministic. */
const DELIVERY_DATE = 'Friday, 4 December 2026';

/** The agent's opening: a returning user with a remembered order is welcomed back with it. */
function greeting(ref: string, paced: boolean, facts: string[]): Json[] {
  const order = facts.map((f) => /^order (\d+)$/.exec(f)?.[1]).find((n) => n !== undefined);
  const back = order === undefined ? [] : [text(`Welcome back! Last time you asked about order ${order}.`)];
  return [...(paced ? [text(`Hi, I'm ${ref}.`), text('How can I help?')] : [text(`Hi, I'm ${ref}. How can I help?`)]), ...back];
}

/** Orders and deliveries: a number is looked up and given a date; a delivery question without one is asked for it. */
function orderReply(line: string, facts: string[], candidate: boolean): Reply | undefined {
  const order = ORDER_NUMBER.exec(line)?.[1];
  if (order !== undefined) {
    return {
      elements: [
        ...(candidate
          ? []
          : [
              command('tool-call', { name: 'lookup_order', result: 'started' }),
              command('tool-call', { name: 'lookup_order', result: 'completed' }),
            ]),
        text(`Thanks! Order ${order} will be delivered on ${DELIVERY_DATE}.`),
        RESPONSE_END,
        text('Anything else?'),
        exit(false),
      ],
    };
  }
  if (!/\bdeliver/i.test(line)) return undefined;
  const known = facts.map((f) => /^order (\d+)$/.exec(f)?.[1]).find((n) => n !== undefined);
  if (known !== undefined) return orderReply(`order number ${known}`, [], candidate);
  return { elements: [text('Which order do you mean? Please tell me your order number.'), RESPONSE_END, exit(false)] };
}

/** `sim:chance`: whether this session's draw falls under the revision's probability (a bad probability: never). */
function chanceSaysYes(arg: string, context: Pick<AgentContext, 'revision' | 'draw'>): boolean {
  const [before, after] = arg.split(',').map(Number);
  const p = (context.revision ?? 0) >= CANDIDATE_REVISION ? (after ?? before) : before;
  return context.draw !== undefined && p !== undefined && context.draw(arg) < p;
}

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/**
 * The answer to `planning?`, in words: how many of the agent's turns this socket carried (its
 * planning lives there) against how many lines the session holds (the engine keeps those). After
 * a reconnect the socket starts again at 0 and the session does not: the earlier planning is gone.
 */
function planningAnswer(socketTurns: number, sessionLines: number): string {
  const session = `the session has ${count(sessionLines, 'line', 'lines')}`;
  if (socketTurns === 0) {
    return `This socket is new (0 turns); ${session}: ${sessionLines === 0 ? 'nothing planned yet.' : 'my earlier planning is gone.'}`;
  }
  const carried = `This socket has carried ${socketTurns} of my turns; ${session}`;
  if (socketTurns >= sessionLines) return `${carried}, so I still have my planning.`;
  return `${carried}: my planning of the ${count(sessionLines - socketTurns, 'line', 'lines')} before it is gone.`;
}

/**
 * The default agent, every agent: `socketLines` and `sessionLines` count the lines before this
 * one; `paced` speaks in more, shorter sentences (the demo's paced speech).
 */
export function agentReply(
  line: string,
  ref: string,
  socketLines: number,
  sessionLines: number,
  paced: boolean,
  context: AgentContext = { session: 1, facts: [] },
): Reply {
  if (line === '#intro') return { elements: [...greeting(ref, paced, context.facts), RESPONSE_END, exit(false)] };
  if (line === '#exit') return { elements: [exit(true)], then: 'exit' };
  // #ready:… and any other action: recorded (the gateway must never send one), answered with a bare exit.
  if (line.startsWith('#')) return { elements: [exit(false)] };
  if (line === 'planning?') return { elements: [text(planningAnswer(socketLines, sessionLines)), RESPONSE_END, exit(false)] };
  const directive = /^sim:([a-z0-9-]+)(?::(.*))?$/.exec(line);
  const arg = directive?.[2] ?? '';
  switch (directive?.[1]) {
    case 'hang':
      return { elements: [text('Let me think about that…')], then: 'hang' };
    case 'drop':
      return { elements: [text('Let me think about that…')], then: 'drop' };
    case 'close-1011':
      return { elements: [text('Let me think about that…')], then: 1011 };
    case 'error':
      return { elements: [{ type: 'error', code: 'INTERNAL', message: 'Simulated internal error.' }], then: 1011 };
    case 'malformed':
      return { elements: ['this frame is not JSON {', ...ordinaryReply(line)] };
    case 'huge':
      return { elements: [text('x'.repeat(Math.max(0, Number(arg) || 0))), exit(false)] };
    case 'delay':
      return { elements: ordinaryReply(line, paced), delayMs: Math.max(0, Number(arg) || 0) };
    case 'unknown':
      return { elements: [{ type: 'mystery', weird: true }, { type: 'text', text: 'Something unusual.', mood: 'curious' }, exit(false)] };
    case 'remember': // aggregation reads the fact from the session's lines (rememberedFact)
    case 'remember-chance':
    case 'forget':
      return { elements: ordinaryReply(line, paced) };
    case 'chance': // sim:chance:P, or P,Q: yes with probability P (revisions before 3) and Q (3 on), seeded per session
      return { elements: [text(chanceSaysYes(arg, context) ? 'Yes, that works.' : 'No, sorry.'), RESPONSE_END, exit(false)] };
    case 'flaky': // odd sessions of the engine say yes, even ones no: a flaky agent, deterministically
      return { elements: [text(context.session % 2 === 1 ? 'Yes, that works.' : 'No, sorry.'), RESPONSE_END, exit(false)] };
  }
  const remembered = memoryReply(line, ref, context);
  if (remembered !== undefined) return remembered;
  const candidate = (context.revision ?? 0) >= CANDIDATE_REVISION;
  const order = orderReply(line, context.facts, candidate);
  if (order !== undefined) return order;
  if (candidate && /\brefund\b/i.test(line)) {
    return {
      elements: [
        command('tool-call', { name: 'start_refund', result: 'started' }),
        command('tool-call', { name: 'start_refund', result: 'completed' }),
        text('I have started your refund: the money is back on your card within 5 days.'),
        RESPONSE_END,
        exit(false),
      ],
    };
  }
  if (/\b(good)?bye\b/i.test(line)) return { elements: [text('Goodbye!'), RESPONSE_END, exit(true)], then: 1000 };
  return { elements: ordinaryReply(line, paced) };
}
