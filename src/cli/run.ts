/**
 * `agent-test-gateway run suite.yaml [more.yaml …] [--gateway URL] [--junit FILE]`
 *
 * Reads every suite first (a problem is reported at its line, and nothing runs), then posts
 * each to the gateway's runs route, prints its transcript with a ✓ or ✗ per expectation, and
 * writes JUnit XML. Exit status: 0 all passed, 1 an expectation failed, 2 usage, suite or HTTP
 * problems (a suite that could not run).
 */

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, relative, resolve } from 'node:path';
import { request } from 'undici';
import { gatewayProblem, gatewayUrl, MISSING_TOKEN, tokenFrom } from './connection.js';
import { ndjsonLines } from '../http/ndjson.js';
import { expandSuitePatterns } from './patterns.js';
import type { AgentRef } from '../domain/vocabulary.js';
import { agentSchema } from '../schemas/requests.js';
import { parseFieldPath } from '../suites/problems.js';
import { repeatSchema } from '../suites/schema.js';
import { junitXml, type JUnitSuite } from '../suites/junit.js';
import type { RunReport, TurnEvent } from '../suites/report.js';
import { FAIL, PASS, renderReport, turnTitle } from '../suites/transcript.js';
import { formatProblem, loadSuite, type LoadedSuite, type SourceProblem } from '../suites/yaml.js';

/**
 * `agent-test-gateway run suite.yaml [more.yaml …] [--gateway URL] [--junit FILE] [--repeat N] [--agent REF]`
 *
 * Reads every suite first (a problem is reported at its line, and nothing runs), then posts
 * each to the gateway's runs route, prints its transcript with a ✓ or ✗ per expectation, and
 * writes JUnit XML. Exit status: 0 all passed; 1 something failed (an expectation, a criterion, a
 * conversation under its pass rate), whatever else happened; 2 nothing failed but something could
 * not run (usage, suite or HTTP problems, an attempt that could not go on or be judged).
 */
export const USAGE = `usage: agent-test-gateway run <suite.yaml>… [--gateway URL] [--junit FILE] [--repeat N] [--agent REF]

  Runs test suites through a running gateway and prints each turn with a ✓ or ✗ per expectation.

  --gateway URL   the gateway (default: $AGENT_TEST_GATEWAY_URL, else http://127.0.0.1:8080)
  --junit FILE    also write JUnit XML to FILE, for CI
  --repeat N      run each conversation N times (1-20), over the suites' own repeat
  --agent REF     run the suites against this agent or revision (coach, coach.3), over their own agent

  The platform access token is read from AGENT_TEST_GATEWAY_TOKEN.
  Exit status: 0 everything passed; 1 something failed (an expectation, a criterion, a pass rate);
  2 nothing failed but something could not run (usage, suite or HTTP errors, a model failure).
`;

export interface Io {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** progress lines while a suite runs (only when stderr is a terminal) */
  progress: boolean;
}

const defaultIo = (): Io => ({
  env: process.env,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  progress: process.stderr.isTTY === true,
});

interface Options {
  files: string[];
  gateway: string;
  junit: string | undefined;
  /** `--repeat N`: attempts of each conversation, over the suites' own `repeat` */
  repeat: number | undefined;
  /** `--agent REF`: the agent or revision to run against, over the suites' own `agent` */
  agent: AgentRef | undefined;
}

const OPTIONS = ['--gateway', '--junit', '--repeat', '--agent'];

class UsageError extends Error {}

function parseArgs(args: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const files: string[] = [];
  let gateway: string | undefined;
  let junit: string | undefined;
  let repeat: number | undefined;
  let agent: AgentRef | undefined;
  let onlyFiles = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (onlyFiles || !arg.startsWith('-') || arg === '-') {
      files.push(arg);
      continue;
    }
    if (arg === '--') {
      onlyFiles = true;
      continue;
    }
    if (arg === '-h' || arg === '--help') return 'help';
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (!OPTIONS.includes(name)) throw new UsageError(`unknown option ${name}`);
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '' || (eq < 0 && value.startsWith('--'))) throw new UsageError(`${name} needs a value`);
    if (name === '--gateway') gateway = value;
    else if (name === '--junit') junit = value;
    else if (name === '--repeat') {
      const parsed = repeatSchema.safeParse(Number(value));
      if (!parsed.success) throw new UsageError(`--repeat ${parsed.error.issues[0]!.message}`);
      repeat = parsed.data;
    } else {
      const parsed = agentSchema.safeParse(value);
      if (!parsed.success) throw new UsageError(`--agent ${parsed.error.issues[0]!.message.replace(/^agent /, '')}`);
      agent = parsed.data;
    }
  }
  if (files.length === 0) throw new UsageError('name at least one suite file');
  const url = gatewayUrl(gateway, env);
  const problem = gatewayProblem(url);
  if (problem !== undefined) throw new UsageError(problem);
  return { files, gateway: url, junit, repeat, agent };
}

