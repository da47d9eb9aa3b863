// A run's progress (src/runs/views.ts) from the rounds it completed, alone: a comparison's rounds
// count each round once (an invalid attempt run again within it is not a round more), an attempt
// the cancel cut short is no attempt of its side, and a cancelled run's unfinished conversations
// end `cancelled`, not `running`; a stopped conversation carries what the gate read, from the first word on it, to replicas too.
import t from 'tap';
import { applyCheckpoint, checkpointFromWire, checkpointOf } from '../src/runs/checkpoint.js';
import { Run, type RunSpec } from '../src/runs/run.js';
import { runView } from '../src/runs/views.js';
import type { ConversationDecision, DecidedSide } from '../src/suites/report/comparison.js';
import type { AttemptReport } from '../src/suites/report/run-report.js';

const attempt = (n: number, status: AttemptReport['status']): AttemptReport => ({ attempt: n, status }) as AttemptReport;

function comparison(names: string[]): Run {
  const spec = {
    id: 'run-1',
    kind: 'comparison',
    createdAt: 0,
    access: { agentKey: 'coach.3' },
    outline: { suite: null, names, budget: 20 },
  };
  return new Run(spec as unknown as RunSpec, null, 'pod-a');
}

t.test("a comparison's rounds: an invalid attempt run again is not a round more; a cancelled one is no attempt", async (t) => {
  const run = comparison(['a', 'b']);
  run.keep({
    unit: 0,
    round: 1,
    attempts: [attempt(1, 'invalid'), attempt(2, 'passed'), attempt(1, 'passed')],
    conversations: [0, 0, 0],
    sides: ['baseline', 'baseline', 'candidate'],
  });
  run.keep({
    unit: 0,
    round: 2,
    attempts: [attempt(3, 'passed'), attempt(2, 'failed')],
    conversations: [0, 0],
    sides: ['baseline', 'candidate'],
  });
  run.keep({ unit: 1, round: 1, attempts: [attempt(1, 'cancelled')], conversations: [1], sides: ['baseline'] });
  const side = (passed: number, judged: number): DecidedSide => ({
    judged,
    passed,
    errors: 0,
    pass_rate_interval: { estimate: passed / judged, low: 0, high: 1 },
  });
  const decision: ConversationDecision = {
    conversation: 'a',
    conversation_index: 0,
    stop: 'decided',
    rounds: 2,
    verdict: 'regressed',
    baseline: side(2, 2),
    candidate: side(1, 2),
  };
  run.stopped(decision);
  run.stopped({ ...decision, stop: 'budget', verdict: null });
  t.same(
    run.lines.map((line) => JSON.parse(line)),
    [{ decided: decision }],
    'one decided line, with what the gate read',
  );
  run.status = 'cancelled';
  const [a, b] = runView(run, 'pod-a').progress.conversations;
  t.match(a, { rounds: 2, sessions: 5, baseline: { attempts: 3, passed: 2 }, candidate: { attempts: 2, passed: 1 }, state: 'decided' });
  t.same(a!.decision, decision, 'the first word on it');
  t.match(b, { rounds: 0, sessions: 1, baseline: { attempts: 0 }, candidate: { attempts: 0 }, state: 'cancelled', decision: null });
  t.equal(runView(run, 'pod-a').progress.decided, 1, 'a cancelled conversation is not decided');
});

t.test(
  'a checkpoint carries the decisions to a replica; one from a pod of the previous release, without them, leaves them null',
  async (t) => {
    const holder = comparison(['a', 'b']);
    const side: DecidedSide = { judged: 3, passed: 3, errors: 0, pass_rate_interval: { estimate: 1, low: 0.44, high: 1 } };
    const decision: ConversationDecision = {
      conversation: 'b',
      conversation_index: 1,
      stop: 'futile',
      rounds: 3,
      verdict: null,
      baseline: side,
      candidate: side,
    };
    const round = { unit: 1, round: 1, attempts: [attempt(1, 'passed'), attempt(1, 'passed')], conversations: [1, 1] };
    holder.keep({ ...round, sides: ['baseline', 'candidate'] });
    holder.stopped(decision);
    // The replica holds the spec and the first round already: the push carries what was added since.
    const wire = checkpointOf(holder, { lines: 0, rounds: 1 }, { holderPort: 1, pod: 'pod-a', rank: 1, adopt: false });
    const replicaOf = (push: unknown) => {
      const replica = new Run(holder.spec, 'http://pod-a', 'pod-b');
      replica.keep(holder.rounds[0]!);
      const checkpoint = checkpointFromWire(JSON.parse(JSON.stringify(push)));
      t.ok(checkpoint, 'a valid checkpoint');
      t.type(applyCheckpoint(replica, checkpoint!, 'http://pod-a'), Run, 'applied');
      return runView(replica, 'pod-b').progress.conversations;
    };
    t.same(
      replicaOf(wire).map((c) => c.decision),
      [null, decision],
    );
    const previous = { ...wire, stops: wire.stops.map(({ decision: _decision, ...stop }) => stop) };
    t.same(
      replicaOf(previous).map((c) => [c.state, c.decision]),
      [
        ['running', null],
        ['futile', null],
      ],
    );
  },
);
