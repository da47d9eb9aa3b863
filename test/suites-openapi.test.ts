/**
 * openapi.yaml describes what the runs route really answers: every answer validates against the schema declared for its status
 * and content type, and the request schema agrees with the service on what a suite is.
 */

import t, { type Test } from 'tap';
import { request } from 'undici';
import { startStack } from './support/stack.js';
import { runPath, type Answer, type Json } from './support/http.js';
import { doc, resolveRef, validatorAt } from './support/openapi.js';
import { scaled } from './support/time.js';

const ROUTE = '/v1/agents/{agent}/runs';
const op = doc.paths[ROUTE].post;
const resolve = (node: Json): Json => resolveRef(node).node;

const requestSchema = validatorAt('/components/schemas/RunRequest');
const reportSchema = validatorAt('/components/schemas/RunReport');
const streamLineSchema = validatorAt('/components/schemas/RunStreamLine');
const errorSchema = validatorAt('/components/schemas/Error');

function conforms(tt: Test, answer: Answer, what: string): void {
  const declared = resolve(op.responses[String(answer.status)]);
  tt.ok(declared !== undefined, `${what}: status ${answer.status} is declared`);
  if (declared === undefined) return;
  if (answer.status >= 400) {
    tt.ok(errorSchema(answer.body), `${what}: an Error`, { errors: errorSchema.errors });
    tt.ok(String(declared.description).includes(`\`${answer.body.error}\``), `${what}: the description names \`${answer.body.error}\``);
    return;
  }
  tt.ok(reportSchema(answer.body), `${what}: a RunReport`, { errors: reportSchema.errors });
}

t.test('the request schema agrees with the service', async (t) => {
  for (const [name, example] of Object.entries<Json>(op.requestBody.content['application/json'].examples)) {
    t.ok(requestSchema(example.value), `example ${name} is a RunRequest`, { errors: requestSchema.errors });
  }
  const s = await startStack(t, { model: true });
  const ok = { conversations: [{ turns: [{ line: '#intro' }] }] };
  const user = { persona: 'p', goal: 'Find out when my order will be delivered.', facts: { order_number: '12345' } };
  const checks = { tools: 'lookup_order', not_tools: ['x'], ended_by_agent: false, criteria: ['a', { id: 'b', text: 'c' }] };
  /** A suite with repeats, a judged turn and a simulated user, whose conversation has the checks `expect`. */
  const everything = (expect: Json) => ({
    repeat: 2,
    pass_rate: 0.5,
    seed: 3,
    conversations: [
      {
        turns: [{ line: '#intro', expect: { judge: 'The agent said "help"', not_tool: 'x' } }],
        simulated_user: { ...user, max_turns: 3, min_turns: 1, model: 'm', temperature: 0.2 },
        expect,
      },
    ],
  });
  const cases: Array<[unknown, boolean]> = [
    [ok, true],
    [
      {
        ...ok,
        agent: 'coach',
        name: 'x',
        description: 'y',
        locale: 'de_DE',
        device_ref: 'a',
        time_zone: null,
        run_label: 'r',
        time_offset: '-P1D',
      },
      true,
    ],
    [
      {
        conversations: [
          {
            name: 'n',
            device_ref: 'b',
            wait_ms: 5,
            turns: [
              {
                line: 'hi',
                expect: {
                  text_contains: ['a'],
                  tool: 't',
                  shown: 's',
                  not_shown: 'n',
                  ended_by_agent: true,
                  exit_within_ms: 5,
                  text_matches: '/x/i',
                },
              },
            ],
          },
        ],
      },
      true,
    ],
    [{ conversations: [{ turns: [{ line: 'hi', expect: null }] }] }, true],
    [everything({ ...checks, shown: [] }), false],
    [everything(checks), true],
    [{ conversations: [{ simulated_user: user }] }, true],
    [{ conversations: [{ name: 'neither' }] }, false],
    [{ conversations: [{ simulated_user: { ...user, api_key: 'k' } }] }, false],
    [{ conversations: [{ simulated_user: { ...user, max_turns: 0 } }] }, false],
    [{ repeat: 0, ...ok }, false],
    [{ pass_rate: -0.1, ...ok }, false],
    [{ device_ref: 'a', memory: { save: true, wait_ms: 0 }, ...ok }, true],
    [{}, false],
    [{ conversations: [] }, false],
    [{ ...ok, bogus: 1 }, false],
    [{ conversations: [{ turns: [{ line: '#exit' }] }] }, false],
    [{ conversations: [{ turns: [{ line: 'hi', expect: { tool: 1 } }] }] }, false],
    [{ conversations: [{ turns: [{ line: 'hi', expect: { text_contains: [] } }] }] }, false],
    [{ conversations: [{ run_label: 'x', turns: [{ line: 'hi' }] }] }, false],
    [{ device_ref: 'a', memory: { wait_ms: 5 }, ...ok }, false],
    [{ device_ref: 'a', memory: { restore: { units: [] } }, ...ok }, false],
    [{ time_offset: 'P1D', ...ok }, false],
  ];
  for (const [body, valid] of cases) {
    const schemaSays = requestSchema(body);
    t.equal(schemaSays, valid, `the schema ${valid ? 'accepts' : 'refuses'} ${JSON.stringify(body).slice(0, 100)}`);
    const answer = await s.call('POST', runPath(), { body });
    t.equal(answer.status === 200, valid, `the service ${valid ? 'runs' : 'refuses'} it (${answer.status})`);
    conforms(t, answer, `POST runs ${JSON.stringify(body).slice(0, 60)}`);
  }
});

