/**
 * One attempt of one conversation (src/suites/run/attempt.ts), alone: no gateway, no engine. The
 * conversation service is a fake answering turns in the API's shape, the model a fake answering
 * the simulated user's lines and the judge's rulings; what is checked is the attempt's report —
 * its stop_reason, the turns skipped after one that failed, and an attempt that becomes an error.
 */

import t from 'tap';
import type { ConversationService } from '../src/conversations/service.js';
import type { TurnResultView } from '../src/conversations/views.js';
import { GatewayError } from '../src/errors.js';
import { ModelFailure, type ModelClient, type ModelRequest, type Usage } from '../src/model/client.js';
import type { AttemptReport } from '../src/suites/report/run-report.js';
import { runAttempt } from '../src/suites/run/attempt.js';
import type { RunContext } from '../src/suites/run/context.js';
import { RunRoom } from '../src/suites/run/room.js';
import type { RunState } from '../src/suites/run/run-state.js';
import { parseHttpSuite } from '../src/suites/spec/schema.js';

type Outcome = TurnResultView['turn']['outcome'];

/** What the fake engine does with a line: its reply, its outcome, whether the agent ends there. */
interface Reply {
  text?: string;
  outcome?: Outcome;
  endsConversation?: boolean;
  /** thrown instead of answering (the gateway could not run the turn) */
  throws?: Error;
  /** the run is cancelled while this turn runs (the turn then ends as the service ends it, or throws) */
  cancels?: AbortController;
}

/** A turn's result as the service answers it, for session `session`. */
function answer(session: string, line: string, turns: number, reply: Reply): TurnResultView {
  const outcome = reply.outcome ?? 'exit';
  const closed = outcome !== 'exit' || reply.endsConversation === true;
  return {
    session_id: session,
    agent: 'agent:coach',
    turn: { line, outcome, elements: [], text: reply.text ?? `you said ${line}`, tools: [], shown: [], duration_ms: 5 },
    conversation: {
      device_ref: 'device-1',
      locale: 'en',
      time_zone: null,
      time_offset: null,
      turns,
      connection: closed ? 'closed' : 'open',
      ended_by_agent: reply.endsConversation === true,
      reconnected: false,
      planning_lost: false,
    },
    notes: [],
  } as unknown as TurnResultView;
}

/** The conversation service's methods the attempt calls, answering `replies` in order; what it was asked. */
function fakeService(replies: Record<string, Reply> = {}) {
  const calls: string[] = [];
  let turns = 0;
  const reply = (line: string): TurnResultView => {
    const r = replies[line] ?? {};
    r.cancels?.abort('the test cancelled it');
    if (r.throws) throw r.throws;
    turns += 1;
    return answer('session-1', line, turns, r);
  };
  const service = {
    start: (call: { line: string }) => {
      calls.push(`start ${call.line}`);
      return Promise.resolve().then(() => reply(call.line));
    },
    turn: (call: { line: string; sessionId: string }) => {
      calls.push(`turn ${call.sessionId} ${call.line}`);
      return Promise.resolve().then(() => reply(call.line));
    },
    close: (call: { sessionId: string }) => {
      calls.push(`close ${call.sessionId}`);
      return Promise.resolve('');
    },
    whenRoom: () => Promise.resolve(),
    warmUp: () => Promise.resolve(),
  };
  return { service: service as unknown as ConversationService, calls };
}

/** A raw answer checked as the real client checks it: a check that fails is the model failing. */
function checked<T>(req: ModelRequest<T>, raw: unknown): Promise<{ value: T; usage: Usage }> {
  const value = req.check(raw);
  if (typeof value === 'string') return Promise.reject(new ModelFailure('invalid_answer', value, USAGE));
  return Promise.resolve({ value, usage: USAGE });
}

const USAGE: Usage = { calls: 1, prompt_tokens: 10, completion_tokens: 5, duration_ms: 1 };

/** A model answering the simulated user's lines in order (then done), and the judge on every criterion asked. */
function fakeModel(opts: { lines?: Array<{ line: string; done?: boolean }>; judge?: 'passed' | 'failed' | 'fails' } = {}): ModelClient {
  const lines = [...(opts.lines ?? [])];
  return {
    ask<T>(req: ModelRequest<T>) {
      if (req.role === 'judge') {
        if (opts.judge === 'fails') return Promise.reject(new ModelFailure('http_error', 'the model answered 500', USAGE));
        const ids = new Set([...JSON.stringify(req.messages).matchAll(/criterion_\d+/g)].map((m) => m[0]));
        return checked(req, { criteria: [...ids].map((id) => ({ id, verdict: opts.judge ?? 'passed', reasoning: 'as seen' })) });
      }
      const next = lines.shift() ?? { line: '', done: true };
      return checked(req, { line: next.line, done: next.done ?? false });
    },
    close: () => Promise.resolve(),
  };
}

/** Runs attempt 1 of the suite's first conversation against the fakes. */
async function attempt(suite: Record<string, unknown>, service: ConversationService, model?: ModelClient): Promise<AttemptReport> {
  const report = await attemptUnder(new AbortController().signal, suite, service, model);
  if (report === null) throw new Error('the attempt never started');
  return report;
}

