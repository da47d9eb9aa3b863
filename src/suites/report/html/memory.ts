import { html, type Html } from './kit.js';
import { diffLines, memoryHeadline } from '../memory-wording.js';
import type { AttemptMemoryReport } from '../run-report.js';

/**
 * What an attempt left in the simulated user's memory: the headline (units added and removed, how
 * long the wait was) and the diff, a unit a line, shortened (the JSON report has them whole). The
 * units are the engine's, untrusted: escaped like every value of a report.
 */
export function memoryDiffHtml(memory: AttemptMemoryReport): Html {
  const lines = diffLines(memory);
  return html`<div class="memory">
    <div class="${memory.status === 'aggregated' ? 'muted' : 'problem'}">${memoryHeadline(memory)}</div>
    ${lines.length === 0 ? '' : html`<pre class="memory-diff">${lines.join('\n')}</pre>`}
  </div>`;
}
