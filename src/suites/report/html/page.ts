import { readFileSync } from 'node:fs';
import { escapeHtml, type Html } from './kit.js';

/**
 * The page around an HTML report file, the one part of the report's rendering that needs Node (it
 * reads the style sheet): the other modules of html/ also run in the browser, served to the runs
 * page as they are (src/routes/runs-page.ts).
 */

/**
 * The reports' one style sheet, public/report/report.css at the package root (four levels above
 * both src/suites/report/html/ and dist/suites/report/html/), read on the first page written and
 * inlined: the page makes no request.
 */
const STYLE_SHEET = new URL('../../../../public/report/report.css', import.meta.url);
let style: string | undefined;
const styleSheet = (): string => (style ??= readFileSync(STYLE_SHEET, 'utf8'));

/**
 * The policy (the meta tag, and the header of the API answer that serves the file): inline styles
 * and data: images, nothing else — no script, no request of any kind.
 */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** The whole page: the policy first, so that nothing from the report comes before it. */
export function page(title: string, body: Html, wide = false): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">`,
    '<meta name="referrer" content="no-referrer">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="generator" content="agent-test-gateway">',
    '<link rel="icon" href="data:,">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${styleSheet()}</style>`,
    '</head>',
    '<body>',
    `<div class="${wide ? 'page wide' : 'page'}">`,
    body.markup,
    '</div>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