/** Attempt 1 of the suite's first conversation under the run's `signal`: null when the cancel came before it started. */
async function attemptUnder(
  signal: AbortSignal,
  suite: Record<string, unknown>,
  service: ConversationService,
  model?: ModelClient,
): Promise<AttemptReport | null> {
  const parsed = parseHttpSuite({ agent: 'coach', ...suite });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  const ctx = {
    conversationService: service,
    config: { turnBudgetMs: 1000 },
    model,
    caller: { id: 'user-1', token: 'token' },
    agent: { key: 'coach', revision: undefined },
    access: {},
    signal,
    room: new RunRoom(1),
  } as unknown as RunContext;
  const state: RunState = {
    runId: 'run-1',
    runLabel: 'label',
    seed: 7,
    startedAt: Date.now(),
    suite: parsed.suite,
    groups: [[0]],
    memory: null,
    notes: [],
  };
  return runAttempt(ctx, state, 0, 1);
}

const scripted = (...lines: string[]) => ({ conversations: [{ turns: lines.map((line) => ({ line })) }] });

t.test('a script that runs to its end: script_end, every turn sent, the conversation closed plainly', async (t) => {
  const { service, calls } = fakeService();
  const report = await attempt(scripted('hello', 'bye'), service);
  t.equal(report.stop_reason, 'script_end');
  t.equal(report.status, 'passed');
  t.same(calls, ['start hello', 'turn session-1 bye', 'close session-1']);
  t.same(
    report.turns.map((turn) => [turn.line, turn.status]),
    [
      ['hello', 'passed'],
      ['bye', 'passed'],
    ],
  );
});

t.test('the agent ends the conversation: agent_ended, the rest skipped and the conversation failed', async (t) => {
  const { service, calls } = fakeService({ hello: { endsConversation: true } });
  const report = await attempt(scripted('hello', 'one more', 'and another'), service);
  t.equal(report.stop_reason, 'agent_ended');
  t.equal(report.ended_by_agent, true);
  t.equal(report.status, 'failed');
  t.same(calls, ['start hello'], 'nothing more is sent, and a closed conversation is not closed again');
  t.same(
    report.turns.map((turn) => turn.skipped_reason ?? null),
    [null, 'the agent ended the conversation at turn 1', 'the agent ended the conversation at turn 1'],
  );
  t.match(report.turns[0]!.expectations, [{ passed: false }], 'ending before the script did fails the turn');
});

t.test('a turn that does not end with its own exit: turn_failed, the later turns skipped', async (t) => {
  const { service, calls } = fakeService({ second: { outcome: 'timeout' } });
  const report = await attempt(scripted('first', 'second', 'third'), service);
  t.equal(report.stop_reason, 'turn_failed');
  t.equal(report.status, 'failed');
  t.equal(report.error, null, 'a failed turn is a failure, not an error');
  t.same(calls, ['start first', 'turn session-1 second']);
  t.equal(report.turns[1]!.status, 'failed');
  t.equal(report.turns[2]!.skipped_reason, 'turn 2 did not end with its own exit (outcome timeout)');
});

t.test('a turn the gateway could not run: error, the rest skipped', async (t) => {
  const refused = new GatewayError('engine_unavailable', 'The engine did not answer.');
  const { service, calls } = fakeService({ second: { throws: refused } });
  const report = await attempt(scripted('first', 'second', 'third'), service);
  t.equal(report.stop_reason, 'error');
  t.equal(report.status, 'error');
  t.match(report.error, { error: 'engine_unavailable' });
  t.same(calls, ['start first', 'turn session-1 second', 'close session-1'], 'the conversation still open is closed');
  t.equal(report.turns[1]!.outcome, 'error');
  t.equal(report.turns[2]!.skipped_reason, 'turn 2 did not run (engine_unavailable)');
});

const withUser = (user: Record<string, unknown>, criteria?: string[]) => ({
  conversations: [
    {
      simulated_user: { persona: 'a shopper', goal: 'find the order', ...user },
      ...(criteria ? { expect: { criteria } } : {}),
    },
  ],
});

t.test('the simulated user is done: user_done, after the lines it said', async (t) => {
  const { service, calls } = fakeService();
  const model = fakeModel({ lines: [{ line: 'where is my order?' }, { line: '', done: true }] });
  const report = await attempt(withUser({ min_turns: 1 }), service, model);
  t.equal(report.stop_reason, 'user_done');
  t.equal(report.status, 'passed');
  t.same(calls, ['start #intro', 'turn session-1 where is my order?', 'close session-1']);
  t.same(
    report.turns.map((turn) => turn.source),
    ['script', 'simulated_user'],
  );
});

t.test('the simulated user out of lines: max_turns', async (t) => {
  const { service } = fakeService();
  const model = fakeModel({ lines: [{ line: 'one' }, { line: 'two' }, { line: 'three' }] });
  const report = await attempt(withUser({ max_turns: 2 }), service, model);
  t.equal(report.stop_reason, 'max_turns');
  t.same(
    report.turns.map((turn) => turn.line),
    ['#intro', 'one', 'two'],
  );
});

