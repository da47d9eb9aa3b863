import { lookup } from 'node:dns/promises';
import { hostname, networkInterfaces } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { PeerAddress, PeerConfig } from '../ops/peer-config.js';

/**
 * The other pods of the release: the static list and the DNS name's records, without this pod
 * itself (its own addresses on its own port). DNS is re-resolved every few seconds, so pods that
 * come and go are found; a failed resolution keeps the last answer.
 */
const DNS_REFRESH_MS = 5_000;

export interface Peer {
  /** `host:port`, `[v6]:port` for IPv6: the key and the base of the peer's URL. */
  address: string;
  origin: string;
  host: string;
  port: number;
}

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain']);

/** This host's own names and addresses. */
function ownHosts(): Set<string> {
  const own = new Set<string>(LOOPBACK_NAMES);
  own.add(hostname().toLowerCase());
  for (const list of Object.values(networkInterfaces())) for (const nic of list ?? []) own.add(nic.address.toLowerCase());
  return own;
}

function toPeer({ host, port }: PeerAddress): Peer {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return { address, origin: `http://${address}`, host, port };
}

export class PeerList {
  readonly #config: PeerConfig;
  readonly #ownPort: number;
  readonly #log: FastifyBaseLogger;
  readonly #onChange: (peers: readonly Peer[]) => void;
  readonly #own = ownHosts();
  #resolved: PeerAddress[] = [];
  #peers: Peer[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(config: PeerConfig, ownPort: number, log: FastifyBaseLogger, onChange: (peers: readonly Peer[]) => void) {
    this.#config = config;
    this.#ownPort = ownPort;
    this.#log = log;
    this.#onChange = onChange;
    this.#rebuild();
    if (config.dns !== null) {
      void this.refresh();
      this.#timer = setInterval(() => void this.refresh(), DNS_REFRESH_MS);
      this.#timer.unref();
    }
  }

  get peers(): readonly Peer[] {
    return this.#peers;
  }

  /** Resolves PEER_DNS again (A and AAAA records); the port is this pod's own. */
  async refresh(): Promise<void> {
    if (this.#config.dns === null) return;
    try {
      const records = await lookup(this.#config.dns, { all: true });
      this.#resolved = records.map((r) => ({ host: r.address, port: this.#ownPort }));
    } catch (err) {
      this.#log.warn(
        { event: 'peer_dns_failed', code: (err as NodeJS.ErrnoException).code },
        'PEER_DNS did not resolve; keeping the last peers',
      );
    }
    this.#rebuild();
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #isSelf({ host, port }: PeerAddress): boolean {
    const name = host.toLowerCase();
    return port === this.#ownPort && (this.#own.has(name) || this.#own.has(name.split('.')[0]!) || name.startsWith('127.'));
  }

  #rebuild(): void {
    const peers = new Map<string, Peer>();
    for (const address of [...this.#config.static, ...this.#resolved]) {
      if (this.#isSelf(address)) continue;
      const peer = toPeer(address);
      peers.set(peer.address, peer);
    }
    const before = this.#peers.map((p) => p.address).join(',');
    this.#peers = [...peers.values()];
    if (this.#peers.map((p) => p.address).join(',') !== before) {
      this.#log.info({ event: 'peers_changed', peers: this.#peers.length }, 'peers changed');
    }
    this.#onChange(this.#peers);
  }
}
