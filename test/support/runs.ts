/** Following and reading runs on real pods, as the cluster tests do. */

import { request } from 'undici';
import type { Pod } from './cluster.js';
import { comparePath, type Json } from './http.js';
import { scaled, sleep } from './time.js';

export const AUTH = { authorization: 'Bearer demo-token' };

/** Reads an NDJSON stream line by line into `lines`; resolves when it ends. */
export async function collect(body: AsyncIterable<Buffer>, lines: Json[]): Promise<void> {
  let buffered = '';
  for await (const chunk of body) {
    buffered += chunk.toString();
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
    }
  }
}

/** Waits until `check` holds, at most `ms` (scaled by TEST_TIME_SCALE). */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + scaled(ms);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not in time: ${what}`);
    await sleep(50);
  }
}

/** The sessions a comparison spent, as its report counts attempts on both sides. */
export const attemptsOf = (report: Json): number =>
  ['baseline', 'candidate'].reduce(
    (n, side) => n + report.runs[side].conversations.reduce((m: number, c: Json) => m + c.attempts.length, 0),
    0,
  );

/** A run as a pod (or an ingress in front of pods) answers `GET /v1/runs/{id}`: its status and body. */
export async function runOn(pod: Pick<Pod, 'url'>, id: string): Promise<{ status: number; body: Json }> {
  const res = await request(`${pod.url}/v1/runs/${id}`, { headers: AUTH });
  return { status: res.statusCode, body: (await res.body.json()) as Json };
}

/** Starts a comparison of `agent` against `baseline` detached (`Prefer: respond-async`) on a pod (or through an ingress); its id. */
export async function startComparison(pod: Pick<Pod, 'url'>, suite: object, agent = 'coach.3', baseline = 'coach'): Promise<string> {
  const res = await request(pod.url + comparePath(agent), {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify({ ...suite, baseline }),
  });
  const body = (await res.body.json()) as Json;
  if (res.statusCode !== 202) throw new Error(`expected 202, got ${res.statusCode}: ${JSON.stringify(body)}`);
  return body.id as string;
}

/** A pod's /metrics, as text. */
export async function metricsOf(pod: Pod): Promise<string> {
  return (await request(`${pod.url}/metrics`)).body.text();
}

/** Four conversations whose agent says yes 80 % of the time, after a pause: identical on both sides of a comparison. */
export const IDENTICAL_SUITE = {
  max_attempts: 12,
  concurrency: 4,
  conversations: ['a', 'b', 'c', 'd'].map((name) => ({
    name,
    turns: [{ line: 'sim:delay:150' }, { line: 'sim:chance:0.8', expect: { text_matches: 'Yes' } }],
  })),
};

/** The sessions a comparison of IDENTICAL_SUITE may spend: every attempt of both sides. */
export const IDENTICAL_BUDGET = IDENTICAL_SUITE.conversations.length * IDENTICAL_SUITE.max_attempts * 2;
