import { performance } from 'node:perf_hooks';
import { mayStart, type SiblingLease } from './holding.js';

/** What the holder knows of one sibling for one run. */
interface SiblingState {
  /** See SiblingLease. */
  since: number | undefined;
  /** Its last call was refused, or it drains. */
  absent: boolean;
  /** It keeps no replica and was sent none yet. */
  unreplicated: boolean;
  /** This pod took the run over from it: it is sent nothing until it calls about the run. */
  predecessor: boolean;
  /** Lines of the run it acknowledged holding. */
  lines: number;
}

interface RunLease {
  fenced: boolean;
  /** Every sibling's state, made on first use from how the run came here. */
  siblings: Map<string, SiblingState>;
  /** How a sibling not met yet starts: a run started here has no replica anywhere. */
  fresh: (address: string) => SiblingState;
}

const state = (over: Partial<SiblingState>): SiblingState => ({
  since: undefined,
  absent: false,
  unreplicated: false,
  predecessor: false,
  lines: 0,
  ...over,
});

/**
 * The fence of the runs held here: for each, which siblings acknowledged which push and when, so
 * that ./holding.ts can say whether this pod still knows it holds the run, and whether a sibling
 * fenced it (answered `stale`, or pushed a newer epoch). Times are this pod's monotonic clock,
 * which counts on through a pause of the process (SIGSTOP), so a pod that comes back knows at
 * once that its lease lapsed.
 */
export class Leases {
  readonly #runs = new Map<string, RunLease>();
  readonly #takeoverMs: number;
  readonly #addresses: () => string[];
  readonly #now: () => number;

  constructor(deps: { takeoverMs: number; addresses: () => string[]; now?: () => number }) {
    this.#takeoverMs = deps.takeoverMs;
    this.#addresses = deps.addresses;
    this.#now = deps.now ?? (() => performance.now());
  }

  /** A run that starts here: no sibling keeps a replica of it yet. */
  started(id: string): void {
    this.#runs.set(id, { fenced: false, siblings: new Map(), fresh: () => state({ unreplicated: true }) });
  }

  /**
   * A run taken over here at a new epoch: every sibling may keep an older replica, except the
   * pod it was taken from after it stopped answering (`from`; a drain's pod hands it over and
   * keeps no holder's record).
   */
  adopted(id: string, from: string | undefined): void {
    this.#runs.set(id, { fenced: false, siblings: new Map(), fresh: (address) => state({ predecessor: address === from }) });
  }

  /** The run is no longer held here (it ended, moved on, or was forgotten). */
  release(id: string): void {
    this.#runs.delete(id);
  }

  /** Whether a push of the run goes to this sibling (a predecessor is sent nothing until it calls). */
  pushesTo(id: string, address: string): boolean {
    const lease = this.#runs.get(id);
    return lease === undefined || !this.#sibling(lease, address).predecessor;
  }

  /** A predecessor called about the run (its push was refused as stale): it is alive, and is sent the run from now on. */
  called(id: string, address: string): void {
    const lease = this.#runs.get(id);
    if (lease === undefined) return;
    const sibling = this.#sibling(lease, address);
    if (sibling.predecessor) Object.assign(sibling, { predecessor: false, unreplicated: true });
  }

  /** A push of the run leaves for a sibling now: answers when it was sent (this pod's clock). */
  sending(id: string, address: string): number {
    const now = this.#now();
    const lease = this.#runs.get(id);
    if (lease === undefined) return now;
    const sibling = this.#sibling(lease, address);
    // A sibling that kept no replica (or was down: one that comes back keeps none) gets one now.
    if (sibling.unreplicated || sibling.absent) Object.assign(sibling, { unreplicated: false, absent: false, since: now });
    return now;
  }

  /** A sibling acknowledged a push sent at `sentAt`, holding `lines` lines of the run. */
  acknowledged(id: string, address: string, sentAt: number, lines: number): void {
    const lease = this.#runs.get(id);
    if (lease === undefined) return;
    const sibling = this.#sibling(lease, address);
    sibling.since = Math.max(sibling.since ?? sentAt, sentAt);
    sibling.lines = Math.max(sibling.lines, lines);
    sibling.absent = false;
  }

  /** A push got no acknowledgement: `absent` when the sibling cannot take over (nothing listens there, or it drains). */
  unanswered(id: string, address: string, absent: boolean): void {
    const lease = this.#runs.get(id);
    if (lease !== undefined) this.#sibling(lease, address).absent = absent;
  }

  /** A sibling knows a newer holder: this pod stops starting attempts of the run for good. */
  fence(id: string): void {
    const lease = this.#runs.get(id);
    if (lease !== undefined) lease.fenced = true;
  }

  fenced(id: string): boolean {
    return this.#runs.get(id)?.fenced === true;
  }

  /** Whether this pod may start an attempt of the run now (./holding.ts). */
  holds(id: string): boolean {
    const lease = this.#runs.get(id);
    if (lease === undefined) return true;
    return mayStart({ fenced: lease.fenced, siblings: this.#leases(lease) }, this.#now(), this.#takeoverMs);
  }

  /**
   * How many of the run's lines followers may read: those every sibling that could continue it
   * acknowledged, so that whichever continues it after a crash goes on from the same line.
   */
  visibleLines(id: string, lines: number): number {
    const lease = this.#runs.get(id);
    if (lease === undefined) return lines;
    let fewest = lines;
    for (const s of this.#leases(lease)) if (!s.excluded) fewest = Math.min(fewest, s.lines);
    return fewest;
  }

  /** Every current sibling, as the lease counts it. */
  #leases(lease: RunLease): Array<SiblingLease & { lines: number }> {
    return this.#addresses().map((address) => {
      const s = this.#sibling(lease, address);
      return { since: s.since, excluded: s.absent || s.unreplicated || s.predecessor, lines: s.lines };
    });
  }

  #sibling(lease: RunLease, address: string): SiblingState {
    let sibling = lease.siblings.get(address);
    if (sibling === undefined) {
      sibling = lease.fresh(address);
      lease.siblings.set(address, sibling);
    }
    return sibling;
  }
}
