/**
 * The service's own words, shared by every layer: who calls (Caller, AgentAccess, AgentRef), what
 * a conversation connects with (ConnectInput, ConnectSettings), how a turn ends (TurnOutcome),
 * why a socket closes (CloseCause), how an engine admission ended (ConnectResult) and which limit
 * made room (EvictionLimit). Metrics label their series with these sets; nothing here knows
 * HTTP, the engine's wire or an input rule.
 */
export const TURN_OUTCOMES = ['exit', 'timeout', 'engine_closed', 'engine_error', 'cancelled'] as const;
export type TurnOutcome = (typeof TURN_OUTCOMES)[number];

/** Why the gateway or the engine closed a conversation's socket. */
export const CLOSE_CAUSES = [
  'idle',
  'turn_failed',
  'cancelled',
  'agent_ended',
  'caller',
  'evicted',
  'engine_closed',
  'shutdown',
  'moved',
] as const;
export type CloseCause = (typeof CLOSE_CAUSES)[number];

/** The limit an eviction made room under: the caller's conversations, or the pod's. */
export const EVICTION_LIMITS = ['caller', 'pod'] as const;
export type EvictionLimit = (typeof EVICTION_LIMITS)[number];

/** How an engine socket's admission ended: the session element, then the first turn not refused. */
export const CONNECT_RESULTS = ['ok', 'unrecognised', 'not_enabled', 'refused', 'unavailable'] as const;
export type ConnectResult = (typeof CONNECT_RESULTS)[number];

/** Who calls: the platform's user for the bearer token. */
export interface Caller {
  /** The platform user id: the owner of conversations. */
  id: string;
  /** The platform's email for the user, when it gives one: shown as who started a run. */
  email?: string | undefined;
  /** Forwarded to the platform only. */
  readonly token: string;
}

/** `{agent}` as called: `ref` or `ref.N`. The engine key is the same text. */
export interface AgentRef {
  ref: string;
  revision: number | null;
  key: string;
}

/** What the caller may run: the platform's answer for an agent. */
export interface AgentAccess {
  /** The engine key without `agent:`, e.g. `coach` or `coach.7`. */
  agentKey: string;
  /** The revision the engine runs for the key: a plain ref resolves to its Published one. */
  revision: number;
  /** That revision's state: only these two run. */
  revisionState: 'Published' | 'Preview';
  projectId: string;
  /** The project is closed to anonymous sessions: the engine test identity signs in. */
  signIn: boolean;
}

/** The connect fields of a start or turn, validated: fixed when the conversation connects. */
export type ConnectInput = {
  locale?: string | undefined;
  device_ref?: string | undefined;
  time_zone?: string | null | undefined;
  run_label?: string | null | undefined;
  time_offset?: string | null | undefined;
};

/** What the engine is told at connect time; the same for the whole conversation. */
export interface ConnectSettings {
  deviceRef: string;
  locale: string;
  timeZone: string | null;
  runLabel: string | null;
  timeOffset: string | null;
}

const DEFAULT_LOCALE = 'en-US';

/** Every simulated device ref lives under this namespace. */
export const DEVICE_NAMESPACE = 'mcp:';

export const settingsFrom = (input: ConnectInput, freshDevice: () => string): ConnectSettings => ({
  deviceRef: input.device_ref ?? freshDevice(),
  locale: input.locale ?? DEFAULT_LOCALE,
  timeZone: input.time_zone ?? null,
  runLabel: input.run_label ?? null,
  timeOffset: input.time_offset ?? null,
});

/** The settings in the API's own words (snake_case), as results and errors show them. */
export const settingsView = (settings: ConnectSettings) => ({
  device_ref: settings.deviceRef,
  locale: settings.locale,
  time_zone: settings.timeZone,
  run_label: settings.runLabel,
  time_offset: settings.timeOffset,
});

/** The connect fields a later call asks for that differ from the conversation's own. */
export function conflictingSettings(fixed: ConnectSettings, input: ConnectInput): string[] {
  const asked: Array<[string, string | null | undefined, string | null]> = [
    ['locale', input.locale, fixed.locale],
    ['device_ref', input.device_ref, fixed.deviceRef],
    ['time_zone', input.time_zone, fixed.timeZone],
    ['run_label', input.run_label, fixed.runLabel],
    ['time_offset', input.time_offset, fixed.timeOffset],
  ];
  return asked.filter(([, value, own]) => value !== undefined && value !== own).map(([field]) => field);
}
