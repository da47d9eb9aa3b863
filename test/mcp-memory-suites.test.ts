/**
 * Memory and suites over MCP: a snapshot, a restore only when confirmed (through elicitation when
 * the client offers it, else `confirm: true`), and a suite run with a failing expectation.
 */

import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { eventually, startStack, type Stack } from './support/stack.js';
import { mcpClient, textOf } from './support/mcp.js';
import { type Json } from './support/http.js';

const restores = (s: Stack) => s.engine.record.memoryRequests.filter((r) => r.path === '/api/memory/restore').length;

/** A client whose user answers every elicitation with `answer`; the questions asked are kept. */
async function askingClient(t: Parameters<typeof mcpClient>[0], s: Stack, answer: ElicitResult) {
  const client = await mcpClient(t, s, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return answer;
  });
  return { client, asked };
}

t.test('snapshot, then restore with and without confirmation', async (t) => {
  const s = await startStack(t);
  const plain = await mcpClient(t, s);
  const first: Json = await plain.callTool({
    name: 'test_agent',
    arguments: { agent: 'coach', device_ref: 'alice', line: 'sim:remember:likes tea' },
  });
  await plain.callTool({ name: 'end_conversation', arguments: { agent: 'coach', session_id: first.structuredContent.session_id } });
  await eventually(() => s.engine.record.endOfConversation.length === 1);

  const snapshot: Json = await plain.callTool({ name: 'snapshot_memory', arguments: { agent: 'coach', device_ref: 'alice' } });
  t.notOk(snapshot.isError, textOf(snapshot));
  t.equal(snapshot.structuredContent.device_ref, 'mcp:alice');
  t.match(snapshot.structuredContent.units, [{ kind: 'fact', text: 'likes tea' }, { kind: 'summary' }]);
  t.match(textOf(snapshot), /^2 memory unit\(s\) of mcp:alice/);
  const units = [{ kind: 'fact', text: 'likes coffee' }];

  await t.test('a client without elicitation: only with confirm: true', async (t) => {
    const refused: Json = await plain.callTool({
      name: 'restore_memory',
      arguments: { agent: 'coach', device_ref: 'alice', snapshot: { units } },
    });
    t.equal(refused.isError, true);
    t.match(textOf(refused), /^confirmation_required: This client cannot ask its user .* pass "confirm": true/);
    const unconfirmed: Json = await plain.callTool({
      name: 'restore_memory',
      arguments: { agent: 'coach', device_ref: 'alice', snapshot: { units }, confirm: false },
    });
    t.match(textOf(unconfirmed), /^confirmation_required:/);
    t.equal(restores(s), 0, 'nothing was sent to the engine');
    const done: Json = await plain.callTool({
      name: 'restore_memory',
      arguments: { agent: 'coach', device_ref: 'alice', snapshot: { units }, confirm: true },
    });
    t.equal(done.structuredContent.restored, 1);
    t.equal(restores(s), 1);
  });

  await t.test('a client with elicitation: its user decides, confirm: true does not replace that', async (t) => {
    for (const answer of [
      { action: 'decline' },
      { action: 'cancel' },
      { action: 'accept', content: { confirm: false } },
    ] as ElicitResult[]) {
      const { client, asked } = await askingClient(t, s, answer);
      const refused: Json = await client.callTool({
        name: 'restore_memory',
        arguments: { agent: 'coach', device_ref: 'alice', snapshot: { units }, confirm: true },
      });
      t.equal(refused.isError, true, `${answer.action} refuses`);
      t.match(textOf(refused), /^confirmation_required: The restore was not confirmed/);
      t.match(asked, [/^Restore the memory of mcp:alice from a snapshot of 1 unit\(s\)\? Restoring is the engine's own delete-then-write/]);
    }
    t.equal(restores(s), 1, 'no restore beyond the earlier one');

    const { client, asked } = await askingClient(t, s, { action: 'accept', content: { confirm: true } });
    const done: Json = await client.callTool({
      name: 'restore_memory',
      arguments: { agent: 'coach', device_ref: 'alice', snapshot: { units } },
    });
    t.notOk(done.isError, textOf(done));
    t.equal(done.structuredContent.restored, 1);
    t.equal(asked.length, 1);
    t.equal(restores(s), 2);
    t.same(s.engine.memory.get(s.engine.devices.get('mcp:alice')!), units);
  });

  await t.test("the caller must see the agent's project", async (t) => {
    const outsider = await mcpClient(t, s, { token: 'outsider-token' });
    const refused: Json = await outsider.callTool({ name: 'snapshot_memory', arguments: { agent: 'coach', device_ref: 'alice' } });
    t.match(textOf(refused), /^forbidden: You need Viewer, Editor or Owner/);
  });
});

t.test('run_suite: YAML text, a failing expectation, progress per turn', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const yaml = [
    'agent: coach',
    'name: order help',
    'conversations:',
    '  - name: order',
    '    turns:',
    '      - line: Where is my order?',
    '        expect: { tool: lookup_order, text_contains: order }',
    '      - line: Which size?',
    '        expect: { shown: gift_card }',
  ].join('\n');
  const progress: string[] = [];
  const result: Json = await client.callTool({ name: 'run_suite', arguments: { suite: yaml } }, undefined, {
    onprogress: (p) => progress.push(p.message ?? ''),
  });
  t.notOk(result.isError, textOf(result));
  const report = result.structuredContent;
  t.equal(report.passed, false);
  t.equal(report.agent, 'agent:coach');
  t.match(report.totals.expectations, { failed: 1 });
  t.same(progress, ['order turn 1: passed', 'order turn 2: failed']);
  t.match(textOf(result), /^✗ coach fails: order failed\norder help against agent:coach/, 'the answer first');
  t.match(textOf(result), /order, turn 2 \("Which size\?"\): shown failed/);
  t.equal(report.session_ids.length, 1);
  await eventually(() => s.engine.record.connections[0]?.closeCode !== undefined);
  t.equal(s.engine.record.connections[0]!.closeCode, 1000, 'closed plainly after the run');

  const json: Json = await client.callTool({
    name: 'run_suite',
    arguments: { agent: 'coach', suite: { conversations: [{ turns: [{ line: 'Hi', expect: { text_contains: 'Hi' } }] }] } },
  });
  t.equal(json.structuredContent.passed, true);

  // The call's agent runs the suite, whatever agent the suite names; the report names the revision that ran.
  const otherRevision: Json = await client.callTool({ name: 'run_suite', arguments: { agent: 'coach.3', suite: yaml } });
  t.same(otherRevision.structuredContent.revision, { ref: 'coach', revision: 3, state: 'Preview' });
  t.equal(otherRevision.structuredContent.agent, 'agent:coach.3');
  t.match(otherRevision.structuredContent.notes[0], /^The suite names coach; it ran against coach\.3, as the call asked\./);
  t.equal(s.engine.record.connections.at(-1)!.path.split('?')[0], '/socket/pipeline/agent:coach.3');
  const noAgent: Json = await client.callTool({
    name: 'run_suite',
    arguments: { suite: { conversations: [{ turns: [{ line: 'Hi' }] }] } },
  });
  t.match(textOf(noAgent), /^invalid_request: agent is required/);
  const badYaml: Json = await client.callTool({ name: 'run_suite', arguments: { suite: 'agent: [coach' } });
  t.match(textOf(badYaml), /^invalid_request: suite must be valid YAML or JSON/);
  const withRestore = (confirm: boolean) => ({
    agent: 'coach',
    device_ref: 'bob',
    memory: { restore: { units: [] }, confirm },
    conversations: [{ turns: [{ line: 'Hi' }] }],
  });
  const unconfirmed: Json = await client.callTool({ name: 'run_suite', arguments: { suite: withRestore(false) } });
  t.match(textOf(unconfirmed), /^invalid_request: memory.confirm /, "the suite's own confirmation rule");
  const { client: asking } = await askingClient(t, s, { action: 'decline' });
  const declined: Json = await asking.callTool({ name: 'run_suite', arguments: { suite: withRestore(true) } });
  t.match(textOf(declined), /^confirmation_required: The restore was not confirmed/, 'and the user asked, when the client can ask');
  t.equal(s.engine.record.connections.length, 3, 'no refused suite reached the engine');
});

t.test('run_suite with a simulated user and criteria; model_not_configured without a model', async (t) => {
  const s = await startStack(t, { model: true });
  const client = await mcpClient(t, s);
  const suite = {
    agent: 'coach',
    conversations: [
      {
        name: 'dana',
        simulated_user: { persona: 'Dana', goal: 'Find out when my order will be delivered.', facts: { order_number: '12345' } },
        expect: { criteria: ['The agent gave a delivery date', 'The agent said "refund"'] },
      },
    ],
  };
  const result: Json = await client.callTool({ name: 'run_suite', arguments: { suite } });
  t.notOk(result.isError, textOf(result));
  const attempt = result.structuredContent.conversations[0].attempts[0];
  t.match(attempt, { stop_reason: 'user_done', turns: [{ source: 'script' }, { source: 'simulated_user' }, { source: 'simulated_user' }] });
  t.match(textOf(result), /dana: ✗ criterion_2: The agent said "refund" — The agent never said "refund"/);
  t.match(textOf(result), /against agent:coach \(revision 2, Published\), seed \d+/);

  const bare = await startStack(t);
  const refused: Json = await (await mcpClient(t, bare)).callTool({ name: 'run_suite', arguments: { suite } });
  t.match(textOf(refused), /^model_not_configured: .*MODEL_BASE_URL/);
  t.equal(bare.engine.record.connections.length, 0);
});

t.test('cancelling a running run_suite cancels its turns like a hang-up', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const cancel = new AbortController();
  const call = client.callTool(
    { name: 'run_suite', arguments: { suite: { agent: 'coach', conversations: [{ turns: [{ line: 'sim:hang' }, { line: 'Hi' }] }] } } },
    undefined,
    { signal: cancel.signal },
  );
  await eventually(() => s.engine.record.connections[0]?.frames.includes('sim:hang') ?? false);
  cancel.abort('stop');
  await t.rejects(call);
  await eventually(() => s.engine.record.connections[0]!.closeCode !== undefined);
  t.equal(s.engine.record.connections[0]!.closeCode, 1000);
  t.same(s.engine.record.connections[0]!.frames, ['sim:hang'], 'no #exit, no later turn');
});

