// The seeded draws behind `sim:chance` (agent.ts reads them): kept apart from the engine
// simulator's sockets so that what makes a comparison's outcomes repeatable is in one place.

/** A session's draw from the stream `name` (the line's probabilities) of an agent key. */
type ChanceDraws = (session: object, agentKey: string, name: string) => number;

/**
 * `sim:chance`'s draws: one uniform number per session and stream (an agent key and the line's
 * probabilities), the k-th session of a stream drawing its k-th number (FNV-1a of seed, stream and
 * k, through mulberry32): a conversation whose rounds run in order sees the same outcomes every
 * time, whatever other conversations run beside it.
 */
export function seededDraws(seed: number): ChanceDraws {
  const perStream = new Map<string, number>();
  const drawn = new WeakMap<object, number>();
  return (session, agentKey, name) => {
    const stream = `${agentKey}|${name}`;
    let value = drawn.get(session);
    if (value === undefined) {
      const k = (perStream.get(stream) ?? 0) + 1;
      perStream.set(stream, k);
      value = uniform(`${seed}:${stream}:${k}`);
      drawn.set(session, value);
    }
    return value;
  };
}

/** A uniform number in [0, 1) from a text: FNV-1a's 32-bit hash, mixed by one mulberry32 step. */
export function uniform(text: string): number {
  let h = 0x811c9dc5;
  for (const c of text) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
  let x = (h + 0x6d2b79f5) | 0;
  x = Math.imul(x ^ (x >>> 15), x | 1);
  x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
  return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
}
