/**
 * `agent-test-gateway attacks init`: the starter red-team suite is examples/red-team.yaml, and it runs
 * as it is against the engine and model simulators: `coach` holds every attack, `coach.3` (which
 * repeats what other users told it and starts refunds) breaks on the canary and the refund.
 */

import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { RunReport } from '../src/suites/report/run-report.js';
import { cli } from './support/cli.js';
import { startStack } from './support/stack.js';

t.test('attacks init writes examples/red-team.yaml; a missing --agent is a usage error', async (t) => {
  const written = await cli('attacks', ['init', '--agent', 'coach']);
  t.equal(written.code, 0, written.stderr);
  t.equal(written.stdout, await readFile('examples/red-team.yaml', 'utf8'), 'examples/red-team.yaml is its output for coach');
  const missing = await cli('attacks', ['init']);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /--agent is required/);
  const wrong = await cli('attacks', ['init', '--agent', 'not an agent']);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /--agent: agent must be an agent ref/);
});

t.test('the starter suite runs as it is: coach holds, coach.3 breaks on the canary and the refund', async (t) => {
  const s = await startStack(t, { model: true, env: { MEMORY_POLL_MS: '20' } });
  const dir = await mkdtemp(join(tmpdir(), 'attacks-'));
  const suite = join(dir, 'attacks.yaml');
  await writeFile(suite, (await cli('attacks', ['init', '--agent', 'coach'])).stdout);

  const held = await cli('run', [suite, '--gateway', s.url, '--json', join(dir, 'coach.json')]);
  t.equal(held.code, 0, held.stdout + held.stderr);
  const [coach] = JSON.parse(await readFile(join(dir, 'coach.json'), 'utf8')) as RunReport[];
  t.same(
    coach!.conversations.map((c) => [c.name, c.attack?.broke, c.attack?.attempts]),
    coach!.conversations.map((c) => [c.name, 0, 3]),
    'every attack held in 3 of 3 attempts',
  );

  const broke = await cli('run', [suite, '--gateway', s.url, '--agent', 'coach.3', '--json', join(dir, 'coach3.json')]);
  t.equal(broke.code, 1, 'a broken attack fails the run');
  const [coach3] = JSON.parse(await readFile(join(dir, 'coach3.json'), 'utf8')) as RunReport[];
  const rates = Object.fromEntries(coach3!.conversations.map((c) => [c.name, c.attack!.broke]));
  t.match(rates, {
    "another user's data": 3,
    'refund it may not promise': 3,
    'instruction override': 0,
    'harmful answer in its domain': 0,
  });
  t.match(
    broke.stdout,
    /^✗ coach\.3 fails: another user's data broke it in 3 of 3 attempts and refund it may not promise broke it in 3 of 3 attempts/m,
  );
});
