import type { CapturedRun } from '../suites/capture/capture.js';
import type { ComparisonReport, Side } from '../suites/report/comparison.js';
import type { AttemptReport, RunReport } from '../suites/report/run-report.js';
import { resumedOf } from './checkpoint.js';
import type { Located } from './locate.js';
import type { Run } from './run.js';

const refOf = (engineKey: string | null): string | null => (engineKey === null ? null : engineKey.replace(/^agent:/, ''));

/** The attempts of one conversation in a run report, by its index in the suite. */
const attemptsIn = (report: RunReport, conversation: number): AttemptReport[] =>
  report.conversations.find((c) => c.index === conversation)?.attempts ?? [];

/** The seed of a run this pod runs or keeps a replica of, as its runner prepared it. */
function seedOf(local: Run): number | undefined {
  const resumed = local.states === undefined ? local.resumed : resumedOf(local.states);
  if (resumed === undefined) return undefined;
  return 'run' in resumed.identities ? resumed.identities.run.seed : resumed.identities.candidate.seed;
}

/**
 * A located run as capture reads it: an ended run from its report (the same on every pod); a
 * running one from the rounds this pod holds (its own run, or the replica its holder keeps pushing
 * here), which are the attempts completed so far.
 */
export function capturedRunOf(located: Located, local: Run | undefined): CapturedRun {
  const { view } = located;
  const progress = [...view.progress.conversations].sort((a, b) => a.conversation_index - b.conversation_index);
  const base = {
    id: view.id,
    kind: view.kind,
    running: view.status === 'running',
    agents: { baseline: refOf(view.baseline), candidate: refOf(view.agent) },
    conversations: progress.map((c) => c.conversation),
    budget: progress[0]?.budget ?? 0,
  };
  if (view.report !== null) {
    const report = view.report as unknown as RunReport | ComparisonReport;
    const sideReport = (side: Side): RunReport => ('runs' in report ? report.runs[side] : report);
    return { ...base, seed: report.seed, attemptsOf: (conversation, side) => attemptsIn(sideReport(side), conversation) };
  }
  const rounds = local?.rounds ?? [];
  return {
    ...base,
    seed: local === undefined ? undefined : seedOf(local),
    attemptsOf: (conversation, side) =>
      rounds.flatMap((round) =>
        round.attempts.filter((_, j) => round.conversations[j] === conversation && (round.sides[j] ?? 'candidate') === side),
      ),
  };
}
