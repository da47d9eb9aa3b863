/** Where a command writes: injectable, so that tests run a command in-process. */
export interface Io {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** stderr is a terminal: progress lines per turn, and a live status line */
  progress: boolean;
  /** How often a run's progress is told: the live line's refresh on a terminal, a line of its own otherwise. */
  progressEveryMs: number;
  /** The terminal's width, when stderr is one: the live line is cut to it. */
  columns?: () => number | undefined;
  /**
   * Calls `handler` on Ctrl-C while a run is followed (until the returned function is called);
   * when the handler answers false (it was pressed before), the command leaves at once with 130.
   */
  onInterrupt: (handler: () => boolean) => () => void;
}

/** A line at least this often without a terminal: CI systems stop a job that prints nothing for long. */
const QUIET_PROGRESS_MS = 30_000;
const TTY_PROGRESS_MS = 1_000;

export const defaultIo = (): Io => ({
  env: process.env,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  progress: process.stderr.isTTY === true,
  columns: () => process.stderr.columns,
  // AGENT_TEST_GATEWAY_PROGRESS_MS sets it on a terminal or not (tests tick faster).
  progressEveryMs:
    Number(process.env.AGENT_TEST_GATEWAY_PROGRESS_MS) || (process.stderr.isTTY === true ? TTY_PROGRESS_MS : QUIET_PROGRESS_MS),
  onInterrupt: (handler) => {
    const onSigint = () => {
      if (!handler()) process.exit(130);
    };
    process.on('SIGINT', onSigint);
    return () => void process.off('SIGINT', onSigint);
  },
});
