import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Every call between pods carries the shared secret in this header: the internal peer routes,
 * and a forwarded call (which is then never forwarded again). Compared in constant time, on
 * hashes so that the lengths match too.
 */
export const PEER_HEADER = 'x-agent-test-gateway-peer';

/**
 * Every call between pods names the address its sender is listed under (`PEERS` or `PEER_DNS`),
 * checked against the receiver's current peer list: the source address of a call is no identity
 * (a mesh sidecar sends from 127.0.0.6, a NAT from its own address, a list may hold host names).
 */
export const PEER_ADDRESS_HEADER = 'x-agent-test-gateway-peer-address';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

export function secretCheck(secret: string): (header: string | string[] | undefined) => boolean {
  const expected = digest(secret);
  return (header) => typeof header === 'string' && timingSafeEqual(digest(header), expected);
}
