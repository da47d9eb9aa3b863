// The shutdown grace bounds a drain whatever it waits for. One real pod whose peer list names a
// sibling that accepts connections and never answers (a node gone silent: neither refused nor
// answered), with everything a drain can wait on at once: a run to hand over (to that sibling), a
// caller following the run, and an interactive turn the engine never answers. SIGTERM under a 1 s
// grace: the pod exits 0 — the drain ended by its bound (the grace, at least 10 s so that a run
// gets 5 s to be handed over), not by close-with-grace's hard stop 10 s later, which exits 1 —
// the follower's stream ends, and the hanging turn is answered as cut off, not dropped.
import { createServer, type Socket } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { drainBoundMs } from '../src/runs/registry.js';
import { startPod, startRunSimulators } from './support/cluster.js';
import { freePort, runPath, turnPath, type Json } from './support/http.js';
import { AUTH, collect, until } from './support/runs.js';
import { scaled } from './support/time.js';

t.setTimeout(scaled(240_000));

const json = { ...AUTH, 'content-type': 'application/json' };

t.test('a drain waiting on a silent sibling, a follower and a hanging turn at once ends by its bound', async (t) => {
  const silent: Socket[] = [];
  const blackHole = createServer((socket) => silent.push(socket));
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of silent) socket.destroy();
    blackHole.close();
  });
  const { port: silentPort } = blackHole.address() as { port: number };

  // Unscaled and short: the drain's floor (10 s) is what bounds it, not the grace.
  const grace = 1000;
  const { spawned, podEnv, engine } = await startRunSimulators(t);
  const port = await freePort();
  const pod = await startPod(
    port,
    podEnv([`127.0.0.1:${port}`, `127.0.0.1:${silentPort}`], {
      SHUTDOWN_GRACE_MS: String(grace),
      // Far beyond the grace: only the drain can end the hanging turn and the calls to the silent sibling.
      TURN_BUDGET_MS: String(scaled(120_000)),
      PEER_TIMEOUT_MS: '60000',
    }),
    (p) => spawned.push(p),
  );

  const started = await request(pod.url + runPath(), {
    method: 'POST',
    headers: { ...json, prefer: 'respond-async' },
    body: JSON.stringify({ repeat: 5, conversations: [{ name: 'a', turns: [{ line: 'hello' }] }] }),
  });
  const { id } = (await started.body.json()) as Json;
  t.equal(started.statusCode, 202);
  const follow = await request(`${pod.url}/v1/runs/${id}/events?after=0`, { headers: AUTH });
  const lines: Json[] = [];
  const followed = collect(follow.body, lines).then(
    () => 'ended',
    () => 'cut',
  );

  const opened = await request(`${pod.url}/v1/agents/coach/conversations`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ line: 'hello' }),
  });
  const { session_id: sessionId } = (await opened.body.json()) as Json;
  t.equal(opened.statusCode, 201);
  const hanging = request(pod.url + turnPath(sessionId), { method: 'POST', headers: json, body: JSON.stringify({ line: 'sim:hang' }) });
  await until(() => engine.record.connections.some((c) => c.frames.includes('sim:hang')), 30_000, 'the hanging turn reached the engine');
  await until(() => silent.length > 0, 30_000, 'the pod called its silent sibling');

  const sigterm = Date.now();
  pod.child.kill('SIGTERM');
  const stillRunning = setTimeout(() => pod.child.kill('SIGKILL'), drainBoundMs(grace) + scaled(20_000));
  const code = await pod.exited;
  clearTimeout(stillRunning);
  t.equal(code, 0, 'the drain ended by its bound and the pod exited 0, before the hard stop');
  t.comment(`exited ${Date.now() - sigterm} ms after SIGTERM (grace ${grace} ms, drain bound ${drainBoundMs(grace)} ms)`);

  const turn = await hanging;
  const answer = (await turn.body.json()) as Json;
  t.equal(turn.statusCode, 200, 'the hanging turn was answered');
  t.match(answer, { turn: { outcome: 'cancelled' } }, 'as cut off by the shutdown');
  t.equal(await followed, 'ended', "the follower's stream ended cleanly");
});
