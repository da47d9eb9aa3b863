/**
 * `node dist/server.js` (`npm start`): the gateway, configured from the environment. It checks the
 * Node.js version first and loads the service only then (src/node-version.ts says why).
 */
import { pathToFileURL } from 'node:url';
import { NODE_MAJOR_NEEDED, requireNode } from './node-version.js';

requireNode(NODE_MAJOR_NEEDED);

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await (await import('./serve.js')).serveFromEnvironment();
}
