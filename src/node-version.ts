/**
 * The Node.js check of the package's entry points: `dist/cli/main.js` (the command, and through it
 * `dist/entrypoint.js`, the image's command) and `dist/server.js` call it before anything else.
 * It imports only `node:fs` (there on every Node), and they import the rest of the code only dynamically, after it ran:
 * a module that does not link on an older Node (`glob` from `node:fs/promises` is Node ≥ 22) would
 * otherwise fail before any line of ours runs, with a SyntaxError that names neither Node nor its
 * version. Started by a Node older than they need, they exit 2 with one line; `run` and `compare`
 * first write the reports they were asked for, as not run, when those writers load (src/cli/old-node.ts).
 *
 * The command (`run`, `compare`, `chat`) runs on Node 22 and newer, as other teams' CI images
 * often have it (`engines`); the gateway itself (`serve`, `npm start`, the image) on Node 24.
 */
import { existsSync } from 'node:fs';

/** The gateway: the server, `serve` and the image. */
export const NODE_MAJOR_NEEDED = 24;
/** The command's `run`, `compare` and `chat` (package.json's `engines`). */
export const CLI_NODE_MAJOR_NEEDED = 22;

/** In a checkout (not in the installed package), the launcher that runs a command on Node 24 (docs/development.md). */
export const CHECKOUT_HINT =
  ' In this checkout, put node scripts/node24.cjs in front (node scripts/node24.cjs npx agent-test-gateway …): ' +
  'it runs the command on Node 24.';

/** Outside a checkout, what to do when the command's Node is too old: a newer Node, or the image that has one. */
export const INSTALLED_HINT =
  ' Run it on Node.js 22 or 24 (in CI: actions/setup-node with node-version 24, or a node:24 image), ' +
  "or with the gateway's image, which has it: docker run IMAGE run … (the README's section In your CI).";

/** The line saying that this Node is older than `needed`, which `what` needs, and what to do; undefined when it is not. */
export function nodeProblem(needed: number, what = 'agent-test-gateway'): string | undefined {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= needed) return undefined;
  const hint = existsSync(new URL('../scripts/node24.cjs', import.meta.url))
    ? CHECKOUT_HINT
    : needed === CLI_NODE_MAJOR_NEEDED
      ? INSTALLED_HINT
      : '';
  return `${what} needs Node.js ${needed} or newer; this is Node.js ${process.version}.${hint}`;
}

/** Exits 2 with one line when this Node is older than `needed`; `what` needs it. */
export function requireNode(needed: number, what = 'agent-test-gateway'): void {
  const problem = nodeProblem(needed, what);
  if (problem === undefined) return;
  process.stderr.write(`${problem}\n`);
  process.exit(2);
}
