import { z } from 'zod';

/**
 * Peers: the other pods of one release, which together act as one service. PEERS lists them
 * (`host:port`, for tests and static setups), PEER_DNS names them (the chart's headless Service,
 * re-resolved every few seconds, port = this pod's own), PEER_SECRET authenticates every call
 * between them. Neither PEERS nor PEER_DNS: a single pod, exactly as without this module.
 */
export interface PeerAddress {
  host: string;
  port: number;
}

export interface PeerConfig {
  static: PeerAddress[];
  dns: string | null;
  /**
   * The address this pod is listed under (PEER_ADDRESS), when it cannot find itself in the list
   * (behind a NAT, a name that is not its host name); null: found in the list.
   */
  self: PeerAddress | null;
  /** Never logged, never in an error or a metric. */
  secret: string;
  timeoutMs: number;
}

/** Shorter secrets work (a lab's), but start with a warning: guessable secrets open the peer routes. */
export const ADVISED_SECRET_CHARS = 16;

const HOST_PORT = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/;

function parsePeerAddress(entry: string): PeerAddress | undefined {
  const match = HOST_PORT.exec(entry.trim());
  const port = Number(match?.[3]);
  if (match === null || port < 1 || port > 65535) return undefined;
  return { host: (match[1] ?? match[2])!, port };
}

export const peerEnvFields = {
  PEERS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const entries = (value ?? '')
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== '');
      const parsed = entries.map(parsePeerAddress);
      const bad = entries.filter((_, i) => parsed[i] === undefined);
      if (bad.length > 0) {
        ctx.addIssue({ code: 'custom', message: `PEERS must be a comma-separated list of host:port, not ${bad.join(', ')}` });
        return z.NEVER;
      }
      return parsed as PeerAddress[];
    }),
  PEER_DNS: z
    .string()
    .optional()
    .transform((value) => (value === undefined || value.trim() === '' ? null : value.trim()))
    .refine((name) => name === null || /^[A-Za-z0-9.-]+$/.test(name), {
      error: 'PEER_DNS must be a DNS name, such as the headless Service agent-test-gateway-peers',
    }),
  PEER_ADDRESS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return null;
      const parsed = parsePeerAddress(value);
      if (parsed === undefined) {
        ctx.addIssue({ code: 'custom', message: `PEER_ADDRESS must be the host:port this pod is listed under, not ${value}` });
        return z.NEVER;
      }
      return parsed;
    }),
  // The value is never echoed: only its rule is.
  PEER_SECRET: z.string().optional(),
};

interface PeerEnv {
  PEERS: PeerAddress[];
  PEER_DNS: string | null;
  PEER_ADDRESS: PeerAddress | null;
  PEER_SECRET?: string | undefined;
}

/** The peer settings, or the problem; `undefined` when no peers are configured. */
export function peerConfig(env: PeerEnv, timeoutMs: number): PeerConfig | undefined | string {
  const secret = env.PEER_SECRET?.trim() ?? '';
  if (env.PEERS.length === 0 && env.PEER_DNS === null) return undefined;
  if (secret === '') {
    return (
      `PEER_SECRET is required with PEERS or PEER_DNS: a shared secret (${ADVISED_SECRET_CHARS} characters or more advised) ` +
      `that every pod of the release has`
    );
  }
  return { static: env.PEERS, dns: env.PEER_DNS, self: env.PEER_ADDRESS, secret, timeoutMs };
}
