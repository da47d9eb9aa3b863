// A run's progress (src/runs/views.ts) from the rounds it completed, alone: a comparison's rounds
// count each round once (an invalid attempt run again within it is not a round more), an attempt
// the cancel cut short is no attempt of its side, and a cancelled run's unfinished conversations
// end `cancelled`, not `running`.
import t from 'tap';
import { Run, type RunSpec } from '../src/runs/run.js';
import { runView } from '../src/runs/views.js';
import type { AttemptReport } from '../src/suites/report/run-report.js';

const attempt = (n: number, status: AttemptReport['status']): AttemptReport => ({ attempt: n, status }) as AttemptReport;

function comparison(names: string[]): Run {
  const spec = { id: 'run-1', kind: 'comparison', createdAt: 0, access: { agentKey: 'coach.3' }, outline: { names, budget: 20 } };
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
  run.stopped(0, 'decided', 2);
  run.status = 'cancelled';
  const [a, b] = runView(run, 'pod-a').progress.conversations;
  t.match(a, { rounds: 2, sessions: 5, baseline: { attempts: 3, passed: 2 }, candidate: { attempts: 2, passed: 1 }, state: 'decided' });
  t.match(b, { rounds: 0, sessions: 1, baseline: { attempts: 0 }, candidate: { attempts: 0 }, state: 'cancelled' });
  t.equal(runView(run, 'pod-a').progress.decided, 1, 'a cancelled conversation is not decided');
});
