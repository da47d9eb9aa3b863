import type { AgentRef } from '../../domain/vocabulary.js';
import { GatewayError, invalidRequest } from '../../errors.js';
import { z } from 'zod';
import { needsModel, type HttpMemory, type Suite } from './format.js';
import { parseHttpSuite } from './schema.js';

/**
 * A suite sent to be run (the runs route's body, the run_suite tool's suite), checked: every
 * problem a 400 naming its field, before anything reaches the engine or a model. The agent the
 * call names runs it, whatever the suite's own `agent` says; `agent` undefined: the suite's names it.
 */
export function suiteToRun(
  body: unknown,
  agent: AgentRef | undefined,
  modelConfigured: boolean,
): { suite: Suite<HttpMemory>; agent: AgentRef } {
  const parsed = parseHttpSuite(body);
  if (!parsed.ok) {
    // The whole suite is the request's body, as the other routes name it.
    const [first, ...rest] = parsed.problems.map(({ field, rule }) => ({ field: field === 'the suite' ? 'body' : field, rule }));
    throw invalidRequest([first!, ...rest]);
  }
  const suite = parsed.suite;
  const needing = suite.conversations.find(needsModel);
  if (needing !== undefined && !modelConfigured) {
    throw new GatewayError(
      'model_not_configured',
      `The conversation "${needing.name}" needs a model (a simulated user or criteria for a judge), and this gateway has none: ` +
        `set MODEL_BASE_URL (and SIMULATOR_MODEL) on the gateway. Nothing was sent to the engine or a model.`,
      { variable: 'MODEL_BASE_URL' },
    );
  }
  // The call's agent wins over the suite's own: any suite runs against any revision (the report says so).
  if (agent !== undefined) return { suite, agent };
  if (suite.agent === undefined) {
    throw invalidRequest([{ field: 'agent', rule: 'agent is required: name the agent in the suite or in the call' }]);
  }
  return { suite, agent: suite.agent };
}

/** A monitor's name (`monitor` on a run, the CLI's `--monitor`): it becomes a label value of the monitors' series. */
export const monitorRule = (named = '') =>
  z
    .string({ error: `${named}must be a string` })
    .regex(/^[A-Za-z0-9._-]{1,64}$/, { error: `${named}must be 1 to 64 letters, digits, '.', '_' or '-'` });

/** The runs body's `monitor`, checked, and the suite without it. */
export function monitorOf(body: unknown): { monitor: string | undefined; suite: unknown } {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('monitor' in body)) return { monitor: undefined, suite: body };
  const { monitor, ...suite } = body as Record<string, unknown>;
  const parsed = monitorRule().safeParse(monitor);
  if (!parsed.success) throw invalidRequest([{ field: 'monitor', rule: `monitor ${parsed.error.issues[0]!.message}` }]);
  return { monitor: parsed.data, suite };
}
