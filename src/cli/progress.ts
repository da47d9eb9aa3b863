import type { Io } from './io.js';

/** The fields of a run's view (`GET /v1/runs/{id}`) the progress line reads. */
interface ProgressView {
  status?: string;
  created_at?: string;
  progress?: { sessions: number; sessions_budget: number; decided: number; conversations: Array<{ rounds: number }> };
}

const minutes = (ms: number): string => (ms < 90_000 ? `${Math.max(1, Math.round(ms / 1000))} s` : `${Math.round(ms / 60_000)} min`);

/** One line of where a run stands: rounds, sessions of the budget, conversations decided, time left at this pace. */
function progressText(view: ProgressView, kind: 'run' | 'comparison', now = Date.now()): string | undefined {
  const p = view.progress;
  if (p === undefined) return undefined;
  const rounds = p.conversations.reduce((n, c) => Math.max(n, c.rounds), 0);
  const elapsed = view.created_at === undefined ? 0 : now - Date.parse(view.created_at);
  const left = p.sessions > 0 && elapsed > 0 ? ((p.sessions_budget - p.sessions) * elapsed) / p.sessions : undefined;
  return (
    `${kind}: ${kind === 'comparison' ? `round ${rounds}` : `attempt ${rounds}`} · ` +
    `${p.sessions} of at most ${p.sessions_budget} sessions · ` +
    `${p.decided} of ${p.conversations.length} conversations ${kind === 'comparison' ? 'decided' : 'done'}` +
    (left === undefined ? '' : ` · at most ~${minutes(left)} left at this pace`)
  );
}

/** The live line cut to the terminal's width: a line that wrapped would leave its first rows behind when cleared. */
const fitted = (text: string, columns: number | undefined): string =>
  columns === undefined || columns < 2 || [...text].length < columns ? text : `${[...text].slice(0, columns - 2).join('')}…`;

/**
 * A followed run's progress on stderr: on a terminal one live line, rewritten in place; otherwise a
 * line of its own every `progressEveryMs` (30 s), so that a CI job is never silent for long. Every
 * other line goes above the live line (`say`, `above`): the live line is cleared first and drawn
 * again after, so that no line is glued to it.
 */
export class RunProgress {
  readonly #io: Io;
  readonly #kind: 'run' | 'comparison';
  readonly #view: (id: string) => Promise<ProgressView | undefined>;
  #timer: NodeJS.Timeout | undefined;
  /** The live line on the terminal now, if any. */
  #live: string | undefined;

  constructor(io: Io, kind: 'run' | 'comparison', view: (id: string) => Promise<ProgressView | undefined>) {
    this.#io = io;
    this.#kind = kind;
    this.#view = view;
  }

  start(id: string): void {
    this.#timer ??= setInterval(() => void this.#tick(id), this.#io.progressEveryMs);
    this.#timer.unref();
  }

  say(text: string): void {
    this.above(() => this.#io.stderr(text));
  }

  /** Runs `write` (which prints whole lines on stderr) with the live line out of its way. */
  above(write: () => void): void {
    const live = this.#live;
    this.#clear();
    write();
    if (live !== undefined) this.#draw(live);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#clear();
  }

  async #tick(id: string): Promise<void> {
    const view = await this.#view(id);
    const text = view === undefined || this.#timer === undefined ? undefined : progressText(view, this.#kind);
    if (text === undefined) return;
    if (this.#io.progress) this.#draw(fitted(text, this.#io.columns?.()));
    else this.#io.stderr(`${text}\n`);
  }

  #draw(text: string): void {
    this.#io.stderr(`\r\x1b[K${text}`);
    this.#live = text;
  }

  #clear(): void {
    if (this.#live === undefined) return;
    this.#io.stderr('\r\x1b[K');
    this.#live = undefined;
  }
}
