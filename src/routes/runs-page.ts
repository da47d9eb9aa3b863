import { readFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';
import { pageHeaders } from './page-headers.js';

/**
 * The runs page (RUNS_PAGE, on by default): `GET /runs` lists runs, `GET /runs/{id}` shows one,
 * live. Both are the same static page (public/runs/); its script reads the public API with the
 * reader's own platform token, typed once per tab, so the page itself needs no token and shows
 * nothing a reader could not read with curl.
 *
 * One rendering: the page draws reports with the very modules the HTML report file is written
 * with (src/suites/report/html/, and what they import), served to the browser as ES modules under
 * /runs/page/modules/. From dist/ they are the compiled JavaScript; from a source checkout (the
 * tests, `tsx`) their types are stripped by Node. Only those modules and what they import are
 * served, found by following their imports; one that imports a Node module is refused at once.
 *
 * Fast to open: the page names every script it will import in `<link rel="modulepreload">`s, so
 * the browser fetches them all at once instead of one level of imports after another (eight
 * levels deep: about three quarters of the time to open a big comparison went there).
 */

const ROOT = new URL('../', import.meta.url);
const PAGE_DIR = new URL('../../public/runs/', import.meta.url);
const REPORT_CSS = new URL('../../public/report/report.css', import.meta.url);
/** `.ts` when the gateway runs from its sources, `.js` from dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** The report modules the page imports; the modules they import are served with them. */
const ENTRY_MODULES = [
  'suites/report/html/kit',
  'suites/report/html/parts',
  'suites/report/html/headers',
  'suites/report/html/side-by-side',
  'suites/report/html/plot',
];

const PAGE_FILES = [
  { path: '/runs/page/app.js', file: 'app.js', type: 'text/javascript; charset=utf-8' },
  { path: '/runs/page/api.js', file: 'api.js', type: 'text/javascript; charset=utf-8' },
  { path: '/runs/page/list.js', file: 'list.js', type: 'text/javascript; charset=utf-8' },
  { path: '/runs/page/run.js', file: 'run.js', type: 'text/javascript; charset=utf-8' },
  { path: '/runs/page/views.js', file: 'views.js', type: 'text/javascript; charset=utf-8' },
  { path: '/runs/page/app.css', file: 'app.css', type: 'text/css; charset=utf-8' },
] as const;

const JS = 'text/javascript; charset=utf-8';
/** Where index.html takes the page's preloads. */
const PRELOADS = '<!-- modulepreload -->';

/** A module's JavaScript: as compiled, or its TypeScript with the types stripped. */
async function moduleSource(name: string): Promise<string> {
  const source = await readFile(new URL(`${name}${SOURCE_EXT}`, ROOT), 'utf8');
  if (SOURCE_EXT === '.js') return source.replace(/^\/\/# sourceMappingURL=.*$/m, '');
  const { stripTypeScriptTypes } = await import('node:module');
  return stripTypeScriptTypes(source);
}

const IMPORTS = /^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'|^\s*import\s+'([^']+)'/gm;

/** The entry modules and everything they import, by name relative to src/ (or dist/), with their JavaScript. */
export async function browserModules(entries: readonly string[] = ENTRY_MODULES): Promise<Map<string, string>> {
  const modules = new Map<string, string>();
  const visit = async (name: string): Promise<void> => {
    if (modules.has(name)) return;
    const source = await moduleSource(name);
    modules.set(name, source);
    for (const match of source.matchAll(IMPORTS)) {
      const specifier = match[1] ?? match[2]!;
      if (!specifier.startsWith('.')) {
        throw new Error(`${name} imports ${specifier}: the runs page serves it to the browser, where only the report modules exist`);
      }
      const target = new URL(specifier, new URL(name, ROOT)).href.slice(ROOT.href.length).replace(/\.js$/, '');
      await visit(target);
    }
  };
  for (const entry of entries) await visit(entry);
  return modules;
}

/** The page's own scripts and the report modules, each as a `modulepreload` link put where the page says (`<!-- modulepreload -->`). */
function preloading(index: string, modules: Iterable<string>): string {
  const scripts = [
    ...PAGE_FILES.filter((file) => file.type === JS).map((file) => file.path),
    ...[...modules].map((name) => `/runs/page/modules/${name}.js`),
  ];
  const links = scripts.map((href) => `<link rel="modulepreload" href="${href}" />`).join('\n    ');
  if (!index.includes(PRELOADS)) throw new Error(`public/runs/index.html has no ${PRELOADS} for the page's scripts`);
  return index.replace(PRELOADS, links);
}

export async function runsPageRoutes(app: FastifyInstance): Promise<void> {
  const files = await Promise.all(PAGE_FILES.map(async (page) => ({ ...page, body: await readFile(new URL(page.file, PAGE_DIR)) })));
  const index = await readFile(new URL('index.html', PAGE_DIR));
  const reportCss = await readFile(REPORT_CSS);
  // Read on the first request for one: most pods never serve the page.
  let modules: Promise<Map<string, string>> | undefined;

  // A plugin's hook: it applies to the page's routes only, not to the API's.
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(pageHeaders({ styleAttributes: true }));
  });

  // The page with its preloads, written on the first request for it (the module graph is read then).
  let withPreloads: Promise<string> | undefined;
  const page = async (_request: FastifyRequest, reply: FastifyReply) => {
    modules ??= browserModules();
    withPreloads ??= modules.then((found) => preloading(index.toString('utf8'), found.keys()));
    return reply.type('text/html; charset=utf-8').send(await withPreloads);
  };
  app.get('/runs', page);
  app.get('/runs/:run_id', page);
  for (const { path, type, body } of files) app.get(path, async (_request, reply) => reply.type(type).send(body));
  app.get('/runs/page/report.css', async (_request, reply) => reply.type('text/css; charset=utf-8').send(reportCss));
  app.get<{ Params: { '*': string } }>('/runs/page/modules/*', async (request, reply) => {
    const name = request.params['*'].replace(/\.js$/, '');
    modules ??= browserModules();
    const source = (await modules).get(name);
    if (source === undefined) throw new GatewayError('not_found', `The runs page has no module ${request.params['*']}.`);
    return reply.type(JS).send(source);
  });
}
