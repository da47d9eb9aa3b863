// One holder per run, with real gateway processes (static PEERS), each pod over an engine
// simulator of its own so that the sessions each pod opened are counted: a holder paused
// (SIGSTOP) for longer than the takeover time opens no engine session for the run once it is back
// and one report counts each round once; a DELETE on the sibling while the holder was just killed
// ends the run cancelled with no session after; and the last pod holding a run, drained while the
// peer list names a pod that is down, ends it cancelled with its report and exits, using no busy
// core meanwhile.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { request } from 'undici';
import { startCountedPods, type Pod } from './support/cluster.js';
import type { Json } from './support/http.js';
import { AUTH, attemptsOf, collect, runOn, startComparison, until } from './support/runs.js';
import { scaled, sleep } from './support/time.js';

t.setTimeout(scaled(300_000));

/** Conversations whose agent says yes 80 % of the time, after a pause: identical on both sides. */
const suite = (maxAttempts: number) => ({
  max_attempts: maxAttempts,
  concurrency: 2,
  conversations: ['a', 'b'].map((name) => ({
    name,
    turns: [{ line: 'sim:delay:200' }, { line: 'sim:chance:0.8', expect: { text_matches: 'Yes' } }],
  })),
});

const view = async (pod: Pod, id: string): Promise<Json> => (await runOn(pod, id)).body;

/** CPU time (user + system, in clock ticks) a process has used so far. */
const cpuTicks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

t.test('SIGSTOP the holder past the takeover time: the sibling goes on, the paused pod opens no session once back', async (t) => {
  const {
    pods: [a, b],
    engines,
  } = await startCountedPods(t, { listed: 2, up: 2 });
  const id = await startComparison(a!, suite(30));
  await until(async () => (await view(a!, id)).progress.sessions >= 4, 60_000, 'two rounds');
  a!.child.kill('SIGSTOP');
  await until(async () => (await view(b!, id)).moves.length > 0, 30_000, 'the sibling took it over');
  const onB = engines[1]!.record.connections.length;
  await until(() => engines[1]!.record.connections.length > onB, 30_000, 'the sibling opened sessions during the pause');
  const onA = engines[0]!.record.connections.length;
  a!.child.kill('SIGCONT');
  let ended: Json = {};
  await until(
    async () => {
      ended = await view(b!, id);
      return ended.status !== 'running';
    },
    120_000,
    'the comparison ended',
  );
  t.equal(ended.status, 'passed');
  // Give the paused pod time to act on what it had in flight, then count.
  await until(async () => (await view(a!, id)).status !== 'running', 30_000, 'the paused pod knows the end');
  const afterA = engines[0]!.record.connections.length - onA;
  t.equal(afterA, 0, 'the paused pod opened no engine session for the run once back');
  const fromA = await view(a!, id);
  t.same(fromA.report, ended.report, 'one report, the same on both pods');
  const sessions = engines[0]!.record.connections.length + engines[1]!.record.connections.length;
  const budget = 2 * 30 * 2;
  const rerun = ended.moves.reduce((n: number, m: Json) => n + m.attempts_rerun, 0);
  t.ok(sessions <= budget + rerun, `sessions within the budget plus the attempts in flight (${sessions} ≤ ${budget} + ${rerun})`);
  t.equal(attemptsOf(ended.report), ended.progress.sessions, 'the report counts each round once');
  const metrics = await (await request(`${a!.url}/metrics`)).body.text();
  t.match(metrics, /agent_test_gateway_runs_fenced_total\{reason="(stale|newer_epoch)"\} [1-9]/, 'the paused pod counted its fenced halt');
});

t.test('SIGKILL the holder and DELETE the run on the sibling at once: cancelled, no session after', async (t) => {
  const {
    pods: [a, b],
    engines,
  } = await startCountedPods(t, { listed: 2, up: 2 });
  const id = await startComparison(a!, suite(60));
  await until(async () => (await view(b!, id)).progress.sessions >= 4, 60_000, 'two rounds, replicated');
  a!.child.kill('SIGKILL');
  const res = await request(`${b!.url}/v1/runs/${id}`, { method: 'DELETE', headers: AUTH });
  const answer = (await res.body.json()) as Json;
  t.equal(res.statusCode, 200);
  t.equal(answer.status, 'cancelled', 'the DELETE answers the run cancelled');
  const sessionsAfter = engines[1]!.record.connections.length;
  await sleep(scaled(3000));
  t.equal(engines[1]!.record.connections.length, sessionsAfter, 'no engine session opened for it afterwards');
  const later = await view(b!, id);
  t.match(later, { status: 'cancelled', report: { run_id: id } });
});

t.test(
  'the last pod holding a run, drained while PEERS names a pod that is down: cancelled with its report, exits, no busy core',
  async (t) => {
    const grace = scaled(6000);
    const {
      pods: [a, b],
    } = await startCountedPods(t, { listed: 3, up: 2, env: { SHUTDOWN_GRACE_MS: String(grace) } });
    const id = await startComparison(a!, suite(60));
    await until(async () => (await view(a!, id)).progress.sessions >= 4, 60_000, 'two rounds');
    a!.child.kill('SIGTERM');
    t.equal(await a!.exited, 0, 'the first pod drains and exits');
    await until(async () => (await view(b!, id)).moves.length > 0, 30_000, 'the run moved to the sibling');
    const follow = await request(`${b!.url}/v1/runs/${id}/events?after=0`, { headers: AUTH });
    const lines: Json[] = [];
    const streamed = collect(follow.body, lines).catch(() => undefined);
    const pid = b!.child.pid!;
    const before = cpuTicks(pid);
    let last = before;
    b!.child.kill('SIGTERM');
    const sampler = setInterval(() => {
      try {
        last = cpuTicks(pid);
      } catch {
        // exited
      }
    }, 100);
    const code = await Promise.race([b!.exited, sleep(grace + scaled(15_000)).then(() => 'still running')]);
    clearInterval(sampler);
    t.equal(code, 0, 'the pod exits within its shutdown grace');
    const cpuSeconds = (last - before) / 100;
    t.ok(cpuSeconds < 2, `no busy core while draining (${cpuSeconds} s of CPU)`);
    await streamed;
    const final = lines.at(-1);
    t.ok(final?.report !== undefined, `the follower got the report, not ${JSON.stringify(final).slice(0, 200)}`);
    t.match(JSON.stringify(final.report), /no other pod of the release could take it over/, 'the report says why it was cancelled');
  },
);
