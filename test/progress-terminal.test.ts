/**
 * `compare` on a terminal, as a person sees it: the command runs under a pseudo-terminal
 * (util-linux `script`), and its output is rendered by a terminal emulator (@xterm/headless)
 * chunk by chunk as it arrives, so that the test reads the screen's rows at every moment — not
 * the byte stream. The live progress line is cleared before a turn's line is printed and drawn
 * again below it: it never shares a row with a turn line, and never leaves a copy of itself behind
 * (a line longer than the terminal is cut to its width, or its wrapped rows would stay).
 */

import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import xterm from '@xterm/headless';
import t from 'tap';
import { childEnv } from './support/child.js';
import { startStack } from './support/stack.js';

const script = await new Promise<boolean>((resolve) =>
  spawn('script', ['--version'])
    .on('error', () => resolve(false))
    .on('close', (c) => resolve(c === 0)),
);

const COLUMNS = 72;
const PROGRESS = /comparison: (round|attempt) \d/;
const TURN = /^ {2}[✓✗-] terminal gate: (baseline|candidate): /;

t.test(
  'the progress line and the turn lines on a pseudo-terminal’s screen: one per row',
  { skip: !script && 'needs util-linux script' },
  async (t) => {
    const s = await startStack(t);
    const suite = join(t.testdir(), 'gate.yaml');
    // Turns that take a while, so that the progress line (every 50 ms here) is live when each is printed.
    await writeFile(
      suite,
      [
        'agent: coach',
        'name: terminal gate',
        'conversations:',
        '  - name: slow order',
        '    turns:',
        '      - line: "sim:delay:300"',
        '      - line: "sim:delay:300 order"',
      ].join('\n'),
    );
    const command = [
      process.execPath,
      '--import',
      'tsx',
      'src/cli/main.ts',
      'compare',
      suite,
      '--baseline',
      'coach',
      '--candidate',
      'coach.3',
      '--gateway',
      s.url,
      '--repeat',
      '2',
    ];
    const child = spawn('script', ['-q', '-e', '-c', `stty cols ${COLUMNS} rows 100; exec ${command.join(' ')}`, '/dev/null'], {
      env: childEnv({ AGENT_TEST_GATEWAY_TOKEN: 'demo-token', AGENT_TEST_GATEWAY_PROGRESS_MS: '50' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const terminal = new xterm.Terminal({ cols: COLUMNS, rows: 100, allowProposedApi: true });
    const rows = () => {
      const buffer = terminal.buffer.active;
      return Array.from({ length: buffer.length }, (_, i) => buffer.getLine(i)?.translateToString(true) ?? '');
    };
    const glued: string[] = [];
    const leftBehind: string[][] = [];
    let redrawnBelowTurn = 0;
    let rendering = Promise.resolve();
    child.stdout.on('data', (chunk: Buffer) => {
      rendering = rendering.then(
        () =>
          new Promise<void>((resolve) =>
            terminal.write(chunk, () => {
              const screen = rows();
              glued.push(...screen.filter((row) => PROGRESS.test(row) && (TURN.test(row) || !row.startsWith('comparison: '))));
              const live = screen.filter((row) => PROGRESS.test(row));
              if (live.length > 1) leftBehind.push(live);
              const filled = screen.filter((row) => row.trim() !== '');
              if (PROGRESS.test(filled.at(-1) ?? '') && TURN.test(filled.at(-2) ?? '')) redrawnBelowTurn++;
              resolve();
            }),
          ),
      );
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    await rendering;
    const screen = rows().filter((row) => row.trim() !== '');
    t.equal(code, 0, screen.join('\n'));
    t.same(glued, [], 'no row holds the progress line and anything else');
    t.same(leftBehind, [], 'never more than one progress row on the screen');
    t.ok(redrawnBelowTurn > 0, 'the progress line was drawn again below a turn line', { screen });
    t.equal(screen.filter((row) => TURN.test(row)).length, 8, 'every turn line on a row of its own: 2 turns × 2 attempts × 2 sides');
    t.notOk(
      screen.some((row) => PROGRESS.test(row)),
      'and the progress line is gone once the report is printed',
    );
  },
);
