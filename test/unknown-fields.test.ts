import t from 'tap';
import type { GatewayError } from '../src/errors.js';
import { parse, startBody } from '../src/schemas/requests.js';
import { unknownFieldRule } from '../src/schemas/unknown-fields.js';
import { parseHttpSuite } from '../src/suites/spec/schema.js';

// One wording for an unknown field, whether a request or a suite carries it, with the known
// fields read from the schema that refused it.

function requestProblems(body: unknown): Array<{ field: string; rule: string }> {
  try {
    parse(startBody, body, 'body');
  } catch (err) {
    return ((err as GatewayError).details as { problems: Array<{ field: string; rule: string }> }).problems;
  }
  throw new Error('the body was accepted');
}

function suiteRules(suite: unknown): string[] {
  const result = parseHttpSuite(suite);
  if (result.ok) throw new Error('the suite was accepted');
  return result.problems.map((p) => p.rule);
}

t.test('the rule: a near field within two edits, then the fields the object knows', async (t) => {
  t.equal(unknownFieldRule('lines', ['line', 'locale']), 'is not a known field; did you mean line? the fields here are line, locale');
  t.equal(unknownFieldRule('LINE', ['line']), 'is not a known field; did you mean line? the fields here are line', 'case does not hide it');
  t.equal(unknownFieldRule('zzz', ['line']), 'is not a known field; the fields here are line', 'no hint when nothing is near');
  t.equal(unknownFieldRule('agent', []), 'is not a known field', 'an object that takes no field');
  t.equal(
    unknownFieldRule('tol', ['tool', 'tools']),
    'is not a known field; did you mean tool? the fields here are tool, tools',
    'the nearest wins',
  );
});

t.test('a request and a suite word the same mistake the same way', async (t) => {
  const request = requestProblems({ lines: 'hi' });
  t.same(request, [
    {
      field: 'lines',
      rule:
        'lines is not a known field; did you mean line? the fields here are line, locale, device_ref, time_zone, ' +
        'run_label, time_offset',
    },
  ]);
  const suite = suiteRules({ conversations: [{ turns: [{ lines: 'hi' }] }] });
  t.ok(
    suite.includes('conversations[0].turns[0].lines is not a known field; did you mean line? the fields here are line, expect'),
    suite.join('\n'),
  );
});

t.test('each unknown field is a problem of its own, named by its path', async (t) => {
  const problems = requestProblems({ line: 'hi', foo: 1, bar: 2 });
  t.same(
    problems.map((p) => p.field),
    ['foo', 'bar'],
  );
  t.match(problems[1]!.rule, /^bar is not a known field; the fields here are line, /);
});

t.test("the suite's known fields come from its schema, a refused one left out", async (t) => {
  const [top] = suiteRules({ conversations: [{ turns: [{ line: 'hi' }] }], bogus: 1 });
  t.equal(
    top,
    'bogus is not a known field; the fields here are agent, name, description, locale, device_ref, time_zone, run_label, ' +
      'time_offset, memory, repeat, max_attempts, min_attempts, confidence, pass_rate, concurrency, review, votes, seed, conversations',
  );
  const conversation = suiteRules({ conversations: [{ turns: [{ line: 'hi' }], run_labl: 'x' }] });
  t.same(conversation, [
    'conversations[0].run_labl is not a known field; the fields here are name, locale, device_ref, time_zone, time_offset, wait_ms, ' +
      'turns, simulated_user, attack, expect',
  ]);
  const memory = suiteRules({ device_ref: 'alice', memory: { save: true, restor: {} }, conversations: [{ turns: [{ line: 'hi' }] }] });
  t.same(memory, ['memory.restor is not a known field; did you mean restore? the fields here are restore, confirm, save, wait_ms']);
  const connection = suiteRules({ model_url: 'http://x', conversations: [{ turns: [{ line: 'hi' }] }] });
  t.match(connection, [/^model_url is not allowed: a suite never carries a model URL or key/]);
});
