import { z } from 'zod';
import { agentSchema, runIdSchema } from '../schemas/requests.js';
import type { AttemptReport } from '../suites/report/run-report.js';
import type { RunState } from '../suites/run/run-state.js';
import type { Resumed, RunStates } from '../suites/run/start.js';
import { verdictOnPush, type Epoch } from './holding.js';
import { Run, type RunSpec } from './run.js';

/**
 * A run's checkpoint as pods send it to each other: everything a sibling needs to continue the run
 * from its last completed round (what it is, its identities and what it gathered, the rounds and
 * lines so far, how it ended). Lines and rounds only grow, so a push carries what was added since
 * the offsets the receiver already holds (`lines_from`, `rounds_from`), or everything from 0.
 * Checked on arrival like any input: a sibling is trusted with the secret, not with its bytes.
 */

const accessSchema = z.object({
  agentKey: z.string().min(1).max(256),
  revision: z.number().int().min(0),
  revisionState: z.enum(['Published', 'Preview']),
  projectId: z.string().min(1).max(256),
  signIn: z.boolean(),
});

const identitySchema = z.object({
  runId: runIdSchema,
  runLabel: z.string().min(1).max(256),
  seed: z.number().int().min(0),
  startedAt: z.number().int().min(0),
});

/** What a run gathered besides attempts: carried as its runner left it (the fixture's report is shown as is). */
const gatheredSchema = z.object({ memory: z.record(z.string(), z.unknown()).nullable(), notes: z.array(z.string()) });

const resumedSchema = z.union([
  z.object({ identities: z.object({ run: identitySchema }), gathered: z.object({ run: gatheredSchema }) }),
  z.object({
    identities: z.object({ baseline: identitySchema, candidate: identitySchema }),
    gathered: z.object({ baseline: gatheredSchema, candidate: gatheredSchema }),
  }),
]);

const attemptSchema = z.looseObject({ attempt: z.number().int().min(1), status: z.string() });

const roundSchema = z.object({
  unit: z.number().int().min(0),
  round: z.number().int().min(1),
  attempts: z.array(attemptSchema),
  conversations: z.array(z.number().int().min(0)),
  sides: z.array(z.enum(['baseline', 'candidate'])),
});

const specSchema = z.object({
  id: runIdSchema,
  kind: z.enum(['run', 'comparison']),
  body: z.unknown(),
  caller_id: z.string().min(1).max(512),
  caller_email: z.string().max(320).optional(),
  agent: agentSchema,
  access: accessSchema,
  baseline: z.object({ agent: agentSchema, access: accessSchema }).optional(),
  monitor: z.string().max(64).optional(),
  detached: z.boolean(),
  created_at: z.number().int().min(0),
  // `suite` came with this release: a pod of the previous one sends none.
  outline: z.object({ suite: z.string().nullable().default(null), names: z.array(z.string()), budget: z.number().int().min(1) }),
});

const count = z.number().int().min(0);
const stopSchema = z.enum(['decided', 'futile', 'budget']);
const decidedSideSchema = z.object({
  judged: count,
  passed: count,
  errors: count,
  pass_rate_interval: z.object({ estimate: z.number().nullable(), low: z.number(), high: z.number() }),
});
/** openapi.yaml's ConversationDecision. */
const decisionSchema = z.object({
  conversation: z.string(),
  conversation_index: count,
  stop: stopSchema,
  rounds: count,
  verdict: z.enum(['regressed', 'fixed']).nullable(),
  baseline: decidedSideSchema,
  candidate: decidedSideSchema,
});

const moveSchema = z.object({
  from: z.string().max(512),
  to: z.string().max(512),
  at: z.number().int().min(0),
  cause: z.enum(['drain', 'takeover']),
  rounds_completed: z.number().int().min(0),
  attempts_rerun: z.number().int().min(0),
});

export const checkpointSchema = z.object({
  /** Present when the push starts from nothing (`lines_from` and `rounds_from` 0). */
  spec: specSchema.optional(),
  epoch: z.number().int().min(0),
  /** The pod that raised the epoch last: at the same number, epochs are ordered by it. */
  epoch_by: z.string().max(64).default(''),
  /** Why the run was cancelled: a sibling that continues it starts nothing more. */
  cancelled: z.string().max(512).nullable().default(null),
  lines_from: z.number().int().min(0),
  lines: z.array(z.string()),
  rounds_from: z.number().int().min(0),
  rounds: z.array(roundSchema),
  status: z.enum(['running', 'passed', 'failed', 'error', 'cancelled']),
  report: z.record(z.string(), z.unknown()).nullable(),
  error: z.object({ error: z.string(), message: z.string() }).nullable(),
  ended_at: z.number().int().min(0).nullable(),
  moves: z.array(moveSchema),
  stops: z.array(
    z.object({
      conversation: z.number().int().min(0),
      stop: stopSchema,
      rounds: z.number().int().min(0),
      // Came with this release: a pod of the previous one sends none.
      decision: decisionSchema.nullable().default(null),
    }),
  ),
  resumed: resumedSchema.nullable(),
  in_flight: z.array(z.tuple([z.string(), z.number().int().min(0)])),
  /**
   * Where the sender listens: no longer read (the call names the address its sender is listed
   * under), still sent for the pods of the previous release during a rollout, which tell the
   * sender by it.
   */
  holder_port: z.number().int().min(1).max(65535).optional(),
  /** The sender's pod name, as views show where the run is. */
  pod: z.string().min(1).max(512),
  /** The order in which siblings take over when the holder stops answering (1 first). */
  rank: z.number().int().min(1),
  /** Take the run over now (a drain hands it over). */
  adopt: z.boolean(),
});

