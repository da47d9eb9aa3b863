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

/**
 * The default agent, every agent: `socketLines` and `sessionLines` count the lines before this
 * one; `paced` speaks in more, shorter sentences (the demo's paced speech).
 */
export function agentReply(line: string, ref: string, socketLines: number, sessionLines: number, paced: boolean): Reply {
  if (line === '#intro') {
    const greeting = paced ? [text(`Hi, I'm ${ref}.`), text('How can I help?')] : [text(`Hi, I'm ${ref}. How can I help?`)];
    return { elements: [...greeting, RESPONSE_END, exit(false)] };
  }
  if (line === '#exit') return { elements: [exit(true)], then: 'exit' };
  // #ready:… and any other action: recorded (the gateway must never send one), answered with a bare exit.
  if (line.startsWith('#')) return { elements: [exit(false)] };
  if (line === 'planning?') {
    return {
      elements: [text(`planning: ${socketLines} turns on this socket, ${sessionLines} lines in this session`), RESPONSE_END, exit(false)],
    };
  }
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
    case 'remember': // aggregation reads the fact from the session's lines
      return { elements: ordinaryReply(line, paced) };
  }
  if (/\b(good)?bye\b/i.test(line)) return { elements: [text('Goodbye!'), RESPONSE_END, exit(true)], then: 1000 };
  return { elements: ordinaryReply(line, paced) };
}
