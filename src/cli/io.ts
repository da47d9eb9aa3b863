/** Where a command writes: injectable, so that tests run a command in-process. */
export interface Io {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** progress lines while a suite runs (only when stderr is a terminal) */
  progress: boolean;
}

export const defaultIo = (): Io => ({
  env: process.env,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  progress: process.stderr.isTTY === true,
});
