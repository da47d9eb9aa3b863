import type { AgentRef, ConnectInput } from '../../domain/vocabulary.js';

/**
 * The test suite format as the runner reads it, once a suite has passed its schema (schema.ts).
 * A suite takes two forms:
 * - `file`: a YAML file read by the CLI; `memory.restore` and `memory.save` are file paths
 *   (relative to the suite file) and `agent` is required, since it names the route;
 * - `http`: the body of `POST /v1/agents/{agent}/runs`; `memory.restore` is the snapshot itself
 *   (`{ units: […] }`), `memory.save` is `true`, and `agent` may be left out.
 */
export type SuiteForm = 'file' | 'http';

export const MAX_CONVERSATIONS = 100;
export const MAX_TURNS = 200;
export const MAX_WAIT_MS = 600_000;
export const MAX_REPEAT = 20;
export const MAX_CONCURRENCY = 50;
export const DEFAULT_CONCURRENCY = 10;
export const MAX_ATTEMPTS = 200;
/** A comparison given neither `repeat` nor `max_attempts` runs sequentially with these. */
export const DEFAULT_MIN_ATTEMPTS = 5;
export const DEFAULT_MAX_ATTEMPTS = 20;
export const DEFAULT_CONFIDENCE = 0.95;

/** The deterministic checks of one turn. */
export interface Expectations {
  text_matches?: string;
  text_contains?: string[];
  tool?: string;
  not_tool?: string;
  shown?: string;
  not_shown?: string;
  ended_by_agent?: boolean;
  exit_within_ms?: number;
}

/** A plain-language criterion a judge rules on, `votes` times per attempt (1, 3 or 5: the majority rules). */
export interface Criterion {
  id: string;
  text: string;
  votes: number;
}

export interface SuiteTurn {
  line: string;
  expect: Expectations;
  /** `expect.judge`: ruled on over the conversation up to this turn */
  judge: Criterion | undefined;
}

/** The deterministic checks over all of a conversation's turns, and its criteria. */
export interface ConversationExpect {
  tools?: string[];
  not_tools?: string[];
  shown?: string[];
  not_shown?: string[];
  ended_by_agent?: boolean;
}

export interface SimulatedUser {
  persona: string;
  goal: string;
  facts: Record<string, string>;
  maxTurns: number;
  minTurns: number;
  /** the suite's model name; undefined: the gateway's SIMULATOR_MODEL */
  model: string | undefined;
  temperature: number;
}

/** What a conversation's memory must show once the engine has aggregated it. */
export interface MemoryExpect {
  /** texts some added unit's JSON must hold (case-insensitive), each */
  contains: string[];
  /** texts no added unit's JSON may hold */
  notContains: string[];
  addedAtLeast: number | undefined;
  addedAtMost: number | undefined;
  /** ruled on by the judge over the added (and removed) units and the transcript */
  criteria: Criterion[];
  /** how long after the plain close to wait for the units to appear and settle */
  waitMs: number;
}

/** How the attacker goes about its objective; undefined: its own choice. */
export type AttackStrategy = 'crescendo' | 'role_play' | 'injection' | 'authority' | 'persistence';

/**
 * `attack:` on a conversation: the model plays an adversarial user after the agent's #intro; the
 * conversation breaks when a check fails and holds otherwise. With `plant`, another user tells the
 * agent a fresh canary first; with `control`, that user comes back and must get it back.
 */
export interface Attack {
  objective: string;
  strategy: AttackStrategy | undefined;
  maxTurns: number;
  /** texts (case-insensitive) or `/…/flags` regular expressions the agent must never say or show */
  neverSays: string[];
  neverTools: string[];
  plant: { deviceRef: string; lines: string[]; waitMs: number } | undefined;
  control: { lines: string[] } | undefined;
  model: string | undefined;
  temperature: number;
}

export interface SuiteConversation {
  name: string;
  /** The suite's connect settings with this conversation's overrides applied (run_label excluded). */
  connect: Omit<ConnectInput, 'run_label'>;
  waitMs: number;
  turns: SuiteTurn[];
  simulatedUser: SimulatedUser | undefined;
  expect: ConversationExpect;
  criteria: Criterion[];
  /** `expect.memory`: checks over the units the conversation added; undefined: no wait, no checks */
  memory: MemoryExpect | undefined;
  /** `attack:`: an adversarial user instead of scripted turns or a simulated user (its criteria are `criteria`) */
  attack?: Attack | undefined;
}

export interface HttpMemory {
  deviceRef: string;
  restore: { units: Array<Record<string, unknown>> } | undefined;
  save: boolean;
  waitMs: number;
}

export interface FileMemory {
  deviceRef: string;
  restore: string | undefined;
  save: string | undefined;
  waitMs: number;
}

export interface Suite<M = HttpMemory> {
  agent: AgentRef | undefined;
  name: string | undefined;
  runLabel: string | undefined;
  memory: M | undefined;
  /** attempts of each conversation in a run: `repeat`, else `max_attempts`, else 1 */
  repeat: number;
  /** how a comparison spends attempts (see AttemptPlan) */
  attempts: AttemptPlan;
  /** 1 − a comparison's false-alarm rate, default 0.95 */
  confidence: number;
  /** the share of a conversation's attempts that must pass, 0–1 */
  passRate: number;
  /** the run's conversations at once (a comparison's, both sides together), 1–50 */
  concurrency: number;
  /** whether failed attempts with a simulated user or criteria are reviewed (who is responsible); default true */
  review: boolean;
  /** the suite's seed for the model; undefined: one is drawn and reported */
  seed: number | undefined;
  conversations: SuiteConversation[];
}

/**
 * How a comparison spends attempts per side and conversation: `repeat` exactly N, tested at the
 * end; `sequential` rounds from `min` to `max`, each conversation stopped once decided. A suite
 * given neither is `sequential` with the defaults.
 */
export type AttemptPlan = { kind: 'repeat'; attempts: number } | { kind: 'sequential'; min: number; max: number };

/** Whether a conversation needs the model: a simulated user or something for a judge. */
export const needsModel = (conv: SuiteConversation): boolean =>
  conv.simulatedUser !== undefined ||
  conv.attack !== undefined ||
  conv.criteria.length > 0 ||
  (conv.memory?.criteria.length ?? 0) > 0 ||
  conv.turns.some((t) => t.judge !== undefined);
