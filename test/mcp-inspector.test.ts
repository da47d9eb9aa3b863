/**
 * The MCP Inspector's CLI mode (the devDependency @modelcontextprotocol/inspector, which needs
 * Node 22.19 or later) against `npm run demo`'s gateway as a child process: tools/list with its
 * schema portability check, then test_agent twice over one conversation.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { childEnv } from './support/stack.js';
import { freePort } from './support/http.js';
import { TOOL_NAMES } from './support/mcp.js';

const INSPECTOR = join(process.cwd(), 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  const child = spawn(process.execPath, command, { cwd: process.cwd(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

async function startDemo(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const port = await freePort();
  const demo: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/demo.ts'], {
    cwd: process.cwd(),
    env: childEnv({ PORT: String(port), LOG_LEVEL: 'warn', SHUTDOWN_GRACE_MS: '0' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    demo.kill('SIGTERM');
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    demo.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const gateway = /gateway on (http:\/\/\S+)/.exec(out);
      if (gateway) resolve(gateway[1]!);
    });
    demo.on('exit', (code) => reject(new Error(`the demo exited with ${code}: ${out}`)));
  });
  return `${url}/mcp`;
}

const installed = existsSync(INSPECTOR);

t.test(
  'the MCP Inspector CLI lists the tools and tests an agent',
  { skip: installed ? false : 'devDependency @modelcontextprotocol/inspector is not installed' },
  async (t) => {
    const url = await startDemo(t);
    const env = childEnv({ MCP_CATALOG_PATH: join(t.testdir(), 'mcp.json'), NO_COLOR: '1' });
    const inspector = (...args: string[]) => run([INSPECTOR, '--cli', url, '--header', 'Authorization: Bearer demo-token', ...args], env);

    const list = await inspector('--method', 'tools/list', '--strict');
    t.equal(list.code, 0, 'tools/list --strict finds no error-severity schema portability problem', { stderr: list.stderr });
    // The output schemas are the API's response shapes (src/api/responses.ts), portable as they are;
    // the input schemas are listed in a portable spelling by src/mcp/tools.ts.
    const findings = list.stderr.split('\n').filter((l) => /^\s*Path: /.test(l));
    t.same(findings, [], 'no schema portability finding for any input or output schema', { stderr: list.stderr });
    t.notMatch(list.stderr, /warning/i, 'tools/list --strict prints no warning', { stderr: list.stderr });
    const names = (JSON.parse(list.stdout) as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name).sort();
    t.same(names, TOOL_NAMES);

    const first = await inspector('--method', 'tools/call', '--tool-name', 'test_agent', '--tool-arg', 'agent=coach');
    t.equal(first.code, 0, 'test_agent opens a conversation', { stderr: first.stderr });
    const opened = JSON.parse(first.stdout);
    t.match(opened.structuredContent.turn.text, /Hi, I'm coach/);
    const sessionId: string = opened.structuredContent.session_id;

    const next = await inspector(
      '--method',
      'tools/call',
      '--tool-name',
      'test_agent',
      '--tool-arg',
      'agent=coach',
      `session_id=${sessionId}`,
      'line=planning?',
    );
    t.equal(next.code, 0, 'test_agent continues it', { stderr: next.stderr });
    t.match(
      JSON.parse(next.stdout).structuredContent.turn.text,
      /This socket has carried 1 of my turns; the session has 1 line, so I still have my planning\./,
    );

    const refused = await inspector('--method', 'tools/call', '--tool-name', 'test_agent', '--tool-arg', 'agent=coach', 'line=#exit');
    t.match(refused.stdout, /"isError": true/, 'a tool error');
    t.match(refused.stdout, /"invalid_request: line may start with # only as exactly #intro: .*; nothing was sent to the engine"/);

    const anonymous = await run([INSPECTOR, '--cli', url, '--method', 'tools/list'], env);
    t.not(anonymous.code, 0, 'without the token the gateway answers 401');
  },
);
