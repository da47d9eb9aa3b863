import fc from 'fast-check';
import t from 'tap';
import { conversationParams, parse, parseTurn, turnBody } from '../src/schemas/requests.js';

/** What the schemas alone answer: the result, or the error as the caller would read it. */
function bySchemas(params: unknown, body: unknown): unknown {
  try {
    return { params: parse(conversationParams, params, 'path'), body: parse(turnBody, body === undefined ? {} : body, 'body') };
  } catch (err) {
    return { error: (err as { toJSON(): unknown }).toJSON() };
  }
}

function byParseTurn(params: unknown, body: unknown): unknown {
  try {
    return parseTurn(params, body);
  } catch (err) {
    return { error: (err as { toJSON(): unknown }).toJSON() };
  }
}

const SESSION = 'D8FD1B5F-3C94-4990-9f1b-d50693ae2235';
const lines = fc.oneof(
  fc.constantFrom('Hello there', '#intro', '  #intro ', '#exit', '\u200b#exit', '', '   ', 'a\nb', 'a\tb', '\ud800', 'x'.repeat(4001)),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constant(42),
);
const agents = fc.oneof(
  fc.constantFrom('coach', 'coach.7', 'coach.0', '.coach', 'a'.repeat(129), 'shop.v2.3'),
  fc.string({ maxLength: 12 }),
);
const sessions = fc.oneof(fc.constantFrom(SESSION, SESSION.toLowerCase(), 'not-a-uuid', ''), fc.uuid());
const bodies = fc.oneof(
  lines.map((line) => ({ line })),
  lines.map((line) => ({ line, locale: 'en-US' })),
  lines.map((line) => ({ line, extra: true })),
  fc.constantFrom(undefined, null, [], 'Hello', {}),
);

t.test('a turn quick-checked gets what the schemas give, for valid and invalid input alike', async (t) => {
  fc.assert(
    fc.property(agents, sessions, bodies, (agent, session_id, body) => {
      const params = { agent, session_id };
      t.same(byParseTurn(params, body), bySchemas(params, body));
    }),
    { numRuns: 2000 },
  );
});

t.test('the quick check applies the line rules and the normalization of #intro', async (t) => {
  const params = { agent: 'coach.3', session_id: SESSION };
  t.same(parseTurn(params, { line: ' #intro ' }), {
    params: { agent: { ref: 'coach', revision: 3, key: 'coach.3' }, session_id: SESSION.toLowerCase() },
    body: { line: '#intro' },
  });
  t.same(byParseTurn(params, { line: '\n#exit' }), {
    error: {
      error: 'invalid_request',
      message: 'line must be one line: no CR, LF, U+2028, U+2029, U+0085 or other control characters; nothing was sent to the engine',
      details: {
        problems: [
          { field: 'line', rule: 'line must be one line: no CR, LF, U+2028, U+2029, U+0085 or other control characters' },
          {
            field: 'line',
            rule: 'line may start with # only as exactly #intro: other # lines are engine actions (#exit, #ready:…) and are never sent',
          },
        ],
      },
    },
  });
});
