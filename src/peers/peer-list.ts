import { lookup } from 'node:dns/promises';
import { hostname, networkInterfaces } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { PeerAddress, PeerConfig } from '../ops/peer-config.js';

/**
 * The other pods of the release: the static list and the DNS name's records, without this pod
 * itself (PEER_ADDRESS, or its own addresses on its own port). DNS is re-resolved every few
 * seconds, so pods that come and go are found; a failed resolution keeps the last answer. The
 * entry this pod is listed under is its identity towards its siblings (`self`): a call between
 * pods names it, since the source address of the call says nothing behind a mesh sidecar or NAT.
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
/** HOST values that listen on every address: the pod is then any of its own addresses. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);

/** This host's own names and addresses. */
function ownHosts(): Set<string> {
  const own = new Set<string>(LOOPBACK_NAMES);
  own.add(hostname().toLowerCase());
  for (const list of Object.values(networkInterfaces())) for (const nic of list ?? []) own.add(nic.address.toLowerCase());
  return own;
}

/** A listed address as pods name each other: lower case, IPv6 in brackets. */
function addressOf({ host, port }: PeerAddress): string {
  const name = host.toLowerCase();
  return name.includes(':') ? `[${name}]:${port}` : `${name}:${port}`;
}

function toPeer(listed: PeerAddress): Peer {
  const address = addressOf(listed);
  return { address, origin: `http://${address}`, host: listed.host, port: listed.port };
}

/** Where this pod listens: HOST and PORT. */
export interface OwnEndpoint {
  host: string;
  port: number;
}

export class PeerList {
  readonly #config: PeerConfig;
  readonly #ownPort: number;
  /** HOST when it names one address (127.0.0.2, a pod IP); undefined when it listens on every one. */
  readonly #boundHost: string | undefined;
  readonly #log: FastifyBaseLogger;
  readonly #onChange: (peers: readonly Peer[]) => void;
  readonly #own = ownHosts();
  #resolved: PeerAddress[] = [];
  #peers: Peer[] = [];
  #self: string;
  #timer: NodeJS.Timeout | undefined;

  constructor(config: PeerConfig, own: OwnEndpoint, log: FastifyBaseLogger, onChange: (peers: readonly Peer[]) => void) {
    this.#config = config;
    this.#ownPort = own.port;
    const bound = own.host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
    this.#boundHost = WILDCARD_HOSTS.has(own.host) ? undefined : bound;
    this.#self = this.#fallbackSelf();
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

  /** The address this pod is listed under, as its calls to siblings name it. */
  get self(): string {
    return this.#self;
  }

  /** The current peer listed under `address` (as a call names it), if any. */
  listed(address: string): Peer | undefined {
    const wanted = address.trim().toLowerCase();
    return this.#peers.find((p) => p.address === wanted);
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

  #isSelf(listed: PeerAddress): boolean {
    if (this.#config.self !== null) return addressOf(listed) === addressOf(this.#config.self);
    const name = listed.host.toLowerCase();
    if (listed.port !== this.#ownPort) return false;
    // Listening on one address, the pod is that address (or its host name): 127.0.0.3 is a sibling of 127.0.0.2.
    if (this.#boundHost !== undefined) {
      return name === this.#boundHost || name === hostname().toLowerCase() || (LOOPBACK_NAMES.has(name) && this.#boundHost === '127.0.0.1');
    }
    return this.#own.has(name) || this.#own.has(name.split('.')[0]!) || name.startsWith('127.');
  }

  /** Not found in the list: HOST when it names one address, else the host name (a pod's name). */
  #fallbackSelf(): string {
    if (this.#config.self !== null) return addressOf(this.#config.self);
    return addressOf({ host: this.#boundHost ?? hostname(), port: this.#ownPort });
  }

  #rebuild(): void {
    const peers = new Map<string, Peer>();
    let self: string | undefined;
    for (const address of [...this.#config.static, ...this.#resolved]) {
      if (this.#isSelf(address)) {
        self ??= addressOf(address);
        continue;
      }
      const peer = toPeer(address);
      peers.set(peer.address, peer);
    }
    const before = this.#peers.map((p) => p.address).join(',');
    this.#peers = [...peers.values()];
    this.#self = self ?? this.#fallbackSelf();
    if (this.#peers.map((p) => p.address).join(',') !== before) {
      this.#log.info({ event: 'peers_changed', peers: this.#peers.length }, 'peers changed');
    }
    this.#onChange(this.#peers);
  }
}
