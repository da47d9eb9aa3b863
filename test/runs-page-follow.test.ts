// The runs page's follower (public/runs/api.js, a browser module run here under Node's fetch
// classes): after a cut it tries again after half a second, twice as long after each failed try up
// to ten seconds, and from the first pod that answers goes on with `after=` the lines it has seen.
import t from 'tap';

interface Follow {
  followRun: (
    id: string,
    opts: { onLine: (line: unknown) => void; onCut?: () => void; onResumed?: () => void; signal?: AbortSignal },
  ) => Promise<void>;
}

const ndjson = (...lines: unknown[]) =>
  new Response(lines.map((line) => `${JSON.stringify(line)}\n`).join(''), { headers: { 'content-type': 'application/x-ndjson' } });

/** Runs followRun over `answers` (one per call: a Response, or an Error for a failed connection), recording every pause asked for. */
async function follow(answers: Array<Response | Error>) {
  const realFetch = globalThis.fetch;
  const realSetTimeout = globalThis.setTimeout;
  const paths: string[] = [];
  const pauses: number[] = [];
  const events: string[] = [];
  globalThis.fetch = (async (path: string) => {
    paths.push(path);
    const answer = answers.shift();
    if (answer === undefined) throw new Error('called more often than the test answers');
    if (answer instanceof Error) throw answer;
    return answer;
  }) as typeof fetch;
  globalThis.setTimeout = ((fn: () => void, ms: number) => {
    pauses.push(ms);
    return realSetTimeout(fn, 0);
  }) as typeof setTimeout;
  Object.assign(globalThis, { sessionStorage: { getItem: () => 'demo-token' } });
  try {
    const { followRun } = (await import(new URL('../public/runs/api.js', import.meta.url).href)) as Follow;
    await followRun('r1', {
      onLine: (line) => events.push(`line ${JSON.stringify(line)}`),
      onCut: () => events.push('cut'),
      onResumed: () => events.push('resumed'),
    });
  } finally {
    globalThis.fetch = realFetch;
    globalThis.setTimeout = realSetTimeout;
  }
  return { paths, pauses, events };
}

const down = () => new TypeError('fetch failed');

t.test('a pod gone for good: tries again after 0.5 s, then twice as long each time, up to 10 s', async (t) => {
  const { paths, pauses, events } = await follow([
    ndjson({ turn: 1 }),
    ...Array.from({ length: 7 }, down),
    ndjson({ turn: 2 }, { report: { passed: true } }),
  ]);
  t.same(pauses, [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
  t.same(paths.at(-1), '/v1/runs/r1/events?after=1', 'it goes on after the line it had');
  t.same(
    events.filter((e) => e !== 'cut'),
    ['line {"turn":1}', 'resumed', 'line {"turn":2}', 'line {"report":{"passed":true}}'],
  );
});

t.test('a pod that answers again: the next cut waits half a second again', async (t) => {
  const { pauses, paths } = await follow([
    down(),
    down(),
    ndjson({ turn: 1 }),
    down(),
    new Response('{"error":"internal"}', { status: 503 }),
    ndjson({ report: { passed: false } }),
  ]);
  t.same(pauses, [500, 1000, 500, 1000, 2000]);
  t.same(
    paths.map((p) => p.replace('/v1/runs/r1/events?', '')),
    ['after=0', 'after=0', 'after=0', 'after=1', 'after=1', 'after=1'],
  );
});

t.test('a refusal is the answer: no retry', async (t) => {
  const refused = follow([new Response('{"error":"not_found","message":"No run with this id."}', { status: 404 })]);
  await t.rejects(refused, { status: 404, code: 'not_found' });
});
