import type { z } from 'zod';

/**
 * The one wording of an unknown field, for a request (./requests.ts) as for a suite file
 * (suites/spec/problems.ts): `lines is not a known field; did you mean line? the fields here are
 * line, locale, …`. The fields an object knows are read from its schema's shape, never listed by
 * hand.
 */

/** Fields a shape declares only to refuse them with their own rule: not offered as known. */
const refused = new WeakSet<object>();

/** Declares a field that is known only to be refused where it stands (a suite's `run_label` on a conversation). */
export function refusedHere<S extends z.ZodType>(schema: S): S {
  refused.add(schema);
  return schema;
}

/** The fields an object schema accepts, in the order its shape declares them. */
function knownFieldsOf(schema: { shape: Record<string, object> }): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => !refused.has(field))
    .map(([key]) => key);
}

/**
 * An error map's side: for each `unrecognized_keys` issue, the fields the object that raised it
 * knows, by the issue's path. Zod drops the schema from the issue it returns, so they are noted
 * while the issue is being worded.
 */
export function knownFieldsNoter(): { note: (issue: z.core.$ZodRawIssue) => void; at: (path: PropertyKey[]) => string[] } {
  const known = new Map<string, string[]>();
  const keyOf = (path: readonly PropertyKey[]): string => JSON.stringify(path.map(String));
  return {
    note(issue) {
      if (issue.code !== 'unrecognized_keys') return;
      const shape = (issue.inst as { _zod?: { def?: { shape?: Record<string, object> } } } | undefined)?._zod?.def?.shape;
      if (shape !== undefined) known.set(keyOf(issue.path ?? []), knownFieldsOf({ shape }));
    },
    at: (path) => known.get(keyOf(path)) ?? [],
  };
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * The rule, without the field's name: `is not a known field; did you mean line? the fields here
 * are line, locale, …` (the nearest known field within two edits, if any).
 */
export function unknownFieldRule(key: string, known: readonly string[]): string {
  const near = known
    .map((k) => ({ k, d: distance(key.toLowerCase(), k) }))
    .filter(({ d }) => d <= 2)
    .sort((x, y) => x.d - y.d)[0];
  const hint = near ? `did you mean ${near.k}? ` : '';
  return `is not a known field; ${hint}${known.length > 0 ? `the fields here are ${known.join(', ')}` : ''}`.replace(/; $/, '');
}