interface Prepared {
  file: string;
  name: string;
  loaded: LoadedSuite;
  body: Record<string, unknown>;
}

/** Reads, validates and resolves one suite file (its memory fixture read relative to it). */
async function prepare(file: string, options: Options): Promise<{ ok: true; suite: Prepared } | { ok: false; problems: SourceProblem[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { ok: false, problems: [{ file, line: undefined, message: `cannot read the suite: ${(err as Error).message}` }] };
  }
  const loaded = loadSuite(text, file);
  if (!loaded.ok) return loaded;
  const body = structuredClone(loaded.data);
  if (options.repeat !== undefined) body.repeat = options.repeat;
  if (options.agent !== undefined) {
    body.agent = options.agent.key;
    loaded.suite.agent = options.agent;
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
  return { ok: true, suite: { file, name, loaded, body } };
}

interface HttpFailure {
  status: number | undefined;
  error: string;
  message: string;
  problems?: Array<{ field?: string; rule?: string }>;
}

/** Posts one suite; the answer is streamed (NDJSON) so that a long run keeps its connection alive. */
async function post(
  gateway: string,
  token: string,
  suite: Prepared,
  onTurn: (event: TurnEvent) => void,
): Promise<{ report: RunReport } | { failure: HttpFailure }> {
  const agent = suite.loaded.suite.agent!.key;
  const url = `${gateway}/v1/agents/${encodeURIComponent(agent)}/runs`;
  let res;
  try {
    res = await request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/x-ndjson, application/json',
      },
      body: JSON.stringify(suite.body),
      // A run lasts as long as its turns: no client-side timeout cuts it.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    return {
      failure: {
        status: undefined,
        error: 'unreachable',
        message: `cannot reach the gateway at ${gateway}: ${code ?? (err as Error).message}`,
      },
    };
  }
  const type = String(res.headers['content-type'] ?? '');
  if (res.statusCode !== 200 || !type.includes('ndjson')) {
    const text = await res.body.text();
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    if (res.statusCode === 200 && body !== undefined && typeof body.run_id === 'string') return { report: body as unknown as RunReport };
    return {
      failure: {
        status: res.statusCode,
        error: typeof body?.error === 'string' ? body.error : 'http_error',
        message: typeof body?.message === 'string' ? body.message : `the gateway answered HTTP ${res.statusCode}: ${text.slice(0, 200)}`,
        ...(Array.isArray((body?.details as { problems?: unknown } | undefined)?.problems)
          ? { problems: (body!.details as { problems: HttpFailure['problems'] }).problems }
          : {}),
      },
    };
  }
  let report: RunReport | undefined;
  let failure: HttpFailure | undefined;
  const take = (line: string) => {
    let item: Record<string, unknown>;
    try {
      item = JSON.parse(line) as Record<string, unknown>;
    } catch {
      failure = { status: 200, error: 'bad_stream', message: 'the gateway sent a line that is not JSON' };
      return;
    }
    if (item.turn !== undefined) onTurn(item.turn as TurnEvent);
    else if (item.report !== undefined) report = item.report as RunReport;
    else if (typeof item.error === 'string')
      failure = { status: 200, error: item.error, message: typeof item.message === 'string' ? item.message : '' };
  };
  try {
    for await (const line of ndjsonLines(res.body)) take(line);
  } catch (err) {
    return {
      failure: {
        status: 200,
        error: 'stream_broken',
        message: `the connection to the gateway broke during the run: ${(err as Error).message}`,
      },
    };
  }
  if (report !== undefined) return { report };
  return { failure: failure ?? { status: 200, error: 'no_report', message: 'the gateway ended the run without a report' } };
}