t.test('stop_reason is written once: the turn that failed wins over the user stopping after it', async (t) => {
  const { service } = fakeService({ bye: { outcome: 'engine_closed' } });
  const model = fakeModel({ lines: [{ line: 'bye' }, { line: '', done: true }] });
  const report = await attempt(withUser({ min_turns: 1 }), service, model);
  t.equal(report.stop_reason, 'turn_failed');
  t.equal(report.turns.length, 2, 'the user is not asked again after the failed turn');
});

t.test("the simulated user's # line is refused: an error naming the line, nothing sent", async (t) => {
  const { service, calls } = fakeService();
  const model = fakeModel({ lines: [{ line: '#exit' }] });
  const report = await attempt(withUser({}), service, model);
  t.equal(report.stop_reason, 'error');
  t.equal(report.status, 'error');
  t.equal(report.error?.error, 'model_failed');
  t.match(report.error?.message, /^The simulated user's line "#exit" was not sent: /);
  t.notOk(
    calls.some((call) => call.endsWith('#exit')),
    'the line never reached the conversation',
  );
});

t.test('a model that fails makes the attempt an error, not a failure', async (t) => {
  t.test('the simulated user', async (t) => {
    const { service } = fakeService();
    const failing: ModelClient = {
      ask: () => Promise.reject(new ModelFailure('http_error', 'the model answered 500', USAGE)),
      close: () => Promise.resolve(),
    };
    const report = await attempt(withUser({}), service, failing);
    t.equal(report.stop_reason, 'error');
    t.equal(report.status, 'error');
    t.match(report.error, { error: 'model_failed', message: /^The simulated user could not answer: the model answered 500/ });
  });

  t.test('the judge', async (t) => {
    const { service } = fakeService();
    const model = fakeModel({ lines: [{ line: 'hi' }, { line: '', done: true }], judge: 'fails' });
    const report = await attempt(withUser({ min_turns: 1 }, ['The agent is polite.']), service, model);
    t.equal(report.status, 'error');
    t.equal(report.stop_reason, 'user_done', 'the stop reason stays the one written where the attempt ended');
    t.match(report.error, { error: 'model_failed', message: /^The judge could not answer/ });
    t.same(
      report.criteria.map((c) => c.passed),
      [false],
      'the criterion is not judged',
    );
  });

  t.test('no model configured', async (t) => {
    const { service } = fakeService();
    const report = await attempt(withUser({}), service, undefined);
    t.match(report.error, { error: 'model_not_configured' });
    t.equal(report.stop_reason, 'error');
  });
});

t.test('a judge that rules: the criterion passes or fails the attempt', async (t) => {
  for (const verdict of ['passed', 'failed'] as const) {
    const { service } = fakeService();
    // The simulated user says something of its goal: its failure is not the user's.
    const model = fakeModel({ lines: [{ line: 'Where is my order?' }, { line: '', done: true }], judge: verdict });
    const report = await attempt(withUser({ min_turns: 1 }, ['The agent is polite.']), service, model);
    t.equal(report.status, verdict, `a ${verdict} ruling`);
    t.equal(report.error, null);
  }
});

t.test('a cancel before the attempt sent anything: not an attempt at all (no report, no session)', async (t) => {
  const { service, calls } = fakeService();
  const cancel = new AbortController();
  cancel.abort('the test cancelled it');
  t.equal(await attemptUnder(cancel.signal, scripted('hello', 'bye'), service), null);
  t.same(calls, [], 'nothing reached the conversation service');
});

t.test('a cancel that ends the first call before it was answered: not an attempt either', async (t) => {
  const cancel = new AbortController();
  const { service } = fakeService({ hello: { cancels: cancel, throws: new Error('the call was cancelled') } });
  t.equal(await attemptUnder(cancel.signal, scripted('hello', 'bye'), service), null);
});

t.test('a cancel mid-attempt: the attempt is cancelled (not failed), the rest skipped saying why', async (t) => {
  const cancel = new AbortController();
  const { service } = fakeService({ where: { cancels: cancel, outcome: 'cancelled' } });
  const report = await attemptUnder(cancel.signal, scripted('hello', 'where', 'bye'), service);
  t.ok(report);
  t.equal(report!.status, 'cancelled');
  t.equal(report!.stop_reason, 'cancelled');
  t.equal(report!.session_id, 'session-1');
  t.same(
    report!.turns.map((turn) => [turn.status, turn.skipped_reason]),
    [
      ['passed', null],
      ['failed', null],
      ['skipped', 'the run was cancelled'],
    ],
  );
});

t.test('a cancel after the attempt ended: it keeps its outcome', async (t) => {
  const cancel = new AbortController();
  const { service } = fakeService({ bye: { cancels: cancel } });
  const report = await attemptUnder(cancel.signal, scripted('hello', 'bye'), service);
  t.equal(report!.status, 'passed');
  t.equal(report!.stop_reason, 'script_end');
});
