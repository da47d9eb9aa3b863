// How long a futile conversation played on for the suite's test before issue 43, frozen for
// `npm run bench:gate`'s side-by-side: while the suite could still decide either way (a
// regression or a fix), out of reach only when the predictive power was below the conversations'
// futility threshold (0.04) both ways. A copy of `Gate.goesOn` and `suiteFutile` as they were,
// over the gate's public state. Nothing in src/ uses it.
import type { Gate } from '../src/stats/index.js';
import { normalCdf } from '../src/stats/intervals.js';
import { designSuite, suiteCrossing, type SuiteDesign, type SuiteLook } from '../src/stats/suite.js';

const THRESHOLD = 0.04;

/** The rule before: whether conversation `index` of a sequential comparison of `conversations` plays another round. */
export function goesOnBefore(gate: Gate, conversations: number, index: number): boolean {
  const conversation = gate.state(index);
  if (conversation.stop === null) return true;
  if (conversation.stop !== 'futile' || gate.suiteLevel === null) return false;
  const suite = designSuite('sequential', gate.suiteLevel, conversations, gate.maxRounds)!;
  const round = conversation.rounds;
  const { look, roundsLeft } = gate.suiteLook(round);
  if (suiteCrossing(suite, look) !== null) return false;
  return round < gate.minRounds || !futileEitherWay(suite, look, roundsLeft);
}

function futileEitherWay(design: SuiteDesign, look: SuiteLook, pairsToCome: number): boolean {
  const d = look.baselineOnly + look.candidateOnly;
  if (d > design.last || !Number.isFinite(design.critical)) return true;
  const projected = Math.min(design.last, d + (pairsToCome * (d + 1)) / (look.pairs + 2));
  const walk = Math.abs(look.baselineOnly - look.candidateOnly);
  if (walk + (projected - d) < design.critical * Math.sqrt(projected)) return true;
  if (d === 0) return false;
  const t = d / projected;
  if (t >= 1) return true;
  const z = (look.baselineOnly - look.candidateOnly) / Math.sqrt(d);
  const reach = design.critical * Math.sqrt(t);
  const spread = Math.sqrt(1 - t);
  return normalCdf((z - reach) / spread) < THRESHOLD && normalCdf((-z - reach) / spread) < THRESHOLD;
}
