// The holder rule, checked over every interleaving: a small explicit-state model of 2 and 3 pods
// holding one run, explored breadth-first over every order of pause, resume, push, delivery,
// acknowledgement, `stale` answer, message loss and takeover, with time in ticks. Each pod decides
// with src/runs/holding.ts (the same functions the gateway uses: verdictOnPush, mayStart, mayAdopt,
// nextEpoch, fencedByRefusal) and keeps its lease as src/runs/fence.ts does (a first push starts a sibling's bound,
// an acknowledgement moves it to the push's sending time, a predecessor is sent nothing until it
// calls). Asserted in every reachable state: at most one pod may start attempts. Asserted from
// every reachable state: once every pod is back and no message is lost, exactly one goes on.
import t from 'tap';

t.setTimeout(600_000);
import { compareEpochs, fencedByRefusal, mayAdopt, mayStart, nextEpoch, verdictOnPush, type Epoch } from '../src/runs/holding.js';

/** The takeover time in ticks: a holder's lease lasts half of it. */
const TAKEOVER = 2;

interface SiblingSeen {
  since: number | undefined;
  unreplicated: boolean;
  predecessor: boolean;
}

interface Pod {
  paused: boolean;
  /** The pod's record of the run: held here (holder null) or a replica of `holder`; undefined: it knows nothing. */
  record: { epoch: Epoch; holder: number | null; fenced: boolean; watching: boolean; lastReceived: number; rank: number } | undefined;
  /** As a holder: what it knows of each sibling (by pod index). */
  lease: Record<number, SiblingSeen>;
}

type Message =
  | { kind: 'push'; from: number; to: number; epoch: Epoch; sentAt: number; rank: number }
  | { kind: 'ack'; from: number; to: number; sentAt: number }
  | { kind: 'stale'; from: number; to: number; known: Epoch };

interface State {
  now: number;
  pods: Pod[];
  messages: Message[];
  pauses: number;
  losses: number;
}

interface Bounds {
  pods: number;
  horizon: number;
  messages: number;
  pauses: number;
  losses: number;
}

const ids = ['a', 'b', 'c'];
const clone = (s: State): State => structuredClone(s);
const key = (s: State): string => JSON.stringify(s);
const siblingsOf = (s: State, p: number) => s.pods.map((_, q) => q).filter((q) => q !== p);

function initial(n: number): State {
  const pods: Pod[] = Array.from({ length: n }, () => ({ paused: false, record: undefined, lease: {} }));
  // Pod 0 started the run: no sibling keeps a replica yet.
  pods[0]!.record = { epoch: { n: 0, by: '' }, holder: null, fenced: false, watching: false, lastReceived: 0, rank: 1 };
  for (let q = 1; q < n; q++) pods[0]!.lease[q] = { since: undefined, unreplicated: true, predecessor: false };
  return { now: 0, pods, messages: [], pauses: 0, losses: 0 };
}

const holds = (pod: Pod): boolean => pod.record !== undefined && pod.record.holder === null && !pod.record.fenced;

/** Whether pod `p` may start an attempt now, as src/runs/fence.ts asks src/runs/holding.ts. */
function mayStartNow(s: State, p: number): boolean {
  const pod = s.pods[p]!;
  if (pod.record === undefined || pod.record.holder !== null) return false;
  const siblings = siblingsOf(s, p).map((q) => {
    const seen = pod.lease[q] ?? { since: undefined, unreplicated: false, predecessor: false };
    return { since: seen.since, excluded: seen.unreplicated || seen.predecessor };
  });
  return mayStart({ fenced: pod.record.fenced, siblings }, s.now, TAKEOVER);
}

/** A holder's push to a sibling (src/peers/runs.ts), starting that sibling's bound when it kept no replica. */
function push(s: State, p: number, q: number): void {
  const pod = s.pods[p]!;
  const seen = (pod.lease[q] ??= { since: undefined, unreplicated: false, predecessor: false });
  if (seen.unreplicated) Object.assign(seen, { unreplicated: false, since: s.now });
  const rank = siblingsOf(s, p).indexOf(q) + 1;
  s.messages.push({ kind: 'push', from: p, to: q, epoch: pod.record!.epoch, sentAt: s.now, rank });
}

