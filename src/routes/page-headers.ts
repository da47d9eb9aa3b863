/**
 * The headers of the gateway's own pages (the debug page, the runs page): never cached, never
 * framed, no referrer, and a Content-Security-Policy that allows scripts, styles and requests
 * from this origin only — no inline script, no other origin.
 */
export function pageHeaders(options: { styleAttributes?: boolean } = {}): Record<string, string> {
  return {
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-resource-policy': 'same-origin',
    'content-security-policy': [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      // The report's markup sets widths (bars, columns) in style attributes; a style attribute runs no script.
      ...(options.styleAttributes === true ? ["style-src-attr 'unsafe-inline'"] : []),
      "connect-src 'self'",
      "img-src 'self' data:",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  };
}
