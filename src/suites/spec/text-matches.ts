/**
 * `text_matches` is a JavaScript regular expression, written plain (`order \d+`) or as a literal
 * with flags (`/hello/i`).
 */
const LITERAL = /^\/(.+)\/([a-z]*)$/s;
const FLAGS = /^(?!.*(.).*\1)[imsu]*$/;

export function compilePattern(source: string): RegExp {
  const literal = LITERAL.exec(source);
  if (literal) {
    const [, body, flags] = literal as unknown as [string, string, string];
    if (!FLAGS.test(flags)) throw new Error(`the flags /${flags} are not allowed; use any of i, m, s, u once`);
    return new RegExp(body, flags);
  }
  return new RegExp(source);
}

/**
 * `never_says`: a `/…/flags` literal is a regular expression, anything else a text looked for
 * case-insensitively; answers the part of `said` it found, or undefined.
 */
export function findSaid(source: string, said: string): string | undefined {
  if (LITERAL.test(source)) return compilePattern(source).exec(said)?.[0];
  const at = said.toLowerCase().indexOf(source.toLowerCase());
  return at < 0 ? undefined : said.slice(at, at + source.length);
}
