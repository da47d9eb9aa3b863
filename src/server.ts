/**
 * `node dist/server.js` (`npm start`): the gateway, configured from the environment. It checks the
 * Node.js version first and loads the service only then (src/node-version.ts says why).
 */
import './node-version.js';
import { pathToFileURL } from 'node:url';

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await (await import('./service.js')).serveFromEnvironment();
}
