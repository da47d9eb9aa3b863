/**
 * openapi.yaml's input schemas refuse exactly what the service refuses: the same values go to the
 * service's own rules (zod) and to the document's schema (Ajv, JSON Schema 2020-12, as prism
 * validates them), and both must say the same, for chosen edge cases and for generated strings
 * built from the characters the rules are about.
 */

import fc from 'fast-check';
import t from 'tap';
import { deviceRefSchema, lineSchema } from '../src/schemas/connect.js';
import { agentSchema } from '../src/schemas/requests.js';
import { parseHttpSuite } from '../src/suites/spec/schema.js';
import { validatorAt } from './support/openapi.js';

type Tap = Pick<typeof t, 'equal'>;

// Test names in ASCII: a raw U+2028 would break the TAP stream.
const shown = (value: unknown): string =>
  JSON.stringify(value)
    .slice(0, 60)
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function agree(tt: Tap, what: string, value: unknown, service: boolean, schema: boolean): void {
  tt.equal(schema, service, `${what}: the schema ${service ? 'accepts' : 'refuses'} ${shown(value)} as the service does`);
}

// Line breaks and control characters (U+0085 included), separators, white space, a format
// character, lone surrogates (two of them in a row make a valid pair), an astral character, `#`.
const TRICKY = [
  'a',
  'é',
  ' ',
  '\t',
  '\n',
  '\r',
  '\v',
  '\f',
  '\u0000',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u2028',
  '\u2029',
  '\u00a0',
  '\u3000',
  '\ufeff',
  '\u200b',
  '\ud800',
  '\udc00',
  '😀',
  '#',
  '#intro',
  '/',
];
const tricky = (maxLength: number) => fc.string({ unit: fc.constantFrom(...TRICKY), maxLength });

const RUNS = { numRuns: 400 };

/** Generated values: the service and the schema agree on every one (fast-check shrinks a counterexample). */
function agreeOnAll<T>(
  tt: Pick<typeof t, 'doesNotThrow'>,
  values: fc.Arbitrary<T>,
  service: (v: T) => boolean,
  schema: (v: T) => boolean,
): void {
  tt.doesNotThrow(
    () =>
      fc.assert(
        fc.property(values, (v) => service(v) === schema(v)),
        RUNS,
      ),
    'generated values agree',
  );
}
const suiteWith = (extra: Record<string, unknown>, turn: Record<string, unknown> = { line: 'hi' }) => ({
  ...extra,
  conversations: [{ turns: [turn] }],
});

t.test('Line', async (t) => {
  const line = validatorAt('/components/schemas/Line');
  const check = (tt: Tap, value: string) => agree(tt, 'line', value, lineSchema.safeParse(value).success, line(value));
  for (const value of [
    'Where is my order?',
    '#intro',
    '  #intro\t',
    '#exit',
    '\u200b#ready:key=x',
    'a\u0000',
    '\u001b[31m',
    'a\u007f',
    '\u0085',
    'x\u0085y',
    ' ',
    '\ufeff',
    '\u00a0x',
    'x\ud800',
    '\udc00',
    '😀',
    'x'.repeat(4000),
    'x'.repeat(4001),
    '😀'.repeat(4000),
    '😀'.repeat(4001),
    `${' '.repeat(3999)}x`,
    'tab\there',
    'a\u2028b',
  ]) {
    check(t, value);
  }
  agreeOnAll(
    t,
    tricky(12),
    (v) => lineSchema.safeParse(v).success,
    (v) => line(v),
  );
});

t.test('SuiteName', async (t) => {
  const run = validatorAt('/components/schemas/RunRequest');
  const check = (tt: Tap, name: string) => {
    const suite = suiteWith({ name });
    agree(tt, 'name', name, parseHttpSuite(suite).ok, run(suite));
  };
  for (const value of [
    'basic',
    '  padded\t\n',
    '\tname\r\n',
    'a\tb',
    '\u0000',
    'x\u0000',
    '\u0085x',
    ' ',
    '',
    'x'.repeat(200),
    'x'.repeat(201),
    `  ${'x'.repeat(200)}  `,
    '😀'.repeat(200),
    '😀'.repeat(201),
    'a\u2028b',
    '\u2028a',
  ]) {
    check(t, value);
  }
  agreeOnAll(
    t,
    tricky(10),
    (v) => parseHttpSuite(suiteWith({ name: v })).ok,
    (v) => run(suiteWith({ name: v })),
  );
});

