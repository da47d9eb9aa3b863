import type { FastifyRequest } from 'fastify';

/**
 * The gateway's own absolute URL as the caller reached it: behind a TLS-terminating proxy the
 * scheme is the proxy's (`X-Forwarded-Proto`), the host is the `Host` it passes on. It only names
 * URLs in answers, so a caller that sends a false one misleads only itself.
 */
export function origin(request: FastifyRequest): string {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]!
    .trim()
    .toLowerCase();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : request.protocol;
  return `${scheme}://${request.host}`;
}
