/**
 * The docs name files of this repository (`src/suites/run/prompts.ts`, `[scaling](docs/scaling.md)`)
 * so that a reader can open them: each named file exists. A move that forgets a page fails here.
 * The CHANGELOG is left out: it tells where things were.
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { ROOT } from './support/root.js';

const PAGES = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** A path in code spans or prose under one of the repository's own folders. */
const NAMED_PATH = /(?<![\w/.-])((?:src|test|scripts|bench|helm|examples|public)\/[\w./-]*\w)/g;
/** A Markdown link's target, without its #fragment; addresses with a scheme are not files. */
const LINK = /\]\((?![a-z]+:|#)([^)#\s]+)(?:#[^)]*)?\)/g;

/** Folders a command writes when it runs (`npm run bench -- --cpu-prof`), named before they exist. */
const WRITTEN = new Set(['bench/profiles']);

t.test('every file the docs name exists', async (t) => {
  for (const page of PAGES) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const named = new Set([...text.matchAll(NAMED_PATH)].map((m) => m[1]!).filter((p) => !/[*{]/.test(p) && !WRITTEN.has(p)));
    for (const path of named) t.ok(existsSync(join(ROOT, path)), `${page} names ${path}`);
    for (const [, target] of text.matchAll(LINK)) t.ok(existsSync(join(ROOT, dirname(page), target!)), `${page} links to ${target}`);
  }
});
