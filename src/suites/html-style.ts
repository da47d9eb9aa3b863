/**
 * The HTML reports' one style sheet, inlined into each page (the page's Content-Security-Policy
 * allows inline styles and nothing else): local fonts only, no url(), no @import — nothing that
 * would make a request. Light, with green / red / amber / violet for passed / failed / flaky or
 * inconclusive / could not run; print-friendly.
 */
export const STYLE = `
:root {
  color-scheme: light;
  --ink: #1f2937; --muted: #6b7280; --faint: #9ca3af; --line: #e5e7eb; --soft: #f3f4f6; --page: #f5f6f8; --card: #fff;
  --pass: #15803d; --pass-bg: #dcfce7; --pass-line: #86efac;
  --fail: #b91c1c; --fail-bg: #fee2e2; --fail-line: #fca5a5;
  --warn: #b45309; --warn-bg: #fef3c7; --warn-line: #fcd34d;
  --err: #6d28d9; --err-bg: #ede9fe; --err-line: #c4b5fd;
  --skip: #4b5563; --skip-bg: #f3f4f6; --skip-line: #d1d5db;
  --user: #eff6ff; --user-line: #bfdbfe; --accent: #1d4ed8;
  --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "DejaVu Sans", sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
}
* { box-sizing: border-box; }
html { background: var(--page); }
body { margin: 0; padding: 28px 24px 48px; font: 14px/1.5 var(--sans); color: var(--ink); }
.page { max-width: 1180px; margin: 0 auto; }
.page.wide { max-width: 1440px; }
h1, h2, h3 { line-height: 1.25; margin: 0; }
h1 { font-size: 22px; font-weight: 650; overflow-wrap: anywhere; }
h2 { font-size: 15px; font-weight: 650; margin: 28px 0 10px; color: #374151; text-transform: uppercase; letter-spacing: .04em; }
code, .mono { font-family: var(--mono); font-size: 12.5px; }
.muted { color: var(--muted); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; box-shadow: 0 1px 2px rgba(16,24,40,.05); }

/* The header: the verdict first, then what ran. */
.head { padding: 20px 24px; border-top: 5px solid var(--skip-line); }
.head.passed { border-top-color: var(--pass); }
.head.failed { border-top-color: var(--fail); }
.head.error { border-top-color: var(--err); }
.title { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.kind { font-size: 12px; font-weight: 600; color: var(--muted); text-transform: uppercase; letter-spacing: .06em; margin-bottom: 6px; }
.sub { margin-top: 8px; color: #374151; display: flex; flex-wrap: wrap; gap: 4px 18px; }
.sub span b { font-weight: 600; }
.arrow { color: var(--faint); padding: 0 6px; }

/* Badges and chips. */
.badge { display: inline-flex; align-items: center; gap: 5px; padding: 2px 9px; border-radius: 999px; font-size: 12px; font-weight: 650;
  border: 1px solid var(--skip-line); background: var(--skip-bg); color: var(--skip); white-space: nowrap; text-transform: uppercase;
  letter-spacing: .03em; }
.badge.big { font-size: 14px; padding: 4px 12px; }
.badge.passed, .badge.fixed { background: var(--pass-bg); color: var(--pass); border-color: var(--pass-line); }
.badge.failed, .badge.regressed { background: var(--fail-bg); color: var(--fail); border-color: var(--fail-line); }
.badge.flaky, .badge.inconclusive { background: var(--warn-bg); color: var(--warn); border-color: var(--warn-line); }
.badge.error { background: var(--err-bg); color: var(--err); border-color: var(--err-line); }
.chip { display: inline-block; font-family: var(--mono); font-size: 12px; padding: 1px 8px; border-radius: 6px; background: var(--soft);
  border: 1px solid var(--line); color: #374151; white-space: nowrap; }
.chip .k { font-family: var(--sans); font-size: 10.5px; font-weight: 650; text-transform: uppercase; letter-spacing: .04em;
  color: var(--muted); margin-right: 5px; }
.chip.tool { background: #eef2ff; border-color: #c7d2fe; }
.chip.shown { background: #ecfeff; border-color: #a5f3fc; }
.chip.bad { background: var(--fail-bg); border-color: var(--fail-line); color: var(--fail); }
.chip.warn { background: var(--warn-bg); border-color: var(--warn-line); color: var(--warn); }
.chips { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 6px; }

/* The summary: counts as tiles, a bar of the conversations, then the facts of the run. */
.summary { margin-top: 16px; padding: 18px 24px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(120px, 1fr)); gap: 12px; }
.tile { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fafafa; }
.tile .n { font-size: 26px; font-weight: 700; line-height: 1.1; font-variant-numeric: tabular-nums; }
.tile .l { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .04em; }
.tile.passed .n, .tile.fixed .n { color: var(--pass); }
.tile.failed .n, .tile.regressed .n { color: var(--fail); }
.tile.flaky .n { color: var(--warn); }
.tile.error .n { color: var(--err); }
.tile.zero .n { color: var(--faint); }
.bar { display: flex; height: 8px; border-radius: 4px; overflow: hidden; background: var(--soft); margin: 14px 0 16px; }
.bar i { display: block; }
.bar .passed, .bar .fixed { background: #22c55e; }
.bar .flaky { background: #f59e0b; }
.bar .failed, .bar .regressed { background: #ef4444; }
.bar .error { background: #8b5cf6; }
.bar .unchanged { background: #d1d5db; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(250px, 1fr)); gap: 10px 24px; margin: 16px 0 0; }
.facts div { min-width: 0; }
.facts .wide { grid-column: span 2; }
.facts dt { font-size: 11.5px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .04em; }
.facts dd { margin: 1px 0 0; overflow-wrap: anywhere; }
.facts dd .sep { color: var(--faint); }
.meter { display: inline-block; width: 64px; height: 6px; border-radius: 3px; background: var(--fail-bg); vertical-align: middle;
  margin-right: 8px; overflow: hidden; }
.meter i { display: block; height: 100%; background: #22c55e; }

/* Tables: the overview, the sides, the differences. */
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 11.5px; font-weight: 650; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; background: #fafafa; }
tr:last-child td { border-bottom: 0; }
.table { overflow: hidden; }
.table a { color: inherit; text-decoration: none; font-weight: 600; }
.table a:hover { text-decoration: underline; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
table.sides { margin: 4px 0 16px; border: 1px solid var(--line); border-radius: 8px; border-collapse: separate; border-spacing: 0; }
table.sides th:first-child { width: 210px; }
.diff td.worse { background: #fef2f2; }
.diff td.better { background: #f0fdf4; }
.diff .tally { font-weight: 650; font-variant-numeric: tabular-nums; }
.diff td.worse .tally { color: var(--fail); }
.diff td.better .tally { color: var(--pass); }
.diff .ev { display: block; color: #374151; margin-top: 2px; overflow-wrap: anywhere; }
.diffs { margin: 4px 0 18px; border: 1px solid var(--fail-line); border-radius: 8px; overflow: hidden; }
.diffs .cap { padding: 8px 12px; background: #fff7f7; font-weight: 650; color: var(--fail); border-bottom: 1px solid var(--fail-line); }
.diffs.good { border-color: var(--pass-line); }
.diffs.good .cap { background: #f6fef9; color: var(--pass); border-color: var(--pass-line); }

/* Conversations and attempts: collapsible, failing ones open. */
details.conv { margin-top: 14px; }
details > summary { cursor: pointer; list-style: none; }
details > summary::-webkit-details-marker { display: none; }
details > summary::before { content: ""; flex: none; width: 7px; height: 7px; margin: 0 4px 0 2px; border: solid var(--faint);
  border-width: 0 2px 2px 0; transform: rotate(-45deg); }
details[open] > summary::before { transform: rotate(45deg); margin-top: -4px; }
.conv > summary { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; padding: 14px 18px;
  border-left: 4px solid var(--skip-line);
  border-radius: 10px; }
.conv[open] > summary { border-bottom: 1px solid var(--line); border-bottom-left-radius: 0; border-bottom-right-radius: 0; }
.conv.passed > summary, .conv.fixed > summary { border-left-color: var(--pass); }
.conv.failed > summary, .conv.regressed > summary { border-left-color: var(--fail); }
.conv.flaky > summary { border-left-color: var(--warn); }
.conv.error > summary { border-left-color: var(--err); }
.conv.unchanged > summary { border-left-color: var(--skip-line); }
.conv .name { font-weight: 650; font-size: 15px; overflow-wrap: anywhere; }
.conv .stats { margin-left: auto; color: var(--muted); display: flex; gap: 14px; flex-wrap: wrap; font-size: 13px; }
.conv-body { padding: 14px 18px 18px; }
details.attempt { border: 1px solid var(--line); border-radius: 8px; margin-top: 12px; background: #fcfcfd; }
details.attempt > summary { padding: 9px 14px; display: flex; gap: 8px 14px; align-items: center; flex-wrap: wrap; font-size: 13px; }
details.attempt[open] > summary { border-bottom: 1px solid var(--line); }
.attempt-body { padding: 4px 14px 12px; }
.attempt .label { font-weight: 650; }
.meta { color: var(--muted); display: inline-flex; gap: 4px 14px; flex-wrap: wrap; }
.meta code { color: #374151; }

/* A transcript: the user's line on the right, the agent's reply on the left, the checks under it. */
.turn { display: grid; grid-template-columns: 26px 1fr; gap: 10px; padding: 12px 0; }
.turn + .turn { border-top: 1px dashed var(--line); }
.turn .no { font-size: 12px; font-weight: 700; color: var(--faint); text-align: right; padding-top: 20px;
  font-variant-numeric: tabular-nums; }
.msgs { min-width: 0; display: flex; flex-direction: column; gap: 6px; }
.msg { display: flex; flex-direction: column; max-width: 86%; }
.msg.user { align-self: flex-end; align-items: flex-end; }
.msg.agent { align-self: flex-start; }
.who { font-size: 11.5px; color: var(--muted); margin: 0 4px 2px; display: flex; gap: 6px; align-items: center; }
.bubble { padding: 8px 13px; border-radius: 14px; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; }
.user .bubble { background: var(--user); border: 1px solid var(--user-line); border-bottom-right-radius: 4px; }
.user.sim .bubble { background: #f5f3ff; border: 1px dashed #a78bfa; }
.sim-tag { font-size: 10.5px; font-weight: 650; text-transform: uppercase; letter-spacing: .04em; color: #6d28d9; background: #ede9fe;
  padding: 0 6px; border-radius: 4px; }
.agent .bubble { background: #fff; border: 1px solid var(--line); border-bottom-left-radius: 4px; box-shadow: 0 1px 1px rgba(0,0,0,.03); }
.agent .bubble.silent { color: var(--faint); font-style: italic; }
.turn.skipped .bubble { opacity: .55; }
.turn.failed .agent .bubble { border-color: var(--fail-line); }
.turn.diverged { background: #fffbeb; box-shadow: inset 3px 0 0 #f59e0b; border-radius: 6px; }
.turn.diverged .no { color: var(--warn); }
.flag { align-self: flex-start; font-size: 11.5px; font-weight: 650; color: var(--warn); background: var(--warn-bg);
  border: 1px solid var(--warn-line); border-radius: 999px; padding: 0 9px; }
.problem { color: var(--fail); font-size: 13px; }
.note { color: var(--muted); font-size: 12.5px; }
.skip-why { color: var(--muted); font-size: 12.5px; font-style: italic; }

/* Checks: ✓ / ✗ per expectation and criterion, with the evidence or the judge's reasoning. */
ul.checks { list-style: none; margin: 4px 0 0; padding: 0; display: flex; flex-direction: column; gap: 3px; }
.check { display: grid; grid-template-columns: 18px 1fr; gap: 6px; font-size: 13px; padding: 3px 8px; border-radius: 6px; }
.check .mark { font-weight: 800; text-align: center; }
.check.pass .mark { color: var(--pass); }
.check.fail { background: #fef2f2; }
.check.fail .mark { color: var(--fail); }
.check.inconclusive { background: #fffbeb; }
.check.inconclusive .mark { color: var(--warn); }
.check.none .mark { color: var(--faint); }
.check.differs { outline: 2px solid #f59e0b; outline-offset: -2px; }
.check .what { font-weight: 600; overflow-wrap: anywhere; }
.check .ev { color: #4b5563; overflow-wrap: anywhere; }
.check.pass .ev { color: var(--muted); }
.check .verdict { font-size: 10.5px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; margin-right: 4px; }
.check.fail .verdict { color: var(--fail); }
.check.pass .verdict { color: var(--pass); }
.check.inconclusive .verdict { color: var(--warn); }
.whole { margin-top: 10px; padding-top: 10px; border-top: 1px solid var(--line); }
.whole h4 { margin: 0 0 4px; font-size: 11.5px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }

/* Baseline and candidate side by side, turn by turn. */
.pair { display: grid; grid-template-columns: 1fr 1fr; }
.pair > .cell { min-width: 0; }
.pair > .l { padding-right: 18px; }
.pair > .r { border-left: 1px solid var(--line); padding-left: 18px; }
.pair > .side-head { padding-top: 8px; padding-bottom: 8px; border-bottom: 2px solid var(--line); font-size: 13px; }
.pair.sides { margin: 0 0 16px; border: 1px solid var(--line); border-radius: 8px; background: #fafafa; }
.pair.sides > .cell { padding-top: 10px; padding-bottom: 10px; display: flex; flex-wrap: wrap; align-items: center; gap: 6px 16px; }
.pair.sides > .l { padding-left: 14px; }
.pair.sides > .r { padding-right: 14px; }
.side { font-weight: 700; text-transform: uppercase; letter-spacing: .05em; font-size: 12px; }
.pair > .side-head .side { margin-right: 8px; }
.pair > .row-flag { grid-column: 1 / -1; padding-top: 10px; }
.pair > .cell > .turn { border-bottom: 0; }
.pair > .cell.line { border-bottom: 1px dashed var(--line); }
.pair > .cell.empty { color: var(--faint); font-size: 12.5px; padding: 14px 0; }

footer { margin-top: 28px; color: var(--muted); font-size: 12.5px; }
footer ul { margin: 6px 0 0; padding-left: 18px; }
footer p { margin: 14px 0 0; color: var(--faint); }
.notes { padding: 14px 20px; margin-top: 10px; }

@media (max-width: 900px) {
  .pair { grid-template-columns: 1fr; }
  .pair > .l { padding-right: 0; }
  .pair > .r { border-left: 0; padding-left: 0; }
  .pair > [data-side]::before { content: attr(data-side); display: block; margin-top: 8px; font-size: 11px; font-weight: 700;
    text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
  .msg { max-width: 100%; }
}
@media print {
  html, body { background: #fff; }
  body { padding: 0; font-size: 12px; }
  .card { box-shadow: none; }
  details::details-content { content-visibility: visible; display: block; }
  details > summary::before { content: none; }
  .turn, .check, tr { break-inside: avoid; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
`;