t.test('compare_revisions: is coach.3 safe to publish?', async (t) => {
  const s = await startStack(t);
  const client = await mcpClient(t, s);
  const suite = await readFile('examples/release-gate/coach.yaml', 'utf8');
  const progress: string[] = [];
  const result: Json = await client.callTool(
    { name: 'compare_revisions', arguments: { suite, baseline: 'coach', candidate: 'coach.3', max_attempts: 16 } },
    undefined,
    { onprogress: (p) => progress.push(p.message ?? '') },
  );
  t.notOk(result.isError, textOf(result));
  t.match(result.structuredContent, {
    regressed: true,
    repeat: 16,
    attempts: { mode: 'sequential', min_attempts: 5, max_attempts: 16 },
    baseline: { revision: { revision: 2, state: 'Published' } },
    candidate: { agent: 'agent:coach.3', revision: { revision: 3, state: 'Preview' } },
    totals: { regressed: 1, fixed: 1, unchanged: 1 },
  });
  t.match(textOf(result), /^✗ do not promote coach\.3: order status regressed\n/, 'the answer first, in words');
  t.match(textOf(result), /✗ order status · REGRESSED/);
  t.match(
    textOf(result),
    /: a drop this large would happen by chance [\d.]+ % of the time if nothing had changed; 0\.01 or less was needed/,
  );
  t.match(textOf(result), /pass\^k, k = 1…\d+ \(the chance that k attempts in a row all pass\): /);
  t.match(textOf(result), /tool lookup_order at turn 2 — baseline \d+\/\d+ \(tools called: lookup_order\), candidate 0\/\d+/);
  t.ok(progress.some((m) => m.startsWith('baseline: order status turn 2')) && progress.some((m) => m.startsWith('candidate: ')));

  const read: Json = await client.callTool({ name: 'get_run', arguments: { run_id: result.structuredContent.comparison_id } });
  t.match(
    textOf(read),
    /^✗ do not promote coach\.3: order status regressed\nrun \S+ \(comparison\) failed /,
    'get_run: the answer first too',
  );

  const sent = s.engine.record.connections.length;
  t.equal(sent, result.structuredContent.sessions.spent, 'one engine session per attempt, both sides counted');
  const hidden: Json = await client.callTool({ name: 'compare_revisions', arguments: { suite, baseline: 'hidden', candidate: 'coach.3' } });
  t.equal(hidden.isError, true);
  t.match(textOf(hidden), /^forbidden: /);
  t.equal(s.engine.record.connections.length, sent, 'the refused comparison sent nothing');
});