/** A message arrives (src/runs/registry.ts receive; src/runs/held.ts for the answers). */
function deliver(s: State, m: Message): void {
  const to = s.pods[m.to]!;
  if (m.kind === 'push') {
    const held = to.record && { epoch: to.record.epoch, heldHere: to.record.holder === null, ended: false };
    const verdict = verdictOnPush(held, { epoch: m.epoch, ended: false });
    if (verdict === 'stale') {
      // A predecessor that calls is alive: it is sent the run from now on.
      const seen = to.lease[m.from];
      if (to.record?.holder === null && seen?.predecessor === true) Object.assign(seen, { predecessor: false, unreplicated: true });
      s.messages.push({ kind: 'stale', from: m.to, to: m.from, known: to.record!.epoch });
      return;
    }
    // `fence`: the run held here stops; either way the push is kept and watched.
    to.record = { epoch: m.epoch, holder: m.from, fenced: false, watching: true, lastReceived: s.now, rank: m.rank };
    to.lease = {};
    s.messages.push({ kind: 'ack', from: m.to, to: m.from, sentAt: m.sentAt });
    return;
  }
  if (!holds(to)) return;
  if (m.kind === 'ack') {
    const seen = (to.lease[m.from] ??= { since: undefined, unreplicated: false, predecessor: false });
    seen.since = Math.max(seen.since ?? m.sentAt, m.sentAt);
  } else if (fencedByRefusal(to.record!.epoch, { epoch: m.known, ended: false })) {
    // Fenced by a sibling that knows a newer holder: followed there, never watched (so never adopted from).
    to.record = { ...to.record!, holder: m.from, fenced: false, watching: false };
    to.lease = {};
  }
}

/** A replica takes the run over (src/runs/replicas.ts), assuming the worst: no sibling answered its questions. */
function adopt(s: State, q: number): void {
  const pod = s.pods[q]!;
  const from = pod.record!.holder!;
  pod.record = { epoch: nextEpoch(pod.record!.epoch, ids[q]!), holder: null, fenced: false, watching: false, lastReceived: 0, rank: 1 };
  pod.lease = {};
  for (const r of siblingsOf(s, q)) pod.lease[r] = { since: undefined, unreplicated: false, predecessor: r === from };
}

function mayTakeOver(s: State, q: number): boolean {
  const r = s.pods[q]!.record;
  if (r === undefined || r.holder === null || !r.watching) return false;
  const silent = s.now - r.lastReceived >= TAKEOVER * r.rank;
  return mayAdopt({ ended: false, silent, holderAnswers: false, newerElsewhere: false });
}

/** Every state one step away. */
function* successors(s: State, b: Bounds): Generator<State> {
  const step = (change: (next: State) => void): State => {
    const next = clone(s);
    change(next);
    return next;
  };
  if (s.now < b.horizon) yield step((n) => (n.now += 1));
  s.pods.forEach((pod, p) => {
    if (pod.paused) {
      yield_(step((n) => (n.pods[p]!.paused = false)));
      return;
    }
    if (s.pauses < b.pauses) {
      yield_(
        step((n) => {
          n.pods[p]!.paused = true;
          n.pauses += 1;
        }),
      );
    }
    if (holds(pod) && s.messages.length < b.messages) {
      for (const q of siblingsOf(s, p)) if (!pod.lease[q]?.predecessor) yield_(step((n) => push(n, p, q)));
    }
    if (mayTakeOver(s, p)) yield_(step((n) => adopt(n, p)));
  });
  s.messages.forEach((m, i) => {
    const without = (n: State) => n.messages.splice(i, 1)[0]!;
    if (!s.pods[m.to]!.paused) yield_(step((n) => deliver(n, without(n))));
    if (s.losses < b.losses) {
      yield_(
        step((n) => {
          without(n);
          n.losses += 1;
        }),
      );
    }
  });
  yield* pending.splice(0);
}
const pending: State[] = [];
const yield_ = (s: State) => pending.push(s);