export async function main(args: string[], io: Io = defaultIo()): Promise<number> {
  let options: Options | 'help';
  try {
    options = parseArgs(args, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`agent-test-gateway run: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    io.stdout(USAGE);
    return 0;
  }
  // A suite that cannot run still leaves a JUnit <error> behind, so that CI's report step finds its file.
  const notRun = async (errorOf: (file: string) => JUnitSuite['error']): Promise<number> => {
    if (options.junit !== undefined) {
      const suites = options.files.map((file) => ({ name: basename(file, extname(file)), file, error: errorOf(file) }));
      await writeJunit(options.junit, suites, io);
    }
    return 2;
  };
  const token = tokenFrom(io.env);
  if (!token) {
    io.stderr(`agent-test-gateway run: ${MISSING_TOKEN}\n`);
    return notRun(() => ({ error: 'no_token', message: `Not run: ${MISSING_TOKEN}.` }));
  }

  // Every suite is read before anything runs: one bad file stops the whole run, with every problem.
  const prepared: Prepared[] = [];
  const problems: SourceProblem[] = [];
  for (const file of await expandSuitePatterns(options.files)) {
    const result = await prepare(file, options);
    if (result.ok) prepared.push(result.suite);
    else problems.push(...result.problems);
  }
  if (problems.length > 0) {
    io.stderr(`${problems.map(formatProblem).join('\n')}\n`);
    io.stderr(`${problems.length} problem${problems.length === 1 ? '' : 's'} in the suites; nothing was run.\n`);
    return notRun((file) => {
      const own = problems.filter((p) => p.file === file).map(formatProblem);
      return own.length > 0
        ? { error: 'suite_invalid', message: own.join('\n') }
        : { error: 'not_run', message: 'Not run: problems in other suites of this run stopped it before anything was sent.' };
    });
  }

  const junit: JUnitSuite[] = [];
  let failed = false;
  let broken = false;
  for (const suite of prepared) {
    const onTurn = (event: TurnEvent) => {
      if (!io.progress) return;
      const mark = event.turn.status === 'passed' ? PASS : event.turn.status === 'failed' ? FAIL : '-';
      io.stderr(`  ${mark} ${suite.name}: ${turnTitle(event.conversation, event.turn)}\n`);
    };
    const answer = await post(options.gateway, token, suite, onTurn);
    if ('failure' in answer) {
      broken = true;
      const f = answer.failure;
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
      io.stderr(
        lines.length > 0
          ? `${suite.file}: ${status}${f.error}:\n${lines.join('\n')}\n`
          : `${suite.file}: ${status}${f.error}: ${f.message}\n`,
      );
      junit.push({ name: suite.name, file: suite.file, error: { error: f.error, message: f.message } });
      continue;
    }
    const report = answer.report;
    io.stdout(renderReport(report, `${suite.name} (${suite.file})`));
    // A conversation that failed counts over one that could not run (status error).
    if (report.conversations.some((c) => !c.passed && c.status !== 'error')) failed = true;
    else if (!report.passed) broken = true;
    junit.push({ name: suite.name, file: suite.file, report });

    const save = suite.loaded.suite.memory?.save;
    if (save !== undefined) {
      const path = resolve(dirname(suite.file), save);
      if (report.memory?.snapshot) {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, `${JSON.stringify(report.memory.snapshot, null, 2)}\n`);
        io.stdout(`  memory snapshot written to ${openable(path)}\n`);
      } else {
        broken = true;
        io.stderr(
          `${suite.file}: memory.save: no snapshot to write to ${save}: ${report.memory?.error?.message ?? 'the gateway returned none'}\n`,
        );
      }
    }
    io.stdout('\n');
  }

  if (options.junit !== undefined && !(await writeJunit(options.junit, junit, io))) broken = true;
  const ran = junit.filter((s) => s.report !== undefined).length;
  const passedCount = junit.filter((s) => s.report?.passed === true).length;
  io.stdout(
    `${broken || failed ? FAIL : PASS} ${passedCount} of ${prepared.length} suite${prepared.length === 1 ? '' : 's'} passed${
      ran < prepared.length ? ` (${prepared.length - ran} could not run)` : ''
    }\n`,
  );
  return failed ? 1 : broken ? 2 : 0;
}

/** A path as the user can open it from where the command ran: relative to the working directory when inside it, else absolute. */
function openable(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/** Writes the JUnit file (its folder created); false, with the reason on stderr, when it cannot. */
async function writeJunit(path: string, suites: JUnitSuite[], io: Io): Promise<boolean> {
  try {
    await mkdir(dirname(resolve(path)), { recursive: true });
    await writeFile(path, junitXml(suites));
    return true;
  } catch (err) {
    io.stderr(`agent-test-gateway run: cannot write ${path}: ${(err as Error).message}\n`);
    return false;
  }
}
