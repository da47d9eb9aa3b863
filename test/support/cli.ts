import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Io } from '../../src/cli/io.js';
import type { Json } from './http.js';
import { childEnv } from './stack.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `agent-test-gateway <command> …` as CI runs it: a child process from the sources, with the demo
 * token. `interruptWhen`: pressed Ctrl-C (SIGINT) once, as soon as it holds (polled).
 */
export function cli(
  command: 'run' | 'compare' | 'capture' | 'attacks',
  args: string[],
  env: Record<string, string> = {},
  interruptWhen?: () => boolean,
): Promise<CliResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', command, ...args], {
    cwd: process.cwd(),
    env: childEnv({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token', AGENT_TEST_GATEWAY_URL: '', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const poll =
    interruptWhen === undefined
      ? undefined
      : setInterval(() => {
          if (!interruptWhen()) return;
          clearInterval(poll);
          child.kill('SIGINT');
        }, 50);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearInterval(poll);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** Reads a JUnit file: whether XMLValidator accepts it, and its parsed <testsuites>. */
export async function readJunit(path: string): Promise<{ valid: unknown; doc: Json }> {
  const xml = await readFile(path, 'utf8');
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => ['testsuite', 'testcase', 'property'].includes(name),
  });
  return { valid: XMLValidator.validate(xml), doc: parser.parse(xml).testsuites };
}

/** The command's streams in memory, as a test calls a command's `main` in-process with the demo token; no terminal. */
export function memoryIo(): Io & { out: () => string; err: () => string } {
  let stdout = '';
  let stderr = '';
  return {
    env: { AGENT_TEST_GATEWAY_TOKEN: 'demo-token' },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    progress: false,
    progressEveryMs: 60_000,
    onInterrupt: () => () => undefined,
    out: () => stdout,
    err: () => stderr,
  };
}
