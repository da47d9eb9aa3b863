/**
 * `agent-test-gateway chat <agent>` as a user runs it: the real command (tsx, no build), its
 * stdin driven line by line, against a gateway with the engine and platform simulators.
 */

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import t from 'tap';
import { childEnv, eventually, startStack, UUID, type Stack } from './support/stack.js';
import { conversationPath } from './support/http.js';
import { scaled } from './support/time.js';
import { commandLine } from '../src/cli/launcher.js';
import { ROOT } from './support/root.js';

interface Chat {
  child: ChildProcessWithoutNullStreams;
  /** everything printed so far, stdout and stderr */
  out(): string;
  stdout(): string;
  stderr(): string;
  /** waits until the output (both streams) matches, after `from` characters */
  waitFor(pattern: RegExp, from?: number, ms?: number): Promise<void>;
  send(line: string): void;
  exit: Promise<number | null>;
}

/** `args` as given when `gateway` is false (a pasted command names its own); else with `--gateway` the stack's URL. */
function startChat(
  t: { teardown(fn: () => unknown): void },
  s: Stack,
  args: string[],
  env: Record<string, string> = {},
  gateway = true,
): Chat {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', ...(gateway ? ['chat', ...args, '--gateway', s.url] : args)],
    {
      cwd: ROOT,
      env: childEnv({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token', AGENT_TEST_GATEWAY_URL: '', NO_COLOR: '1', ...env }),
      stdio: 'pipe',
    },
  );
  let stdout = '';
  let stderr = '';
  let both = '';
  child.stdout.on('data', (d: Buffer) => ((stdout += d.toString()), (both += d.toString())));
  child.stderr.on('data', (d: Buffer) => ((stderr += d.toString()), (both += d.toString())));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    out: () => both,
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(pattern, from = 0, ms = 8000) {
      try {
        await eventually(() => pattern.test(both.slice(from)), ms);
      } catch {
        throw new Error(`the chat never printed ${pattern}; it printed:\n${both}`);
      }
    },
    send(line) {
      child.stdin.write(`${line}\n`);
    },
    exit,
  };
}

t.test('a three-turn conversation, a refused line, and end of input closing it', async (t) => {
  const s = await startStack(t);
  const chat = startChat(t, s, ['coach']);

  await chat.waitFor(/you> $/);
  t.match(chat.stdout(), /coach> Hi, I'm coach\. How can I help\?/, 'the opening streams');
  const sessionId = /session ([0-9a-f-]{36})/.exec(chat.stdout())?.[1];
  t.match(sessionId, UUID, 'the session id is printed');
  t.match(chat.stdout(), `npx agent-test-gateway chat coach --gateway ${s.url} --session ${sessionId}\n`, 'with how to reconnect');

  let mark = chat.out().length;
  chat.send('Where is my order?');
  await chat.waitFor(/you> $/, mark);
  const second = chat.out().slice(mark);
  t.match(second, /\[tool lookup_order\]\ncoach> You said: Where is my order\?\ncoach> Anything else\?/, 'tool marker, then the speech');
  t.equal(second.match(/\[tool lookup_order\]/g)?.length, 1, 'one marker per call (started and completed)');

  mark = chat.out().length;
  chat.send('Which size fits?');
  await chat.waitFor(/you> $/, mark);
  t.match(chat.out().slice(mark), /\[shown size_chart\]\ncoach> You said: Which size fits\?/, 'shown marker');

  mark = chat.out().length;
  chat.send('#exit');
  await chat.waitFor(/you> $/, mark);
  t.match(
    chat.stderr(),
    /gateway: line may start with # only as exactly #intro: other # lines are engine actions .* \(invalid_request\)/,
    "the gateway's own message for a refused line",
  );

  mark = chat.out().length;
  chat.child.stdin.end();
  t.equal(await chat.exit, 0, 'exits 0 at end of input');
  t.match(chat.out().slice(mark), new RegExp(`Closed session ${sessionId}`));

  const conn = s.engine.record.connections[0]!;
  t.equal(s.engine.record.connections.length, 1, 'one socket for the whole conversation');
  t.same(conn.frames, ['#intro', 'Where is my order?', 'Which size fits?'], 'three turns; the refused line never reached the engine');
  await eventually(() => conn.closeCode !== undefined);
  t.equal(conn.closeCode, 1000, 'closed plainly (1000), never #exit');
  const got = await s.call('GET', conversationPath(sessionId!));
  t.equal(got.body.close_cause, 'caller', 'closed with DELETE');
  t.equal(got.body.turns, 3);
});

t.test('Ctrl-C (SIGINT) during a turn cancels it, closes the conversation and exits 0', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(10_000)) } });
  const chat = startChat(t, s, ['coach', '--device-ref', 'alice', '--locale', 'de_DE']);
  await chat.waitFor(/you> $/);
  const mark = chat.out().length;
  chat.send('sim:hang');
  await chat.waitFor(/Let me think about that/, mark);
  chat.child.kill('SIGINT');
  t.equal(await chat.exit, 0);
  t.match(chat.out(), /Closed session [0-9a-f-]{36}/);
  const conn = s.engine.record.connections[0]!;
  t.equal(conn.settings.deviceId, 'mcp:alice', '--device-ref is the simulated user');
  t.equal(conn.settings.locale, 'de-DE', '--locale is the engine locale');
  await eventually(() => conn.closeCode !== undefined);
  t.equal(conn.closeCode, 1000);
  t.notOk(conn.frames.includes('#exit'));
  const got = await s.call('GET', conversationPath(conn.sessionId!));
  t.equal(got.body.connection, 'closed');
  t.equal(got.body.close_cause, 'cancelled', 'the running turn was cancelled');
});

