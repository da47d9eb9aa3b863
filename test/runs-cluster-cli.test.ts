// The command follows its comparison through the gateway URL (nginx round-robin over three real
// gateway processes, as a Service spreads calls over pods): the pod running it is killed (SIGKILL)
// mid-run, the stream breaks, and the command says so in one line, re-attaches through the same
// URL, and ends with the full report, its JUnit and the usual exit code.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { request } from 'undici';
import { cli, readJunit } from './support/cli.js';
import { startNginx, startRunPods, type Nginx, type Pod } from './support/cluster.js';
import type { Json } from './support/http.js';
import { scaled, sleep } from './support/time.js';
import { needs } from './support/tools.js';

t.setTimeout(scaled(240_000));

const conversation = (name: string): string =>
  `  - name: ${name}\n    turns:\n      - line: "sim:delay:150"\n      - line: "sim:chance:0.8"\n        expect: { text_matches: "Yes" }\n`;
const SUITE = `agent: coach\nmax_attempts: 12\nconcurrency: 4\nconversations:\n${['a', 'b', 'c', 'd'].map(conversation).join('')}`;

t.test('compare through the gateway URL outlives the SIGKILL of the pod running it', needs('nginx'), async (t) => {
  const { pods, ports } = await startRunPods(t);
  const nginx: Nginx = await startNginx(ports);
  t.teardown(() => nginx.stop());
  const dir = await mkdtemp(join(tmpdir(), 'agw-follow-'));
  const suite = join(dir, 'gate.yaml');
  const junit = join(dir, 'gate.xml');
  await writeFile(suite, SUITE);

  let ended: unknown;
  const compared = cli('compare', [
    suite,
    '--baseline=coach',
    '--candidate=coach.3',
    `--gateway=${nginx.roundRobin}`,
    `--junit=${junit}`,
  ]).then((r) => (ended = r));

  // The pod holding the run, once two rounds of every conversation are done.
  const auth = { authorization: 'Bearer demo-token' };
  let holder: Pod | undefined;
  const until = Date.now() + scaled(60_000);
  while (holder === undefined) {
    if (Date.now() > until || ended !== undefined) throw new Error(`the comparison did not get going: ${JSON.stringify(ended)}`);
    const { runs } = (await (await request(`${pods[0]!.url}/v1/runs`, { headers: auth })).body.json()) as Json;
    const running = runs.find((run: Json) => run.status === 'running');
    if (running !== undefined) {
      const view = (await (await request(`${pods[0]!.url}/v1/runs/${running.id}`, { headers: auth })).body.json()) as Json;
      if (view.progress.sessions >= 8) holder = pods.find((pod) => view.pod.endsWith(`:${pod.port}`));
    }
    await sleep(50);
  }
  holder.child.kill('SIGKILL');

  const result = await compared;
  t.equal(result.code, 0, `identical agents: no regression\n${result.stderr}`);
  t.match(result.stderr + result.stdout, /the pod running this comparison went away; following it on another/);
  t.match(result.stdout, /✓ no regression · 0 regressed/);
  const { valid, doc } = await readJunit(junit);
  t.equal(valid, true);
  t.equal(doc.testsuite[0].testcase.length, 5, 'every conversation in the JUnit, and the suite as a whole');
});
