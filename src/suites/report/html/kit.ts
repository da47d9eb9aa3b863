import type { ModelUsage } from '../run-report.js';

/**
 * The small kit the HTML reports are written with: one escape for every value that comes from a
 * report (agent text, lines, evidence, reasoning, names — all untrusted), and a tagged template
 * that applies it to every interpolation by default. Markup already built by `html` passes through
 * as is; `raw()` marks a string the renderer wrote itself (the style sheet) as markup.
 */
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** The one escape: safe as element text and inside a double- or single-quoted attribute. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ENTITIES[c]!);

/** Markup: the only thing an interpolation does not escape. */
export class Html {
  readonly markup: string;
  // A plain field, not a parameter property: the runs page serves this module to the browser with only its types stripped.
  constructor(markup: string) {
    this.markup = markup;
  }
  toString(): string {
    return this.markup;
  }
}

/** What an interpolation takes: markup as is, text escaped, lists joined, nothing for null, undefined and false. */
export type Fragment = Html | string | number | null | undefined | false | readonly Fragment[];

/** Marks a string the renderer wrote itself as markup. Never for a value from a report. */
export const raw = (markup: string): Html => new Html(markup);

const isList = (value: Fragment): value is readonly Fragment[] => Array.isArray(value);

function render(value: Fragment): string {
  if (value instanceof Html) return value.markup;
  if (isList(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** html`<p>${text}</p>`: every interpolation escaped unless it is markup. */
export function html(strings: TemplateStringsArray, ...values: Fragment[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Markup between fragments: `join([a, b], html` · `)`. */
export const join = (parts: readonly Fragment[], separator: Fragment): Html =>
  html`${parts.filter((p) => p !== null && p !== undefined && p !== false && p !== '').map((p, i) => (i === 0 ? [p] : [separator, p]))}`;

// Numbers, durations and times as a person reads them, the same on every machine (no locale).

const count = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export const plural = (n: number, one: string, many = `${one}s`): string => `${count(n)} ${n === 1 ? one : many}`;

export const percent = (share: number): string => `${Math.round(share * 100)}%`;

export function duration(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** `2026-12-02 04:46:20 UTC` from an ISO timestamp; anything else as it is. */
export const timestamp = (iso: string | null): string =>
  iso === null
    ? '–'
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(iso)
      ? iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC')
      : iso;

/** `4 calls · 706 + 26 tokens · 11 ms`; `none` when the model was not called. */
export const usage = (u: ModelUsage): string =>
  u.calls === 0
    ? 'none'
    : `${plural(u.calls, 'call')} · ${count(u.prompt_tokens)} + ${count(u.completion_tokens)} tokens · ${duration(u.duration_ms)}`;
