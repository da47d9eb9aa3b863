import type { AttemptMemoryReport } from './run-report.js';

// What an attempt left in memory, as a person reads it (the terminal, JUnit, HTML): one headline,
// and the units added and removed, each shortened to a line (the JSON report has them whole).

const MAX_UNIT_CHARS = 120;
/** Units listed at most per side; the rest are counted. */
const MAX_UNITS_SHOWN = 10;

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;
/** A wait in words: `400 ms`, `1.5 s`, `30 s`. */
export const seconds = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`);

/** A unit's JSON on one line, shortened: `{"kind":"fact","text":"wears shoe size 44",…`. */
function unitLine(unit: Record<string, unknown>): string {
  const json = JSON.stringify(unit);
  return json.length > MAX_UNIT_CHARS ? `${json.slice(0, MAX_UNIT_CHARS)}…` : json;
}

/** `memory: 2 units added, 1 removed · settled after 31.2 s (11 reads)`, or why it was not checked. */
export function memoryHeadline(m: AttemptMemoryReport): string {
  const waited = `${seconds(m.waited_ms)} (${plural(m.polls, 'read')})`;
  switch (m.status) {
    case 'aggregated':
      return `memory: ${plural(m.added.length, 'unit')} added, ${m.removed.length} removed · settled after ${waited}`;
    case 'nothing_aggregated':
      return `memory: nothing was aggregated · waited ${waited}`;
    case 'unreadable':
      return `memory: could not be read${m.error === null ? '' : ` (${m.error.message})`}`;
    default:
      return 'memory: not checked';
  }
}

/** The diff, a unit a line: `+ …` added, `- …` removed, at most ten each, then how many more. */
export function diffLines(m: AttemptMemoryReport): string[] {
  const side = (units: Array<Record<string, unknown>>, mark: string): string[] => [
    ...units.slice(0, MAX_UNITS_SHOWN).map((u) => `${mark} ${unitLine(u)}`),
    ...(units.length > MAX_UNITS_SHOWN ? [`${mark} … ${units.length - MAX_UNITS_SHOWN} more`] : []),
  ];
  return [...side(m.added, '+'), ...side(m.removed, '-')];
}
