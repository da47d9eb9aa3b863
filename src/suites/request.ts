import type { AgentRef } from '../domain/vocabulary.js';
import { GatewayError } from '../errors.js';
import type { Metrics, RunResult } from '../ops/metrics.js';
import { parseHttpSuite, type HttpMemory, type Suite } from './format.js';
import type { RunReport } from './report.js';

/**
 * A suite sent to be run (the runs route's body, the run_suite tool's suite) checked against the
 * agent the call names: every problem a 400 naming its field, before anything reaches the engine.
 * `agent` undefined: the suite's own `agent` field names it.
 */
export function suiteToRun(body: unknown, agent: AgentRef | undefined): { suite: Suite<HttpMemory>; agent: AgentRef } {
  const parsed = parseHttpSuite(body);
  if (!parsed.ok) {
    const first = parsed.problems[0]!;
    throw new GatewayError('invalid_request', `${first.rule}; nothing was sent to the engine`, {
      // The whole suite is the request's body, as the other routes name it.
      problems: parsed.problems.map(({ field, rule }) => ({ field: field === 'the suite' ? 'body' : field, rule })),
    });
  }
  const suite = parsed.suite;
  if (agent === undefined) {
    if (suite.agent === undefined) {
      const rule = 'agent is required: name the agent in the suite or in the call';
      throw new GatewayError('invalid_request', `${rule}; nothing was sent to the engine`, { problems: [{ field: 'agent', rule }] });
    }
    return { suite, agent: suite.agent };
  }
  if (suite.agent !== undefined && suite.agent.key !== agent.key) {
    const rule = `agent must be ${agent.key}, the agent in the path, or be left out`;
    throw new GatewayError('invalid_request', `${rule}; nothing was sent to the engine`, { problems: [{ field: 'agent', rule }] });
  }
  return { suite, agent };
}

/** Every run that started counts once, whichever front ran it: passed, failed, cancelled, or error. */
export async function countRun(metrics: Metrics, signal: AbortSignal, run: () => Promise<RunReport>): Promise<RunReport> {
  let result: RunResult = 'error';
  try {
    const report = await run();
    result = signal.aborted ? 'cancelled' : report.passed ? 'passed' : 'failed';
    return report;
  } finally {
    metrics.suiteRuns.inc({ result });
  }
}