export type CheckpointWire = z.input<typeof checkpointSchema>;
export type Checkpoint = z.output<typeof checkpointSchema>;

/** What the runner prepared, as a move carries it: identities and gathered, per state. */
export function resumedOf(states: RunStates): Resumed {
  const pick = (state: RunState) => ({
    identities: { runId: state.runId, runLabel: state.runLabel, seed: state.seed, startedAt: state.startedAt },
    gathered: { memory: state.memory, notes: state.notes },
  });
  if ('run' in states) {
    const run = pick(states.run);
    return { identities: { run: run.identities }, gathered: { run: run.gathered } };
  }
  const baseline = pick(states.baseline);
  const candidate = pick(states.candidate);
  return {
    identities: { baseline: baseline.identities, candidate: candidate.identities },
    gathered: { baseline: baseline.gathered, candidate: candidate.gathered },
  };
}

const specToWire = (spec: RunSpec): NonNullable<CheckpointWire['spec']> => ({
  id: spec.id,
  kind: spec.kind,
  body: spec.body,
  caller_id: spec.callerId,
  ...(spec.callerEmail === undefined ? {} : { caller_email: spec.callerEmail }),
  agent: spec.agent.key,
  access: spec.access,
  ...(spec.baseline === undefined ? {} : { baseline: { agent: spec.baseline.agent.key, access: spec.baseline.access } }),
  ...(spec.monitor === undefined ? {} : { monitor: spec.monitor }),
  detached: spec.detached,
  created_at: spec.createdAt,
  outline: spec.outline,
});

/** A push of what `run` holds past the given offsets (from 0: all of it, with its spec). */
export function checkpointOf(
  run: Run,
  from: { lines: number; rounds: number },
  to: { holderPort: number; pod: string; rank: number; adopt: boolean },
): CheckpointWire {
  const whole = from.lines === 0 && from.rounds === 0;
  const resumed = run.states === undefined ? (run.resumed ?? null) : resumedOf(run.states);
  return {
    ...(whole ? { spec: specToWire(run.spec) } : {}),
    epoch: run.epoch.n,
    epoch_by: run.epoch.by,
    cancelled: run.cancelledBecause,
    lines_from: from.lines,
    lines: run.lines.slice(from.lines),
    rounds_from: from.rounds,
    rounds: run.rounds.slice(from.rounds),
    status: run.status,
    report: run.report,
    error: run.error,
    ended_at: run.endedAt,
    moves: run.moves,
    stops: [...run.stops].map(([conversation, s]) => ({ conversation, ...s })),
    resumed,
    in_flight: [...run.inFlight],
    holder_port: to.holderPort,
    pod: to.pod,
    rank: to.rank,
    adopt: to.adopt,
  };
}

/** Why a push was not applied: `stale` (an older holder's), `gap` (it does not follow what is held: send everything). */
export type Refusal = 'stale' | 'gap';

/** The checkpoint a sibling sent, or undefined when it is not one. */
export function checkpointFromWire(body: unknown): Checkpoint | undefined {
  const parsed = checkpointSchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Applies a push to the replica held (a new one when it carries the spec); answers the run, or why
 * it was refused.
 */
export function applyCheckpoint(held: Run | undefined, push: Checkpoint, holder: string): Run | Refusal {
  const epoch = epochOf(push);
  // A run held here is fenced (./held.ts) before a newer holder's push is applied to it.
  if (
    verdictOnPush(held && { epoch: held.epoch, heldHere: held.holder === null, ended: held.ended }, {
      epoch,
      ended: push.status !== 'running',
    }) !== 'apply'
  ) {
    return 'stale';
  }
  let run = held;
  // A push with the spec starts from nothing: the record is built anew from it.
  if (push.spec !== undefined) {
    const s = push.spec;
    run = new Run(
      {
        id: s.id,
        kind: s.kind,
        body: s.body,
        callerId: s.caller_id,
        callerEmail: s.caller_email,
        agent: s.agent,
        access: s.access,
        baseline: s.baseline,
        monitor: s.monitor,
        detached: s.detached,
        createdAt: s.created_at,
        outline: s.outline,
      },
      holder,
      push.pod,
    );
  }
  if (run === undefined || push.lines_from !== run.lines.length || push.rounds_from !== run.rounds.length) return 'gap';
  run.epoch = epoch;
  run.rank = push.rank;
  run.holder = holder;
  run.pod = push.pod;
  run.lines.push(...push.lines);
  for (const round of push.rounds) run.keep({ ...round, attempts: round.attempts as unknown as AttemptReport[] });
  run.status = push.status;
  run.report = push.report;
  run.error = push.error;
  run.endedAt = push.ended_at;
  run.moves.splice(0, run.moves.length, ...push.moves);
  run.stops.clear();
  for (const { conversation, ...stopped } of push.stops) run.stops.set(conversation, stopped);
  run.resumed = (push.resumed ?? undefined) as Resumed | undefined;
  // A cancel known here (sent to this pod while its holder did not answer) sticks, whatever the push says.
  const cancelled = push.cancelled ?? held?.cancelledBecause ?? null;
  if (cancelled !== null) run.cancel(cancelled);
  run.inFlight.clear();
  for (const [key, n] of push.in_flight) run.inFlight.set(key, n);
  run.changed();
  return run;
}

/** The epoch a push carries. */
export const epochOf = (push: Checkpoint): Epoch => ({ n: push.epoch, by: push.epoch_by });