t.test('--session reconnects to an existing conversation', async (t) => {
  const s = await startStack(t);
  const { sessionId } = await s.open();
  await s.call('DELETE', conversationPath(sessionId));
  const chat = startChat(t, s, ['coach', '--session', sessionId]);
  await chat.waitFor(/you> $/);
  t.match(chat.stdout(), new RegExp(`Session ${sessionId} with coach`));
  t.equal(s.engine.record.connections.length, 1, 'no connection, nor #intro, before the first line');
  const mark = chat.out().length;
  chat.send('planning?');
  await chat.waitFor(/you> $/, mark);
  const out = chat.out().slice(mark);
  t.match(out, /coach> This socket is new \(0 turns\); the session has 1 line: my earlier planning is gone\./);
  t.match(out, /note: This turn opened a new socket to the existing engine session/, 'the reconnect is noted');
  chat.child.stdin.end();
  t.equal(await chat.exit, 0);
  t.equal(s.engine.record.connections[1]!.query.sessionId, sessionId);
  await eventually(() => s.engine.record.connections[1]!.closeCode !== undefined);
  t.equal(s.engine.record.connections[1]!.closeCode, 1000);
});

t.test('the reconnect hint, pasted as printed, reconnects to the same session', async (t) => {
  const s = await startStack(t);
  const first = startChat(t, s, ['coach', '--device-ref', 'alice', '--locale', 'de-DE']);
  await first.waitFor(/you> $/);
  const sessionId = /session ([0-9a-f-]{36})/.exec(first.stdout())?.[1] ?? '';
  // Where the machine's Node is older than the command needs (the tests run through scripts/node24.cjs), with the launcher in front.
  const command = commandLine();
  t.equal(
    command,
    Number(process.env.MACHINE_NODE_VERSION?.slice(1).split('.')[0]) < 22
      ? 'node scripts/node24.cjs npx agent-test-gateway'
      : 'npx agent-test-gateway',
  );
  const hint = `${command} chat coach --gateway ${s.url} --session ${sessionId} --device-ref alice --locale de-DE`;
  t.match(first.stdout(), `reconnect later with: ${hint}\n`, 'with npx, the gateway and the connect settings');
  first.child.stdin.end();
  t.equal(await first.exit, 0);
  t.match(first.stdout(), `Closed session ${sessionId}. Reconnect to it with: ${hint}`, 'and again when it closes');

  // As pasted: everything after `npx agent-test-gateway`, and no --gateway added by the test.
  const pasted = startChat(t, s, hint.slice(command.length + 1).split(' '), {}, false);
  await pasted.waitFor(/you> $/);
  const mark = pasted.out().length;
  pasted.send('planning?');
  await pasted.waitFor(/you> $/, mark);
  t.match(
    pasted.out().slice(mark),
    /coach> This socket is new \(0 turns\); the session has 1 line: my earlier planning is gone\./,
    'the same engine session',
  );
  pasted.child.stdin.end();
  t.equal(await pasted.exit, 0);
  const [, again] = s.engine.record.connections;
  t.match(again, { query: { sessionId }, settings: { deviceId: 'mcp:alice', locale: 'de-DE' } });
});

