import { GatewayError } from '../errors.js';
import { sleep } from '../suites/run/cancellation.js';
import type { RunRegistry } from './registry.js';
import { isFinalLine } from './registry.js';
import type { Run } from './run.js';

/** Resolves on the run's next change, or when the signal aborts. */
const nextChange = (run: Run, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      unwatch();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const unwatch = run.watch(done);
    signal.addEventListener('abort', done, { once: true });
  });

/** The lines of a run this pod can serve, from index `from`, as they come; returns when it ended or moved away. */
async function* servedHere(registry: RunRegistry, run: Run, from: number, signal: AbortSignal): AsyncGenerator<string> {
  let i = from;
  const release = run.holder === null && !run.ended ? registry.follow(run) : undefined;
  try {
    while (!signal.aborted) {
      const visible = run.holder === null && !run.ended ? registry.visibleLines(run) : run.lines.length;
      while (i < visible) yield run.lines[i++]!;
      if (run.ended ? i >= run.lines.length : run.holder !== null) return;
      await nextChange(run, signal);
    }
  } finally {
    release?.();
  }
}

/** How often a follower looks again for a run whose holder went away, until a sibling continues it. */
const RETRY_MS = 250;

/**
 * A run's lines after the first `after` (0: from its first line), from wherever the run is: here
 * (held, or a replica of an ended run), or on the sibling that holds it, followed on when it moves
 * (a drain hands it over) or its holder dies (a sibling takes it over within `RUN_TAKEOVER_MS`).
 * Line numbers are the run's own, the same on every pod, so a follower resumes where it stopped.
 * Ends with the run's final line, or when the signal aborts; throws when no pod continues the run.
 */
export async function* runLines(registry: RunRegistry, id: string, after: number, signal: AbortSignal): AsyncGenerator<string> {
  let next = after;
  // Nobody continuing a run within a few takeover periods means it is lost (its holder and every replica went away).
  const patience = registry.takeoverMs * 4 + 5_000;
  let lostSince: number | undefined;
  const closed = registry.streamOpened();
  try {
    yield* followed();
  } finally {
    closed();
  }

  async function* followed(): AsyncGenerator<string> {
    while (!signal.aborted) {
      const here = registry.get(id);
      let source: AsyncIterable<string> | undefined;
      if (here !== undefined && (here.holder === null || here.ended)) source = servedHere(registry, here, next, signal);
      else {
        const address = here?.holder ?? (await registry.siblings.find(id))?.address;
        if (address !== undefined) source = registry.siblings.follow(address, id, next, signal);
      }
      let moved = false;
      if (source !== undefined) {
        try {
          for await (const line of source) {
            next += 1;
            lostSince = undefined;
            yield line;
            if (isFinalLine(line)) return;
          }
          moved = true;
        } catch {
          // The holder's stream broke: look for the run again.
        }
      }
      if (signal.aborted) return;
      if (moved && registry.get(id)?.holder !== null) lostSince = undefined;
      lostSince ??= Date.now();
      if (Date.now() - lostSince > patience) {
        throw new GatewayError('run_unavailable', `No pod of the release holds run ${id} any more: the pods that held it went away.`);
      }
      await sleep(RETRY_MS, signal);
    }
  }
}
