/**
 * Helpers for the bench's own child processes (simulators, per-turn gateway): they exit when
 * the bench runner goes away, even if it is killed outright (its end of our stdin closes).
 */
export function exitWhenParentGoes(onExit: () => unknown = () => {}): void {
  let leaving = false;
  const leave = () => {
    if (leaving) return;
    leaving = true;
    const hard = setTimeout(() => process.exit(0), 2_000);
    hard.unref();
    Promise.resolve()
      .then(onExit)
      .catch(() => {})
      .finally(() => process.exit(0));
  };
  process.stdin.on('end', leave);
  process.stdin.on('close', leave);
  process.stdin.on('error', leave);
  process.stdin.resume();
  process.stdin.unref?.();
  process.once('SIGTERM', leave);
  process.once('SIGINT', leave);
}
