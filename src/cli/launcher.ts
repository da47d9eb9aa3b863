import { existsSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI_NODE_MAJOR_NEEDED } from '../node-version.js';

/**
 * The command as a person types it here: `npx agent-test-gateway`, or, where the machine's own
 * Node is older than the command needs (scripts/node24.cjs, which fetched Node 24 for this process,
 * says so in MACHINE_NODE_VERSION), with the launcher in front so that it runs as printed:
 * `node scripts/node24.cjs npx agent-test-gateway`. The demo's walk-through and chat's reconnect
 * hint print it.
 */
export function commandLine(env: NodeJS.ProcessEnv = process.env): string {
  const machine = env.MACHINE_NODE_VERSION;
  const major = machine === undefined ? NaN : Number(machine.replace(/^v/, '').split('.')[0]);
  const launcher = fileURLToPath(new URL('../../scripts/node24.cjs', import.meta.url));
  if (!(major < CLI_NODE_MAJOR_NEEDED) || !existsSync(launcher)) return 'npx agent-test-gateway';
  const rel = relative(process.cwd(), launcher);
  return `node ${rel.startsWith('..') || isAbsolute(rel) ? launcher : rel} npx agent-test-gateway`;
}
