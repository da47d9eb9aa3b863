// Preloaded (`node --expose-gc --import ./bench/gateway-preload.mjs dist/server.js`) into a
// gateway whose memory a bench or a test measures; it changes nothing of the service:
//  - SIGWINCH runs a full GC and writes `BENCH_MEM {rss, heapUsed, external, arrayBuffers}` to
//    stderr, so resident memory is sampled after garbage is collected;
//  - with a pipe for stdin (a bench runner's), the gateway exits when the runner goes away (its end
//    of the pipe closes), so no gateway outlives a bench that was killed.
import { fstatSync } from 'node:fs';

process.on('SIGWINCH', () => {
  if (typeof globalThis.gc === 'function') globalThis.gc();
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(
    `BENCH_MEM ${JSON.stringify({ rss, heapUsed, heapTotal, external, arrayBuffers, gc: typeof globalThis.gc === 'function' })}\n`,
  );
});

if (fstatSync(0).isFIFO()) {
  const leave = () => process.exit(0);
  process.stdin.on('end', leave);
  process.stdin.on('close', leave);
  process.stdin.on('error', leave);
  process.stdin.resume();
  process.stdin.unref?.();
}
