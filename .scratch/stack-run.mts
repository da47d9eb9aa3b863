import { startStack } from '../test/support/stack.ts';
const s = await startStack({ teardown() {} }, { env: { DEBUG_PAGE: 'true', MAX_BODY_BYTES: '8192' } });
console.log(s.url);
setTimeout(() => process.exit(0), 900_000);
