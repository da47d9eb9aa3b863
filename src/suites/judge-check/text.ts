import type { components } from '../../api/report-shapes.js';
import { FAIL, PASS } from '../report/wording.js';

// A judge-check as the command prints it and the MCP tool's text says it: per criterion its
// agreement, κ with its interval and the error rates, then every disagreement with the judge's
// reasoning; the whole last.

type Schemas = components['schemas'];
type JudgeCheckReport = Schemas['JudgeCheckReport'];
type JudgeAgreement = Schemas['JudgeAgreement'];

const percent = (share: number): string => `${Number((share * 100).toFixed(1))} %`;

const rate = (share: number | null, part: number, whole: number): string =>
  share === null ? 'n/a' : `${percent(share)} (${part} of ${whole})`;

const signed = (x: number): string => (x < 0 ? `−${Math.abs(x).toFixed(2)}` : x.toFixed(2));

/** κ with its interval, or why it is undefined. */
function kappaText(kappa: JudgeAgreement['kappa']): string {
  if (kappa.estimate === null) return `κ undefined (${(kappa.note ?? '').replace(/^undefined: /, '')})`;
  if (kappa.low === null || kappa.high === null) return `κ ${signed(kappa.estimate)} (${kappa.note ?? 'no interval'})`;
  return `κ ${signed(kappa.estimate)} [${signed(kappa.low)}, ${signed(kappa.high)}]`;
}

/** One line of figures: agreement, κ, the false-pass and false-fail rates, what was not judged. */
function agreementLine(s: JudgeAgreement): string {
  const agreed = s.both_passed + s.both_failed;
  return [
    `agreement ${rate(s.agreement, agreed, s.compared)}`,
    kappaText(s.kappa),
    `false-pass ${rate(s.false_pass_rate, s.false_passes, s.false_passes + s.both_failed)}`,
    `false-fail ${rate(s.false_fail_rate, s.false_fails, s.false_fails + s.both_passed)}`,
    ...(s.not_judged > 0 ? [`${s.not_judged} not judged`] : []),
  ].join(', ');
}

const meets = (report: JudgeCheckReport, s: JudgeAgreement): boolean =>
  report.min_agreement === null || s.agreement === null || s.agreement >= report.min_agreement;

export function renderJudgeCheck(report: JudgeCheckReport): string {
  const out: string[] = [
    `judge-check of ${report.agents.join(', ')}: ${report.labelled} labelled ruling${report.labelled === 1 ? '' : 's'}, ` +
      `seed ${report.seed}, prompt version ${report.prompt_version}`,
  ];
  for (const c of report.criteria) {
    out.push(`${meets(report, c.statistics) ? PASS : FAIL} ${c.id}: ${c.text}`);
    out.push(`    ${agreementLine(c.statistics)}`);
    for (const d of c.disagreements) {
      const votes = d.votes > 1 ? ` (${d.agreement} of ${d.votes} votes)` : '';
      out.push(`    ${FAIL} ${d.item}: labelled ${d.label}, the judge ruled ${d.verdict}${votes}: ${d.reasoning}`);
    }
  }
  out.push(`overall: ${agreementLine(report.overall)}`);
  for (const note of report.notes) out.push(`note: ${note}`);
  if (report.min_agreement !== null) {
    const below = report.criteria.filter((c) => !meets(report, c.statistics));
    out.push(
      report.meets_min_agreement === null
        ? `${FAIL} no ruling could be compared with min agreement ${report.min_agreement}`
        : below.length === 0
          ? `${PASS} every criterion agrees at least ${percent(report.min_agreement)} of the time`
          : `${FAIL} below min agreement ${percent(report.min_agreement)}: ${below
              .map((c) => `${c.id} (${percent(c.statistics.agreement!)})`)
              .join(', ')}`,
    );
  }
  return `${out.join('\n')}\n`;
}