t.test('every answer conforms to its declared schema', async (t) => {
  const s = await startStack(t, { env: { TURN_BUDGET_MS: String(scaled(300)) } });
  const call = (body: unknown, token?: string, agent = 'coach') => s.call('POST', runPath(agent), { body, ...(token ? { token } : {}) });

  conforms(
    t,
    await call({
      name: 'everything',
      device_ref: 'zoe',
      memory: { restore: { units: [{ kind: 'fact', text: 'x' }] }, confirm: true, save: true },
      conversations: [
        {
          name: 'ok',
          turns: [
            { line: '#intro', expect: { text_matches: 'Hi' } },
            { line: 'Where is my order?', expect: { tool: 'lookup_order', shown: 'x' } },
          ],
        },
        {
          name: 'hang',
          device_ref: 'yan',
          turns: [
            { line: 'sim:hang', expect: { text_contains: 'x' } },
            { line: 'skipped', expect: { tool: 'y' } },
          ],
        },
        { name: 'early', device_ref: 'xia', turns: [{ line: 'bye' }, { line: 'more' }] },
      ],
    }),
    'a run with passes, failures, a timeout, skips and memory',
  );
  s.engine.faults.handshake = 503;
  conforms(t, await call({ conversations: [{ turns: [{ line: 'hi' }] }] }), 'a run whose turn could not run');
  s.engine.faults.handshake = undefined;

  conforms(
    t,
    await call({ device_ref: 'a', memory: { restore: { units: [] } }, conversations: [{ turns: [{ line: 'hi' }] }] }),
    'confirmation_required',
  );
  conforms(t, await call({ conversations: 'no' }), 'invalid_request');
  conforms(t, await call({ conversations: [{ turns: [{ line: 'hi' }] }] }, 'outsider-token'), 'forbidden');
  conforms(t, await call({ conversations: [{ turns: [{ line: 'hi' }] }] }, undefined, 'draft-only'), 'no_published_revision');
  conforms(t, await call({ conversations: [{ turns: [{ line: 'hi' }] }] }, undefined, 'nobody'), 'agent_not_found');
  conforms(t, await s.call('POST', '/v1/agents/coach/runs', { body: { conversations: [] }, token: null }), 'unauthenticated');

  const res = await request(`${s.url}/v1/agents/coach/runs`, {
    method: 'POST',
    headers: { accept: 'application/x-ndjson', 'content-type': 'application/json', authorization: 'Bearer demo-token' },
    body: JSON.stringify({
      conversations: [{ turns: [{ line: '#intro' }, { line: 'sim:hang' }, { line: 'x' }] }, { turns: [{ line: 'hi' }] }],
    }),
  });
  t.equal(res.statusCode, 200);
  t.ok(op.responses['200'].content['application/x-ndjson'], 'NDJSON is declared');
  const lines = (await res.body.text())
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(lines.length, 6, 'the run line, four turns, the report');
  for (const [i, line] of lines.entries())
    t.ok(streamLineSchema(line), `NDJSON line ${i + 1} is a RunStreamLine`, { errors: streamLineSchema.errors });
});

t.test('comparisons: the request schema and every answer agree with the document', async (t) => {
  const compareOp = doc.paths['/v1/agents/{agent}/comparisons'].post;
  const comparisonRequest = validatorAt('/components/schemas/ComparisonRequest');
  const comparisonReport = validatorAt('/components/schemas/ComparisonReport');
  const comparisonLine = validatorAt('/components/schemas/ComparisonStreamLine');
  for (const [name, example] of Object.entries<Json>(compareOp.requestBody.content['application/json'].examples)) {
    t.ok(comparisonRequest(example.value), `example ${name} is a ComparisonRequest`, { errors: comparisonRequest.errors });
  }
  const s = await startStack(t, { model: true });
  const suite = {
    repeat: 2,
    conversations: [
      { name: 'order', turns: [{ line: '#intro' }, { line: 'My order number is 12345', expect: { tool: 'lookup_order' } }] },
      { name: 'refund', turns: [{ line: 'I want a refund', expect: { tool: 'start_refund', judge: 'The agent said "refund"' } }] },
      { name: 'hang', turns: [{ line: 'sim:hang' }] },
    ],
  };
  const cases: Array<[unknown, number]> = [
    [{ baseline: 'coach', ...suite }, 200],
    [suite, 400],
    [{ baseline: 'coach', ...suite, bogus: 1 }, 400],
    [{ baseline: 'hidden', ...suite }, 403],
    [{ baseline: 'coach.9', ...suite }, 404],
  ];
  for (const [body, status] of cases) {
    t.equal(
      comparisonRequest(body),
      status !== 400,
      `the schema ${status === 400 ? 'refuses' : 'accepts'} ${JSON.stringify(body).slice(0, 60)}`,
    );
    const answer = await s.call('POST', '/v1/agents/coach.3/comparisons', { body });
    t.equal(answer.status, status, answer.text.slice(0, 200));
    const declared = resolve(compareOp.responses[String(answer.status)]);
    t.ok(declared !== undefined, `status ${answer.status} is declared`);
    if (status === 200) t.ok(comparisonReport(answer.body), 'a ComparisonReport', { errors: comparisonReport.errors });
    else {
      const { error } = answer.body;
      t.ok(errorSchema(answer.body) && String(declared.description).includes(`\`${error}\``), `${error} is declared`);
    }
  }
  const streamed = await s.call('POST', '/v1/agents/coach.3/comparisons', {
    body: { baseline: 'coach', conversations: [suite.conversations[0]] },
    headers: { accept: 'application/x-ndjson' },
  });
  const lines = streamed.text.trim().split('\n');
  t.ok(lines.length > 2);
  for (const line of lines) t.ok(comparisonLine(JSON.parse(line)), 'a ComparisonStreamLine', { errors: comparisonLine.errors });
});
