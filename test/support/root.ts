import { fileURLToPath } from 'node:url';

/** The repository's root, with its trailing slash (`${ROOT}openapi.yaml`). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
