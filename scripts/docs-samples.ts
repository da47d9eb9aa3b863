/**
 * `npm run docs:samples`: rewrites every sample output the docs mark `<!-- sample: NAME -->` with
 * what its command prints in a fresh run against the demo (test/support/doc-samples.ts lists the
 * samples and their commands; test/docs.test.ts holds the docs to a fresh run). Run it when the
 * output changes on purpose, and read the diff: the samples are written verbatim, ids and times
 * included.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { demoBanner, startDemo } from '../test/support/demo.js';
import { markedSamples, produce, SAMPLE_FILES, SAMPLES, withBody } from '../test/support/doc-samples.js';

const teardowns: Array<() => unknown> = [];
const demo = startDemo({ teardown: (fn) => teardowns.push(fn) }, { PORT: '0' });
let failed = false;
try {
  const { gw } = await demoBanner(demo);
  for (const file of SAMPLE_FILES) {
    const before = await readFile(file, 'utf8');
    let markdown = before;
    // From the last block to the first, so that each rewrite leaves the earlier blocks where they were found.
    for (const marked of markedSamples(before).reverse()) {
      const ran = await produce(marked.name, gw);
      if (ran.code !== SAMPLES[marked.name]!.exit) {
        process.stderr.write(`${file}, ${marked.name}: exited ${ran.code}, the sample says ${SAMPLES[marked.name]!.exit}\n${ran.stderr}\n`);
        failed = true;
        continue;
      }
      markdown = withBody(markdown, marked, ran.block);
      process.stdout.write(`${file}: ${marked.name}${ran.block === marked.body ? ' (unchanged)' : ''}\n`);
    }
    if (markdown !== before) await writeFile(file, markdown);
  }
} finally {
  demo.child.kill('SIGINT');
  await demo.exit;
  for (const fn of teardowns) await fn();
}
process.exitCode = failed ? 1 : 0;
