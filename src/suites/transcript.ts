import type { ExpectationResult, RunReport, TurnReport } from './report.js';

/**
 * A run report as a person reads it in a terminal or a CI log: each conversation's turns with
 * the line sent, what the agent said, and a ✓ or ✗ per expectation (the evidence for a ✗).
 */
export const PASS = '✓';
export const FAIL = '✗';
export const SKIP = '-';

const show = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((v) => JSON.stringify(v)).join(', ');
  return JSON.stringify(value);
};

/** `tool lookup_order`, `text_matches /^Hi/`, `text_contains "order", "size"` */
export function describeExpectation(e: ExpectationResult): string {
  switch (e.kind) {
    case 'turn_completed':
      return 'the turn ends with its own exit';
    case 'conversation_continues':
      return 'the conversation stays open';
    case 'text_matches': {
      const pattern = String(e.expected);
      return `text_matches ${pattern.startsWith('/') ? pattern : `/${pattern}/`}`;
    }
    case 'text_contains':
      return `text_contains ${show(e.expected)}`;
    default:
      return `${e.kind} ${show(e.expected)}`;
  }
}

export function turnTitle(conversation: string, turn: Pick<TurnReport, 'index' | 'line'>): string {
  return `${conversation} / turn ${turn.index}: ${turn.line}`;
}

/** The failed expectations of a turn, one per line: what was expected, and what was seen. */
export function failureLines(turn: TurnReport): string[] {
  return turn.expectations.filter((e) => e.passed === false).map((e) => `${describeExpectation(e)}: ${e.evidence}`);
}

const indent = (text: string, by: string): string => text.split('\n').join(`\n${by}`);

function renderTurn(turn: TurnReport): string[] {
  const out: string[] = [];
  if (turn.status === 'skipped') {
    out.push(`    ${turn.index} ${SKIP} ${turn.line}   (skipped: ${turn.skipped_reason ?? 'not run'})`);
    return out;
  }
  out.push(`    ${turn.index} > ${turn.line}`);
  if (turn.text !== null && turn.text !== '') out.push(`      < ${indent(turn.text, '        ')}`);
  const facts = [
    turn.outcome === 'error' ? `did not run (${turn.error?.error ?? 'error'})` : `${turn.outcome} in ${turn.duration_ms} ms`,
    ...(turn.tools.length > 0 ? [`tools: ${turn.tools.join(', ')}`] : []),
    ...(turn.shown.length > 0 ? [`shown: ${turn.shown.join(', ')}`] : []),
    ...(turn.ended_by_agent ? ['the agent ended the conversation'] : []),
    ...(turn.reconnected ? ['reconnected: earlier planning lost'] : []),
  ];
  out.push(`        ${facts.join(' · ')}`);
  for (const e of turn.expectations) {
    out.push(e.passed ? `      ${PASS} ${describeExpectation(e)}` : `      ${FAIL} ${describeExpectation(e)} — ${e.evidence}`);
  }
  if (turn.status === 'failed' && turn.outcome !== 'exit') {
    // Why the turn failed, once: not what the evidence already says, nor the close boilerplate.
    const said = turn.expectations.map((e) => e.evidence).join('\n');
    for (const note of turn.notes) {
      if (!said.includes(note) && !/end-of-conversation work/.test(note)) out.push(`        note: ${note}`);
    }
  }
  return out;
}

export function summaryLine(report: RunReport): string {
  const { conversations, turns, expectations } = report.totals;
  const parts = [
    `${conversations.total} conversation${conversations.total === 1 ? '' : 's'}${conversations.failed > 0 ? ` (${conversations.failed} failed)` : ''}`,
    `${turns.total} turn${turns.total === 1 ? '' : 's'}${
      turns.failed + turns.skipped > 0
        ? ` (${[turns.failed > 0 ? `${turns.failed} failed` : '', turns.skipped > 0 ? `${turns.skipped} skipped` : '']
            .filter(Boolean)
            .join(', ')})`
        : ''
    }`,
    `expectations: ${expectations.passed} passed, ${expectations.failed} failed${expectations.skipped > 0 ? `, ${expectations.skipped} not evaluated` : ''}`,
  ];
  const took = report.duration_ms < 1000 ? `${report.duration_ms} ms` : `${(report.duration_ms / 1000).toFixed(1)} s`;
  return `${report.passed ? `${PASS} passed` : `${FAIL} FAILED`} · ${parts.join(' · ')} · ${took}`;
}

export function renderReport(report: RunReport, title: string): string {
  const out: string[] = [`${title} — ${report.agent} · run label ${report.run_label}`];
  if (report.memory !== null && report.memory.restored !== null) {
    out.push(
      `  memory of ${report.memory.device_ref}: restored ${report.memory.restored} unit${report.memory.restored === 1 ? '' : 's'} before the run`,
    );
  }
  for (const conv of report.conversations) {
    const facts = [
      conv.session_id === null ? 'no session' : `session ${conv.session_id}`,
      ...(conv.device_ref === null ? [] : [conv.device_ref]),
      ...(conv.time_offset === null ? [] : [`time_offset ${conv.time_offset}`]),
    ];
    out.push(`  ${conv.passed ? PASS : FAIL} ${conv.name} · ${facts.join(' · ')}`);
    for (const turn of conv.turns) out.push(...renderTurn(turn));
  }
  if (report.memory?.snapshot) {
    out.push(
      `  memory of ${report.memory.device_ref} after the run: ${report.memory.snapshot.unit_count} unit${report.memory.snapshot.unit_count === 1 ? '' : 's'}`,
    );
  }
  if (report.memory?.error) out.push(`  ${FAIL} memory after the run: ${report.memory.error.message}`);
  // The warm-up session, the restore's delete-then-write, a snapshot taken before aggregation: not said above.
  for (const note of report.memory?.notes ?? []) {
    if (!report.memory?.error || !note.includes(report.memory.error.message)) out.push(`    note: ${note}`);
  }
  out.push(`  ${summaryLine(report)}`);
  return `${out.join('\n')}\n`;
}
