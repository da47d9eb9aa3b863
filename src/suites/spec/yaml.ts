import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { FileMemory, Suite } from './format.js';
import type { Path } from './problems.js';
import { parseFileSuite } from './schema.js';

/**
 * Reads a suite from YAML keeping where every value sits, so that a problem reads
 * "suite.yaml:12: conversations[0].turns[2].expect.tool must be a string".
 */
export interface SourceProblem {
  file: string;
  line: number | undefined;
  message: string;
}

export interface LoadedSuite {
  suite: Suite<FileMemory>;
  /** The suite as plain data, exactly as written (what the CLI posts, once memory files are read). */
  data: Record<string, unknown>;
  /** The line of the value (or key) at a field path; the nearest enclosing one when it is missing. */
  lineOf(path: Path): number | undefined;
}

export type LoadResult = ({ ok: true } & LoadedSuite) | { ok: false; problems: SourceProblem[] };

export const formatProblem = (p: SourceProblem): string => `${p.file}${p.line === undefined ? '' : `:${p.line}`}: ${p.message}`;

const firstLine = (message: string): string => message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');

export function loadSuite(text: string, file: string): LoadResult {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  const lineAt = (offset: number): number => counter.linePos(offset).line;
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((err) => ({ file, line: lineAt(err.pos[0]), message: `YAML: ${firstLine(err.message)}` })),
    };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return { ok: false, problems: [{ file, line: undefined, message: `YAML: ${firstLine((err as Error).message)}` }] };
  }
  if (data === null || data === undefined) {
    return { ok: false, problems: [{ file, line: undefined, message: 'the file holds no suite: write agent and conversations' }] };
  }
  const lineOf = (path: Path) => lineOfPath(doc, path, lineAt);
  const parsed = parseFileSuite(data);
  if (!parsed.ok) {
    return {
      ok: false,
      problems: parsed.problems
        .map((p) => ({ file, line: lineOf(p.path), message: withYamlHint(doc, p.path, p.rule) }))
        .sort((a, b) => (a.line ?? 0) - (b.line ?? 0)),
    };
  }
  return { ok: true, suite: parsed.suite, data: data as Record<string, unknown>, lineOf };
}

/** An unquoted `#intro` is a YAML comment, so the line arrives empty: say so where it bites. */
function withYamlHint(doc: Document, path: Path, rule: string): string {
  if (path.at(-1) !== 'line') return rule;
  if (!doc.hasIn(path as unknown[])) return rule;
  const node = doc.getIn(path as unknown[], true) as Node | null | undefined;
  const isNull = node === null || node === undefined || (isScalar(node) && node.value === null);
  return isNull && /must be a string|is required/.test(rule)
    ? `${rule} (an unquoted # starts a YAML comment: write "#intro" in quotes)`
    : rule;
}

function lineOfPath(doc: Document, path: Path, lineAt: (offset: number) => number): number | undefined {
  let node: unknown = doc.contents;
  let line = rangeLine(node, lineAt);
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(key));
      if (pair === undefined) return line;
      const keyLine = rangeLine(pair.key, lineAt);
      // A scalar value: its own line; a collection or nothing: the line of its key.
      line = isScalar(pair.value) && pair.value.value !== null ? (rangeLine(pair.value, lineAt) ?? keyLine) : (keyLine ?? line);
      node = pair.value;
    } else if (isSeq(node) && typeof key === 'number') {
      const item = node.items[key];
      if (item === undefined) return line;
      line = rangeLine(item, lineAt) ?? line;
      node = item;
    } else {
      return line;
    }
  }
  return line;
}

function rangeLine(node: unknown, lineAt: (offset: number) => number): number | undefined {
  const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
  return range === undefined ? undefined : lineAt(range[0]);
}
