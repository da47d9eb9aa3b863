// Preloaded (`node --expose-gc --import ./bench/gateway-preload.mjs dist/server.js`) into the
// gateway the bench measures; it changes nothing of the service:
//  - SIGWINCH runs a full GC and writes `BENCH_MEM {rss, heapUsed, external, arrayBuffers}` to
//    stderr, so resident memory is sampled after garbage is collected;
//  - the gateway exits when the bench runner goes away (its end of our stdin closes), so no
//    gateway outlives a bench that was killed.
process.on('SIGWINCH', () => {
  if (typeof globalThis.gc === 'function') globalThis.gc();
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(
    `BENCH_MEM ${JSON.stringify({ rss, heapUsed, heapTotal, external, arrayBuffers, gc: typeof globalThis.gc === 'function' })}\n`,
  );
});

const leave = () => process.exit(0);
process.stdin.on('end', leave);
process.stdin.on('close', leave);
process.stdin.on('error', leave);
process.stdin.resume();
process.stdin.unref?.();