t.test('the agent ending the conversation ends the chat', async (t) => {
  const s = await startStack(t);
  const chat = startChat(t, s, ['coach']);
  await chat.waitFor(/you> $/);
  chat.send('bye');
  t.equal(await chat.exit, 0);
  t.match(chat.stdout(), /coach> Goodbye!\n\[the agent ended the conversation\]/);
});

t.test('refusals before a conversation exists, and usage errors', async (t) => {
  const s = await startStack(t);
  // Started together: each is a process of its own.
  const hidden = startChat(t, s, ['hidden']);
  const badToken = startChat(t, s, ['coach'], { AGENT_TEST_GATEWAY_TOKEN: 'nobody' });
  const noToken = startChat(t, s, ['coach'], { AGENT_TEST_GATEWAY_TOKEN: '' });
  const noAgent = startChat(t, s, []);

  t.equal(await hidden.exit, 1, 'an agent the caller may not use');
  t.match(hidden.stderr(), /gateway: .*\(forbidden\)/);
  t.notMatch(hidden.stdout(), /you> /, 'no prompt');

  t.equal(await badToken.exit, 1, 'a token the platform rejects');
  t.match(badToken.stderr(), /\(unauthenticated\)/);

  t.equal(await noToken.exit, 2, 'no token');
  t.match(noToken.stderr(), /set AGENT_TEST_GATEWAY_TOKEN/);

  t.equal(await noAgent.exit, 2, 'no agent');
  t.match(noAgent.stderr(), /name the agent/);
  t.equal(s.engine.record.connections.length, 0, 'nothing reached the engine');
});

t.test('in process: the same conversation through injected streams, help, bad options, no gateway', async (t) => {
  const { main } = await import('../src/cli/chat.js');
  const s = await startStack(t);
  const run = async (args: string[], lines: string[] = [], env: Record<string, string> = { AGENT_TEST_GATEWAY_TOKEN: 'demo-token' }) => {
    const input = new PassThrough();
    let output = '';
    let errors = '';
    const sink = (append: (text: string) => void) =>
      new Writable({
        write(chunk, _enc, done) {
          append(chunk.toString());
          done();
        },
      });
    for (const line of lines) input.write(`${line}\n`);
    input.end();
    const code = await main(args, {
      input,
      output: sink((x) => (output += x)),
      errors: sink((x) => (errors += x)),
      env,
      color: false,
    });
    return { code, output, errors };
  };

  const chat = await run(['coach', '--gateway', `${s.url}/`], ['Where is my order?', '', '#ready:key=x', 'Which size fits?']);
  t.equal(chat.code, 0);
  t.match(chat.output, /coach> Hi, I'm coach\. How can I help\?/);
  t.match(chat.output, /\[tool lookup_order\]\ncoach> You said: Where is my order\?/);
  t.match(chat.output, /\[shown size_chart\]/);
  t.match(chat.errors, /gateway: line may start with # only as exactly #intro/);
  t.match(chat.output, /Closed session [0-9a-f-]{36}\./);
  t.same(s.engine.record.connections[0]!.frames, ['#intro', 'Where is my order?', 'Which size fits?'], 'blank lines are not sent');

  const unknownSession = await run(['coach', '--gateway', s.url, '--session', '00000000-0000-4000-8000-000000000000'], ['hello']);
  t.equal(unknownSession.code, 0);
  t.match(unknownSession.errors, /gateway: The engine does not know this session.* \(session_not_found\)/);
  t.match(unknownSession.output, /Nothing to close/);

  const help = await run(['--help']);
  t.equal(help.code, 0);
  t.match(help.errors, /usage: agent-test-gateway chat <agent>/);
  t.match(help.errors, /AGENT_TEST_GATEWAY_TOKEN/);

  const unknown = await run(['coach', '--verbose']);
  t.equal(unknown.code, 2);
  t.match(unknown.errors, /--verbose/);

  const badUrl = await run(['coach', '--gateway', 'localhost:8080']);
  t.equal(badUrl.code, 2);
  t.match(badUrl.errors, /--gateway must be an http:\/\/ or https:\/\/ URL/);

  const down = await run(['coach', '--gateway', 'http://127.0.0.1:1']);
  t.equal(down.code, 1);
  t.match(down.errors, /gateway: The gateway at http:\/\/127\.0\.0\.1:1 could not be reached \(ECONNREFUSED\)/);
});
