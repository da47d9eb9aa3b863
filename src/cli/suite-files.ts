import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, relative, resolve } from 'node:path';
import type { AgentRef } from '../domain/vocabulary.js';
import { parseFieldPath } from '../suites/spec/problems.js';
import { withOverrides } from '../suites/spec/request.js';
import { formatProblem, loadSuite, type LoadedSuite, type SourceProblem } from '../suites/spec/yaml.js';
import type { Io } from './io.js';
import { expandSuitePatterns } from './globs.js';
import type { HttpFailure } from './post.js';

/** A suite file read, checked and turned into the body the gateway's routes take. */
export interface PreparedSuite {
  file: string;
  name: string;
  loaded: LoadedSuite;
  body: Record<string, unknown>;
}

/** What the command line sets over every suite's own fields. */
export interface Overrides {
  repeat: number | undefined;
  /** `--max-attempts N`: a sequential budget, over the suite's own `repeat` or `max_attempts` */
  maxAttempts: number | undefined;
  concurrency: number | undefined;
  /** `--monitor`: sent as the run's `monitor` */
  monitor: string | undefined;
  agent: AgentRef | undefined;
}

/** Reads, validates and resolves one suite file (its memory fixture read relative to it). */
async function prepare(
  file: string,
  overrides: Overrides,
): Promise<{ ok: true; suite: PreparedSuite } | { ok: false; problems: SourceProblem[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { ok: false, problems: [{ file, line: undefined, message: `cannot read the suite: ${(err as Error).message}` }] };
  }
  const loaded = loadSuite(text, file);
  if (!loaded.ok) return loaded;
  const body = withOverrides(structuredClone(loaded.data), {
    repeat: overrides.repeat,
    max_attempts: overrides.maxAttempts,
    concurrency: overrides.concurrency,
  }) as Record<string, unknown>;
  if (overrides.monitor !== undefined) body.monitor = overrides.monitor;
  if (overrides.agent !== undefined) {
    body.agent = overrides.agent.key;
    loaded.suite.agent = overrides.agent;
  }
  const memory = loaded.suite.memory;
  if (memory !== undefined) {
    const wire: Record<string, unknown> = { ...(body.memory as Record<string, unknown>) };
    if (memory.restore !== undefined) {
      const path = resolve(dirname(file), memory.restore);
      const problem = (message: string) => ({
        ok: false as const,
        problems: [{ file, line: loaded.lineOf(['memory', 'restore']), message: `memory.restore: ${message}` }],
      });
      let snapshot: unknown;
      try {
        snapshot = JSON.parse(await readFile(path, 'utf8'));
      } catch (err) {
        return problem(`cannot read ${memory.restore} as JSON: ${(err as Error).message}`);
      }
      const units = (snapshot as { units?: unknown } | null)?.units;
      if (!Array.isArray(units) || units.some((u) => typeof u !== 'object' || u === null || Array.isArray(u))) {
        return problem(
          `${memory.restore} must be a JSON object with a units array of objects: a snapshot as the memory route or memory.save writes it`,
        );
      }
      wire.restore = { units };
    }
    if (memory.save !== undefined) wire.save = true;
    else delete wire.save;
    body.memory = wire;
  }
  const name = loaded.suite.name ?? basename(file, extname(file));
  // The gateway knows a run's suite by its name (the runs page lists it): the name this command prints, the file's where it has none.
  body.name ??= name;
  return { ok: true, suite: { file, name, loaded, body } };
}

/** Every suite named (patterns expanded), read before anything runs: one bad file stops the whole run, with every problem. */
export async function prepareSuites(
  files: string[],
  overrides: Overrides,
): Promise<{ suites: PreparedSuite[]; problems: SourceProblem[] }> {
  const suites: PreparedSuite[] = [];
  const problems: SourceProblem[] = [];
  for (const file of await expandSuitePatterns(files)) {
    const result = await prepare(file, overrides);
    if (result.ok) suites.push(result.suite);
    else problems.push(...result.problems);
  }
  return { suites, problems };
}

/** The problems in the suites, for stderr, and the JUnit error of a file that could not run because of them. */
export function problemsReport(problems: SourceProblem[]): { text: string; errorOf: (file: string) => { error: string; message: string } } {
  return {
    text:
      `${problems.map(formatProblem).join('\n')}\n` +
      `${problems.length} problem${problems.length === 1 ? '' : 's'} in the suites; nothing was run.\n`,
    errorOf: (file) => {
      const own = problems.filter((p) => p.file === file).map(formatProblem);
      return own.length > 0
        ? { error: 'suite_invalid', message: own.join('\n') }
        : { error: 'not_run', message: 'Not run: problems in other suites of this run stopped it before anything was sent.' };
    },
  };
}

/** A gateway's refusal as the person reads it: each problem at its line of the suite file. */
export function failureText(suite: PreparedSuite, f: HttpFailure): string {
  const lines = (f.problems ?? [])
    .filter((p) => typeof p.rule === 'string')
    .map((p) =>
      formatProblem({
        file: suite.file,
        line: typeof p.field === 'string' ? suite.loaded.lineOf(parseFieldPath(p.field)) : undefined,
        message: p.rule!,
      }),
    );
  const status = f.status === undefined ? '' : `HTTP ${f.status} `;
  return lines.length > 0
    ? `${suite.file}: ${status}${f.error}:\n${lines.join('\n')}\n`
    : `${suite.file}: ${status}${f.error}: ${f.message}\n`;
}

/** A path as the user can open it from where the command ran: relative to the working directory when inside it, else absolute. */
function openable(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/**
 * Writes an output file (its folder created); false, with the reason on stderr, when it cannot.
 * `-` is standard output, after the text report: a monitor's Job keeps its JSON in its log.
 */
export async function writeOutput(command: string, path: string, content: string, io: Io): Promise<boolean> {
  if (path === '-') {
    io.stdout(content);
    return true;
  }
  try {
    await mkdir(dirname(resolve(path)), { recursive: true });
    await writeFile(path, content);
    io.stderr(`wrote ${openable(path)}\n`);
    return true;
  } catch (err) {
    io.stderr(`agent-test-gateway ${command}: cannot write ${path}: ${(err as Error).message}\n`);
    return false;
  }
}

/** Writes a run's memory snapshot where the suite's `memory.save` says; false, with the reason, when there is none. */
export async function saveSnapshot(suite: PreparedSuite, snapshot: unknown, why: string | undefined, io: Io): Promise<boolean> {
  const save = suite.loaded.suite.memory?.save;
  if (save === undefined) return true;
  const path = resolve(dirname(suite.file), save);
  if (snapshot === null || snapshot === undefined) {
    io.stderr(`${suite.file}: memory.save: no snapshot to write to ${save}: ${why ?? 'the gateway returned none'}\n`);
    return false;
  }
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(snapshot, null, 2)}\n`);
  io.stdout(`  memory snapshot written to ${openable(path)}\n`);
  return true;
}
