/**
 * The Node.js check of the package's entry points: `dist/cli/main.js` (the command, and through it
 * `dist/entrypoint.js`, the image's command) and `dist/server.js` import it before anything else.
 * It imports only `node:fs` (there on every Node), and they import the rest of the code only dynamically, after it ran:
 * a module that does not link on an older Node (`glob` from `node:fs/promises` is Node ≥ 22) would
 * otherwise fail before any line of ours runs, with a SyntaxError that names neither Node nor its
 * version. Started by a Node older than `engines` (package.json), they exit 2 with one line.
 */
import { existsSync } from 'node:fs';

export const NODE_MAJOR_NEEDED = 24;

/** In a checkout (not in the installed package), the launcher that runs a command on Node 24 (docs/development.md). */
export const CHECKOUT_HINT =
  ' In this checkout, put node scripts/node24.cjs in front (node scripts/node24.cjs npx agent-test-gateway …): ' +
  'it runs the command on Node 24.';

const major = Number(process.versions.node.split('.')[0]);
if (!(major >= NODE_MAJOR_NEEDED)) {
  const hint = existsSync(new URL('../scripts/node24.cjs', import.meta.url)) ? CHECKOUT_HINT : '';
  process.stderr.write(`agent-test-gateway needs Node.js ${NODE_MAJOR_NEEDED} or newer; this is Node.js ${process.version}.${hint}\n`);
  process.exit(2);
}