/** Every pod back, nothing lost: holders push every tick, everything is delivered in order. */
function heal(from: State): State {
  const s = clone(from);
  for (const pod of s.pods) pod.paused = false;
  for (let round = 0; round < 4; round++) {
    s.now += 1;
    s.pods.forEach((pod, p) => {
      if (holds(pod)) for (const q of siblingsOf(s, p)) if (!pod.lease[q]?.predecessor) push(s, p, q);
    });
    while (s.messages.length > 0) deliver(s, s.messages.shift()!);
  }
  return s;
}

function explore(b: Bounds): { states: number; healed: number } {
  const start = initial(b.pods);
  const seen = new Set([key(start)]);
  const queue = [start];
  let healed = 0;
  while (queue.length > 0) {
    const s = queue.shift()!;
    const starting = s.pods.map((_, p) => p).filter((p) => mayStartNow(s, p));
    if (starting.length > 1) throw new Error(`two pods may start attempts: ${key(s)}`);
    const after = heal(s);
    const goingOn = after.pods.map((_, p) => p).filter((p) => mayStartNow(after, p));
    if (goingOn.length !== 1) throw new Error(`after healing ${goingOn.length} pods go on: ${key(s)} → ${key(after)}`);
    const epochs = after.pods.map((pod) => pod.record?.epoch).filter((e) => e !== undefined);
    const newest = epochs.reduce((a, e) => (compareEpochs(e, a) > 0 ? e : a));
    if (compareEpochs(after.pods[goingOn[0]!]!.record!.epoch, newest) !== 0) throw new Error(`an older holder goes on: ${key(after)}`);
    healed += 1;
    for (const next of successors(s, b)) {
      const k = key(next);
      if (seen.has(k)) continue;
      seen.add(k);
      queue.push(next);
    }
  }
  return { states: seen.size, healed };
}

t.test('two pods: every interleaving of pause, resume, push, acknowledgement, loss and takeover', async (t) => {
  const { states, healed } = explore({ pods: 2, horizon: 6, messages: 2, pauses: 1, losses: 1 });
  t.ok(states > 1000, `${states} states explored, none with two pods starting attempts`);
  t.equal(healed, states, 'from each, once healed, exactly one pod goes on (the newest holder)');
});

t.test('three pods: every interleaving of pause, resume, push, acknowledgement and takeover, two adopters racing', async (t) => {
  const { states, healed } = explore({ pods: 3, horizon: 5, messages: 1, pauses: 1, losses: 0 });
  t.ok(states > 1000, `${states} states explored, none with two pods starting attempts`);
  t.equal(healed, states, 'from each, once healed, exactly one pod goes on (the newest holder)');
});

t.test('the model would catch a holder that ignores its lease', async (t) => {
  // A sanity check of the checker: with a lease as long as the takeover time, a paused holder and its successor overlap.
  const s = initial(2);
  push(s, 0, 1);
  deliver(s, s.messages.shift()!);
  deliver(s, s.messages.shift()!);
  s.now = TAKEOVER;
  t.ok(mayTakeOver(s, 1), 'the replica may take over after a takeover time of silence');
  adopt(s, 1);
  t.ok(mayStartNow(s, 1), 'the new holder goes on at once (its predecessor keeps no replica)');
  t.notOk(mayStartNow(s, 0), 'the old holder does not: its lease lapsed half a takeover time earlier');
  const longLease = mayStart({ fenced: false, siblings: [{ since: 0, excluded: false }] }, TAKEOVER, TAKEOVER * 4);
  t.ok(longLease, 'with a lease longer than the takeover time it would have: the checker would see two pods start');
});
