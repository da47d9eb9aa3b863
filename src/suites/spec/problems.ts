import type { z } from 'zod';
import { unknownFieldRule } from '../../schemas/unknown-fields.js';

// A suite's problems as a field path and one plain sentence ("conversations[0].turns[2].expect.tool
// must be a string"), so the CLI can point at the line and the route can name the field; an
// unknown field is worded as a request's is (schemas/unknown-fields.ts), or refused outright when it
// looks like a model connection.

export type Path = ReadonlyArray<PropertyKey>;

export interface SuiteProblem {
  /** `conversations[0].turns[2].expect.tool` */
  field: string;
  path: Array<string | number>;
  /** The whole sentence, starting with the field: "conversations[0].turns[2].expect.tool must be a string". */
  rule: string;
}

/** `conversations[0].turns[2].line` → `['conversations', 0, 'turns', 2, 'line']` */
export function parseFieldPath(field: string): Array<string | number> {
  const path: Array<string | number> = [];
  for (const [, key, index] of field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) path.push(index === undefined ? key! : Number(index));
  return path;
}

function formatPath(path: Path): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object (a mapping of fields)',
  array: 'a list',
};

/** Fills in a rule where a schema sets none (plain zod types). */
export const fallbackRule: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    return `must be ${TYPE_NAMES[issue.expected] ?? issue.expected}`;
  }
  return undefined;
};

/** A field that looks like a model endpoint or a credential: the gateway holds those, never a suite. */
const CONNECTION_FIELD = /url|endpoint|api_?base|api_?key|secret|token|password|credential/i;
const CONNECTION_RULE =
  'is not allowed: a suite never carries a model URL or key; the gateway holds the model connection (MODEL_BASE_URL, ' +
  'MODEL_API_KEY) and a suite may only name a model';

function unknownSuiteField(key: string, known: readonly string[]): string {
  return CONNECTION_FIELD.test(key) ? CONNECTION_RULE : unknownFieldRule(key, known);
}

/** The problems of a failed parse; `knownAt` gives the fields of the object at a path (knownFieldsNoter). */
export function problemsOf(error: z.ZodError, knownAt: (path: PropertyKey[]) => string[]): SuiteProblem[] {
  const problems: SuiteProblem[] = [];
  for (const issue of error.issues) {
    const base = issue.path.filter((k): k is string | number => typeof k !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const path = [...base, key];
        problems.push({ field: formatPath(path), path, rule: `${formatPath(path)} ${unknownSuiteField(key, knownAt(issue.path))}` });
      }
      continue;
    }
    let rule = issue.message;
    // The shared connect schemas start their messages with the field's own name.
    const last = base.at(-1);
    if (typeof last === 'string' && rule.startsWith(`${last} `)) rule = rule.slice(last.length + 1);
    if (issue.code === 'invalid_type' && (issue as { input?: unknown }).input === undefined) rule = 'is required';
    const field = base.length > 0 ? formatPath(base) : 'the suite';
    problems.push({ field, path: base, rule: `${field} ${rule}` });
  }
  return problems;
}

export const notAnObject: SuiteProblem = {
  field: 'the suite',
  path: [],
  rule: 'the suite must be an object (a mapping) with agent, conversations and the other fields',
};
