/**
 * The one place that decides who holds a run. Every pod applies the same rules to what it knows,
 * so that at any time at most one pod starts attempts of a run (except the attempts already in
 * flight when a holder stalled):
 *
 * - a run's epoch is raised by every pod that takes it over, and epochs are strictly ordered: at
 *   the same number, the taking pod's id (unique per process) decides, so no two adopters share one;
 * - a push older than the run's epoch is refused (`stale`), and a pod holding a run that learns of a
 *   newer epoch halts it without a report (it is fenced) and follows the new holder;
 * - a holder starts an attempt only while its lease holds: every sibling that could take the run
 *   over acknowledged a push sent less than half the takeover time ago. A replica takes over only
 *   after a whole takeover time without a push, so the holder has stopped starting attempts first.
 *
 * Pure functions of what the caller knows: the model check in test/holding-model.test.ts explores
 * every interleaving of pods applying them.
 */

/** A run's epoch: the number of takeovers, and the id of the pod that made the last one. */
export interface Epoch {
  n: number;
  by: string;
}

/** The epoch of a run that has never moved. */
export const FIRST_EPOCH: Epoch = { n: 0, by: '' };

/** Negative when `a` is older than `b`, 0 when the same, positive when newer. */
export function compareEpochs(a: Epoch, b: Epoch): number {
  if (a.n !== b.n) return a.n - b.n;
  return a.by < b.by ? -1 : a.by > b.by ? 1 : 0;
}

/** The epoch a pod (`by`) takes a run over with: above every epoch it knows of. */
export const nextEpoch = (known: Epoch, by: string): Epoch => ({ n: known.n + 1, by });

/** What a pod does with a sibling's push for a run, given its own record of it. */
export type PushVerdict =
  /** Keep it (a new replica, or the same holder's next push). */
  | 'apply'
  /** Refuse it: it comes from a holder this pod knows was taken over (or the run ended here). */
  | 'stale'
  /** A newer holder: the run held here stops at once (no report), then the push is kept. */
  | 'fence';

export function verdictOnPush(
  held: { epoch: Epoch; heldHere: boolean; ended: boolean } | undefined,
  push: { epoch: Epoch; ended: boolean },
): PushVerdict {
  if (held === undefined) return 'apply';
  const order = compareEpochs(push.epoch, held.epoch);
  // An ended run is never reopened: a pod that took it over without knowing it ended stands down.
  if (held.ended) return push.ended && order >= 0 ? 'apply' : 'stale';
  if (order < 0 || (order === 0 && held.heldHere)) return 'stale';
  return held.heldHere ? 'fence' : 'apply';
}

/** What a holder knows of one sibling, for its lease. */
export interface SiblingLease {
  /**
   * When (this pod's monotonic clock) it sent the latest push the sibling acknowledged, or the
   * first push sent to a sibling that kept no replica: the sibling received nothing earlier, so it
   * cannot take over before a takeover time after it.
   */
  since: number | undefined;
  /**
   * It cannot take the run over: its last call was refused (nothing listens there, so it keeps no
   * replica) or it drains; it kept no replica and was sent none; or this pod took the run over
   * from it and sends it nothing (it keeps only its own older record, and never takes over from
   * that: a holder does not watch itself).
   */
  excluded: boolean;
}

/**
 * Whether a holder may start an attempt now: not fenced, and every sibling that could take the
 * run over acknowledged a push sent less than half the takeover time ago. A replica takes over
 * after a takeover time without a push, measured from when it received one (after it was sent),
 * so the lease lapses at least half a takeover time before any sibling may take over.
 */
export function mayStart(state: { fenced: boolean; siblings: SiblingLease[] }, now: number, takeoverMs: number): boolean {
  if (state.fenced) return false;
  return state.siblings.every((s) => s.excluded || (s.since !== undefined && now - s.since < takeoverMs / 2));
}

/** What a replica has learned before taking a run over. */
export interface TakeoverFacts {
  /** The run ended (as this replica or a sibling knows it): an ended run is never adopted. */
  ended: boolean;
  /** A takeover time (times its rank) passed since the last push it received. */
  silent: boolean;
  /** The holder still says it holds the run. */
  holderAnswers: boolean;
  /** A sibling knows a newer epoch than this replica's: it follows that one, it does not adopt. */
  newerElsewhere: boolean;
}

/** Whether a replica takes the run over now. */
export const mayAdopt = (f: TakeoverFacts): boolean => !f.ended && f.silent && !f.holderAnswers && !f.newerElsewhere;
