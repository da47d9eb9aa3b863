/** Why the rest of a run is skipped when its caller hangs up, and a wait that the hang-up cuts short. */
export const CANCELLED = 'the run was cancelled: the caller hung up';

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
