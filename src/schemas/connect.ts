/**
 * Caller input rules (openapi.yaml, start and turn bodies). Every rule message names its field, and a value
 * that passes is sent to the engine exactly as returned here.
 */

import { z } from 'zod';
import { DEVICE_NAMESPACE } from '../domain/vocabulary.js';

const MAX_LINE_CHARS = 4000;
const MAX_NAME_CHARS = 256;

// Letters, digits and `. _ : @ -`: nothing that could mean something in a query or a path.
const NAME_CHARS = /^[\p{L}\p{Nd}._:@-]+$/u;
const NAME_RULE = 'may use only letters, digits and . _ : @ -';

const LINE_BREAKS_AND_CONTROLS = /[\p{Cc}\u2028\u2029]/u; // \p{Cc} covers CR, LF, U+0085, tab, DEL.
const LONE_SURROGATE = /\p{Cs}/u;
const STARTS_WITH_ACTION = /^[\s\p{Cf}]*#/u;
export const INTRO = '#intro';

/** At most `max` characters as the API (and JSON Schema's maxLength) counts them: code points, not UTF-16 units. */
export const withinChars = (value: string, max: number): boolean => value.length <= max || [...value].length <= max;

const LINE_RULES = {
  empty: 'line must not be empty',
  long: `line must be at most ${MAX_LINE_CHARS} characters`,
  breaks: 'line must be one line: no CR, LF, U+2028, U+2029, U+0085 or other control characters',
  surrogate: 'line must be valid Unicode text: no lone UTF-16 surrogate, which the engine would receive as U+FFFD',
  action: `line may start with # only as exactly ${INTRO}: other # lines are engine actions (#exit, #ready:…) and are never sent`,
};

/**
 * Every rule a line breaks, in the order the API lists them: the one statement of the line's
 * rules, for the schema and for a turn's quick check (./requests.ts).
 */
export function lineProblems(line: string): string[] {
  const problems: string[] = [];
  const trimmed = line.trim();
  if (trimmed === '') problems.push(LINE_RULES.empty);
  if (!withinChars(line, MAX_LINE_CHARS)) problems.push(LINE_RULES.long);
  if (LINE_BREAKS_AND_CONTROLS.test(line)) problems.push(LINE_RULES.breaks);
  if (LONE_SURROGATE.test(line)) problems.push(LINE_RULES.surrogate);
  if (STARTS_WITH_ACTION.test(line) && trimmed !== INTRO) problems.push(LINE_RULES.action);
  return problems;
}

/** A valid line as the engine receives it: `#intro` however it was spaced, any other line as it came. */
export const sentLine = (line: string): string => (line.trim() === INTRO ? INTRO : line);

export const lineSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'line is required' : 'line must be a string') })
  .superRefine((line, ctx) => {
    for (const message of lineProblems(line)) ctx.addIssue({ code: 'custom', message });
  })
  .transform(sentLine);

const nameSchema = (field: string) =>
  z
    .string({ error: `${field} must be a string` })
    .min(1, { error: `${field} must not be empty` })
    .refine((name) => withinChars(name, MAX_NAME_CHARS), { error: `${field} must be at most ${MAX_NAME_CHARS} characters` })
    .regex(NAME_CHARS, { error: `${field} ${NAME_RULE}` });

/** `alice` → `mcp:alice`; `mcp:alice` stays; `client:bob` → `mcp:client:bob`. */
const forceDeviceNamespace = (ref: string): string => (ref.startsWith(DEVICE_NAMESPACE) ? ref : `${DEVICE_NAMESPACE}${ref}`);

export const deviceRefSchema = nameSchema('device_ref')
  .refine((ref) => ref !== DEVICE_NAMESPACE, { error: 'device_ref must name a device after mcp:' })
  .transform(forceDeviceNamespace);

const LANGUAGE_TAG = /^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/;
export const localeSchema = z
  .string({ error: 'locale must be a string' })
  .transform((tag) => tag.replaceAll('_', '-'))
  .refine(
    (tag) => {
      if (!LANGUAGE_TAG.test(tag)) return false;
      try {
        return Intl.getCanonicalLocales(tag).length === 1;
      } catch {
        return false;
      }
    },
    { error: 'locale must be one language tag such as en-US or de_DE' },
  );

const ZONE_CHARS = /^[A-Za-z0-9_+\-/]+$/;
const resolvedZone = (zone: string): string | undefined => {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
};
export const timeZoneSchema = z.string({ error: 'time_zone must be a string' }).superRefine((zone, ctx) => {
  if (zone.includes('`')) {
    ctx.addIssue({ code: 'custom', message: 'time_zone must not contain ` : the engine receives it as a space' });
    return;
  }
  const resolved = ZONE_CHARS.test(zone) && zone.length <= 64 ? resolvedZone(zone) : undefined;
  if (resolved === undefined) {
    ctx.addIssue({ code: 'custom', message: 'time_zone must be an IANA time zone the runtime knows, such as Europe/Prague' });
  } else if (resolved !== zone && resolved.toLowerCase() === zone.toLowerCase()) {
    // The engine matches zone names exactly; only the runtime here forgives the case.
    ctx.addIssue({ code: 'custom', message: `time_zone must be written as ${resolved}` });
  }
});

const DURATION =
  /^([-+]?)P(?=\d|T\d)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;
export const timeOffsetSchema = z.string({ error: 'time_offset must be a string' }).superRefine((offset, ctx) => {
  const match = offset.length <= 64 ? DURATION.exec(offset) : null;
  if (match === null) {
    ctx.addIssue({
      code: 'custom',
      message: 'time_offset must be a negative ISO-8601 duration such as -P10D (ten days ago) or -PT5H',
    });
    return;
  }
  const nonZero = match.slice(2).some((part) => part !== undefined && Number(part.replace(',', '.')) > 0);
  if (match[1] !== '-' || !nonZero) {
    ctx.addIssue({
      code: 'custom',
      message:
        'time_offset must be negative, e.g. -P10D for ten days ago: ' +
        'the engine adds the offset to its own clock, so a positive one would date the session in the future',
    });
  }
});

/** The connect fields: fixed when the conversation connects. */
export const connectFields = {
  locale: localeSchema.optional(),
  device_ref: deviceRefSchema.optional(),
  time_zone: timeZoneSchema.nullish(),
  run_label: nameSchema('run_label').nullish(),
  time_offset: timeOffsetSchema.nullish(),
};
