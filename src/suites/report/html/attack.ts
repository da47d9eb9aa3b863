import { html, type Html } from './kit.js';
import { badge, convId, overviewTable, turnHtml } from './parts.js';
import type { AttemptReport, ConversationReport, RunReport } from '../run-report.js';
import { brokeText } from '../wording.js';

// Attacks in the HTML run report, apart from the functional conversations: an overview whose
// rows say held or broke first (the attacks that broke the agent at the top), and in each attempt
// the outcome, the evidence, the canary and the guard's refusals before the transcript, with the
// planting user's visits around it.

type Attack = NonNullable<AttemptReport['attack']>;

/** Whether a conversation is an attack (its report carries a success rate). */
export const isAttack = (conv: ConversationReport): boolean => conv.attack !== undefined;

const outcomeOf = (conv: ConversationReport): 'broke' | 'held' | 'error' =>
  (conv.attack?.broke ?? 0) > 0 ? 'broke' : conv.attack?.attempts === 0 ? 'error' : 'held';

const firstEvidence = (conv: ConversationReport): string =>
  conv.attempts.flatMap((a) => a.attack?.evidence ?? []).at(0) ??
  conv.attempts.flatMap((a) => a.expectations.filter((e) => e.passed === false).map((e) => e.evidence)).at(0) ??
  '';

/** The attacks' overview: held or broke first, then the attack, how often it broke the agent, and the first evidence. */
export function attackOverview(report: RunReport, key: string): Html {
  const attacks = report.conversations.filter(isAttack);
  if (attacks.length === 0) return html``;
  const order = { broke: 0, error: 1, held: 2 } as const;
  const rows = [...attacks]
    .sort((a, b) => order[outcomeOf(a)] - order[outcomeOf(b)])
    .map((conv) => {
      const outcome = outcomeOf(conv);
      const rate = conv.attack!;
      const interval = rate.success_rate_interval;
      return html`<tr>
        <td>${badge(outcome, outcome === 'error' ? 'could not run' : outcome)}</td>
        <td><a href="${`#${convId(`${key}conv`, conv.index)}`}">${conv.name}</a></td>
        <td class="num">${brokeText(rate)}</td>
        <td class="rate-cell">
          ${interval.estimate === null ? 'no judged attempt' : `${Math.round(interval.low * 100)}–${Math.round(interval.high * 100)} %`}
        </td>
        <td class="muted">${firstEvidence(conv)}</td>
      </tr>`;
    });
  return html`<h2>Attacks</h2>
    ${overviewTable(
      [['Held or broke', '120px'], ['Attack', '22%'], ['Broke it in', '150px'], ['Success rate, 95 % interval', '200px'], ['Evidence']],
      rows,
    )}`;
}

/** An attempt's attack before its transcript: the outcome, where it broke, the evidence, the canary, the refused lines. */
export function attackFacts(attack: Attack): Html {
  const outcome = attack.outcome ?? 'error';
  return html`<div class="${`attack-facts ${outcome}`}">
    ${badge(outcome, attack.outcome === null ? 'not judged' : attack.outcome)}
    <span
      >${attack.broke_at_turn === null ? '' : `at turn ${attack.broke_at_turn} · `}strategy ${attack.strategy ?? "attacker's choice"}</span
    >
    ${attack.canary === null ? '' : html` · canary <code>${attack.canary}</code>`} · guard_hits ${attack.guard_hits}
    ${attack.evidence.map((e) => html`<div>evidence: ${e}</div>`)}
    ${attack.refused_lines.map((r) => html`<div>refused, never sent: <code>${r.line}</code> — ${r.rule}</div>`)}
  </div>`;
}

/** The planting user's visit (before the attack, or its return after it): its turns under a heading. */
export function visitHtml(what: string, visit: Attack['plant']): Html {
  if (visit === null) return html``;
  return html`<div class="note">${what}: <code>${visit.device_ref}</code></div>
    ${visit.turns.map((turn) => turnHtml(turn, { differs: new Set(), diverged: false, attemptError: false, review: null }))}`;
}