t.test('AgentRef: the path parameter and RunRequest.agent', async (t) => {
  const agentRef = validatorAt('/components/schemas/AgentRef');
  const run = validatorAt('/components/schemas/RunRequest');
  const check = (tt: Tap, value: string) => {
    const service = agentSchema.safeParse(value).success;
    agree(tt, 'agent', value, service, agentRef(value));
    const suite = suiteWith({ agent: value });
    agree(tt, 'RunRequest.agent', value, parseHttpSuite(suite).ok, run(suite));
  };
  for (const value of [
    'coach',
    'coach.7',
    'coach.0',
    'coach.07',
    '_coach',
    '-coach',
    '9lives',
    'a.b.3',
    'a..b',
    'a.',
    '.a',
    'a.1.2',
    'a.b_c-d.12',
    'a'.repeat(128),
    'a'.repeat(129),
    'coach.1234567890',
    'coach.123456789',
  ]) {
    check(t, value);
  }
  const unit = fc.constantFrom('a', 'Z', '0', '1', '_', '-', '.', '9');
  agreeOnAll(
    t,
    fc.string({ unit, minLength: 1, maxLength: 8 }),
    (v) => agentSchema.safeParse(v).success,
    (v) => agentRef(v),
  );
});

t.test('DeviceRef and RunLabel count characters as code points', async (t) => {
  const device = validatorAt('/components/schemas/DeviceRef');
  const label = validatorAt('/components/schemas/RunLabel');
  const run = validatorAt('/components/schemas/RunRequest');
  for (const value of ['alice', 'mcp:', 'a b', '𝒜'.repeat(256), '𝒜'.repeat(257), 'x'.repeat(256), 'x'.repeat(257)]) {
    agree(t, 'device_ref', value, deviceRefSchema.safeParse(value).success, device(value));
    const suite = suiteWith({ run_label: value });
    agree(t, 'run_label', value, parseHttpSuite(suite).ok, run(suite) && label(value));
  }
});

t.test('memory needs a top-level device_ref (dependentRequired)', async (t) => {
  const run = validatorAt('/components/schemas/RunRequest');
  for (const extra of [
    { memory: { save: true } },
    { memory: { save: true }, device_ref: 'alice' },
    { memory: { restore: { units: [] }, confirm: true } },
    { memory: { restore: { units: [] }, confirm: true }, device_ref: 'alice' },
    { memory: { restore: { units: [] } }, device_ref: 'alice' },
    { device_ref: 'alice' },
  ]) {
    const suite = suiteWith(extra);
    agree(t, 'memory', extra, parseHttpSuite(suite).ok, run(suite));
  }
});

t.test('expectations: text_matches flags and non-blank words', async (t) => {
  const run = validatorAt('/components/schemas/RunRequest');
  const check = (tt: Tap, expect: Record<string, unknown>) => {
    const suite = suiteWith({}, { line: 'hi', expect });
    agree(tt, 'expect', expect, parseHttpSuite(suite).ok, run(suite));
  };
  for (const text_matches of [
    'order \\d+',
    '/goodbye/i',
    '/x/imsu',
    '/x/g',
    '/x/ii',
    '/x/G',
    '//i',
    '///',
    '/a/b/s',
    '/a/b/y',
    '/x/',
    'x/g',
    '/x/\u0069\u006d',
  ]) {
    check(t, { text_matches });
  }
  for (const word of ['', ' ', '\t', 'x', ' x ']) {
    check(t, { tool: word });
    check(t, { shown: word });
    check(t, { not_shown: word });
    check(t, { text_contains: word });
    check(t, { text_contains: [word] });
  }
  check(t, { exit_within_ms: Number.MAX_SAFE_INTEGER });
  check(t, { exit_within_ms: Number.MAX_SAFE_INTEGER + 1 });
  // Flags made of letters: every body here compiles, so only the flag rule decides.
  const flags = fc.string({ unit: fc.constantFrom('i', 'm', 's', 'u', 'g', 'y', 'd', 'v', 'x', '/'), maxLength: 5 });
  const suite = (tail: string) => suiteWith({}, { line: 'hi', expect: { text_matches: `/ab/${tail}` } });
  agreeOnAll(
    t,
    flags,
    (v) => parseHttpSuite(suite(v)).ok,
    (v) => run(suite(v)),
  );
});
