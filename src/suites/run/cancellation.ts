/** Why the rest of a run is skipped when it is cancelled, and a wait that the cancellation cuts short. */
export const CANCELLED = 'the run was cancelled';

/** Why a run was cancelled, as its note says it: the reason its signal was aborted with. */
export const cancelledBecause = (signal: AbortSignal): string =>
  typeof signal.reason === 'string' ? signal.reason : 'it was cancelled before it ended';

export const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
