import t from 'tap';
import { eventually, startStack, type Stack } from './support/stack.js';
import { conversationPath, memoryPath, turnPath } from './support/http.js';

/** One conversation of a simulated user that leaves facts behind, closed and aggregated. */
async function converse(s: Stack, device: string, facts: string[]): Promise<void> {
  const { sessionId } = await s.open('coach', { device_ref: device });
  for (const fact of facts) {
    await s.call('POST', turnPath(sessionId), { body: { line: `sim:remember:${fact}` } });
  }
  await s.call('DELETE', conversationPath(sessionId));
  await eventually(() => s.engine.record.endOfConversation.some((e) => e.sessionId === sessionId));
}

t.test('an empty snapshot says so and why', async (t) => {
  const s = await startStack(t, { engine: { sessionEndDelayMs: 60_000 } });
  await s.open('coach', { device_ref: 'alice' });
  const snap = await s.call('GET', memoryPath('alice'));
  t.equal(snap.status, 200);
  t.match(snap.body, { device_ref: 'mcp:alice', unit_count: 0, units: [] });
  t.match(snap.body.user_id, /^u-/);
  t.ok(!Number.isNaN(Date.parse(snap.body.taken_at)));
  t.match(snap.body.notes[0], /aggregated about 30 s after its connection closes/);
});

t.test('snapshot after aggregation, and a restore round trip', async (t) => {
  const s = await startStack(t);
  await converse(s, 'alice', ['likes tea', 'has a dog']);
  const first = await s.call('GET', memoryPath('alice'));
  t.equal(first.body.unit_count, 3, 'two facts and a summary');
  t.same(
    first.body.units.filter((u: { kind: string }) => u.kind === 'fact').map((u: { text: string }) => u.text),
    ['likes tea', 'has a dog'],
  );
  t.same(first.body.notes, []);

  await converse(s, 'mcp:alice', ['moved to Prague']);
  const later = await s.call('GET', memoryPath('alice'));
  t.equal(later.body.unit_count, 5, 'the later session added memory');

  const restore = await s.call('PUT', memoryPath('alice'), { body: { confirm: true, snapshot: first.body } });
  t.equal(restore.status, 200);
  t.match(restore.body, { device_ref: 'mcp:alice', restored: 3 });
  t.match(restore.body.notes[0], /clears the user's memory before loading/);
  const again = await s.call('GET', memoryPath('alice'));
  t.same(again.body.units, first.body.units, 'the snapshot is back, what came since is gone');
});

t.test("the memory is the simulated user's across agents: a restore through any agent you can view replaces it for all", async (t) => {
  const s = await startStack(t);
  await converse(s, 'carol', ['likes tea']);
  const units = [{ kind: 'fact', text: 'restored through secure' }];
  // secure is another agent, in another project the caller can view.
  const restore = await s.call('PUT', memoryPath('carol', 'secure'), { body: { confirm: true, snapshot: { units } } });
  t.equal(restore.status, 200);
  t.match(restore.body.notes[1], /the simulated user's across every agent: the agent named in the call only authorized it/);
  for (const agent of ['coach', 'preview-only', 'secure']) {
    t.same((await s.call('GET', memoryPath('carol', agent))).body.units, units, `${agent} sees the same memory`);
  }
});

t.test('restore is confirmation-gated and nothing is sent without it', async (t) => {
  const s = await startStack(t);
  await s.open('coach', { device_ref: 'bob' });
  s.engine.record.memoryRequests.length = 0;
  for (const body of [
    { snapshot: { units: [] } },
    { confirm: false, snapshot: { units: [] } },
    { confirm: 'yes', snapshot: { units: [] } },
  ]) {
    const answer = await s.call('PUT', memoryPath('bob'), { body });
    t.equal(answer.status, 400);
    t.equal(answer.body.error, 'confirmation_required');
    t.match(answer.body.message, /clears the user's memory before loading.*whatever the sessions since the snapshot left behind is gone/);
  }
  const badUnits = await s.call('PUT', memoryPath('bob'), { body: { confirm: true, snapshot: { units: 'x' } } });
  t.equal(badUnits.status, 400);
  t.match(badUnits.body.message, /snapshot\.units must be an array/);
  t.equal(s.engine.record.memoryRequests.length, 0, 'nothing reached the engine');
});

t.test('device refs are forced under mcp:', async (t) => {
  const s = await startStack(t);
  for (const device of ['alice', 'mcp:alice', 'client:bob']) await s.open('coach', { device_ref: device });
  s.engine.record.memoryRequests.length = 0;
  const cases: Array<[string, string]> = [
    ['alice', 'mcp:alice'],
    ['mcp:alice', 'mcp:alice'],
    ['client:bob', 'mcp:client:bob'],
  ];
  for (const [asked, resolved] of cases) {
    const snap = await s.call('GET', memoryPath(asked));
    t.equal(snap.status, 200, asked);
    t.equal(snap.body.device_ref, resolved);
  }
  const looked = s.engine.record.memoryRequests.filter((r) => r.path.startsWith('/api/devices/')).map((r) => decodeURIComponent(r.path));
  t.same(looked, ['/api/devices/mcp:alice/user', '/api/devices/mcp:alice/user', '/api/devices/mcp:client:bob/user']);
  t.ok(
    s.engine.devices.has('mcp:client:bob') && !s.engine.devices.has('client:bob'),
    "a ref written as another client's names a device of this gateway's",
  );
});

t.test('unknown devices, bad refs and callers without Viewer', async (t) => {
  const s = await startStack(t);
  const unknown = await s.call('GET', memoryPath('never-connected'));
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'device_not_found');
  t.match(unknown.body.message, /start a conversation with device_ref mcp:never-connected first/, 'the way out is named');
  const unknownPut = await s.call('PUT', memoryPath('never-connected'), { body: { confirm: true, snapshot: { units: [] } } });
  t.equal(unknownPut.status, 404);
  t.match(unknownPut.body, { error: 'device_not_found', message: /start a conversation with device_ref mcp:never-connected first/ });
  const bad = await s.call('GET', memoryPath('a b'));
  t.equal(bad.status, 400);
  t.match(bad.body.message, /device_ref may use only letters, digits and \. _ : @ -/);
  const denied = await s.call('GET', memoryPath('alice'), { token: 'outsider-token' });
  t.equal(denied.status, 403);
  const deniedPut = await s.call('PUT', memoryPath('alice', 'hidden'), { body: { confirm: true, snapshot: { units: [] } } });
  t.equal(deniedPut.status, 403);
  t.equal(s.engine.record.memoryRequests.filter((r) => r.path.includes('alice')).length, 0, 'nothing reached the engine');
});

t.test('restore bodies are bounded', async (t) => {
  const s = await startStack(t, { env: { MAX_BODY_BYTES: '2048' } });
  const units = Array.from({ length: 100 }, (_, i) => ({ kind: 'fact', text: `fact number ${i}` }));
  const big = await s.call('PUT', memoryPath('alice'), { body: { confirm: true, snapshot: { units } } });
  t.equal(big.status, 413);
  t.equal(big.body.error, 'body_too_large');
  t.match(big.body.message, /2048 bytes/);
});

t.test('engine failures on memory calls are 502 with the reason', async (t) => {
  const s = await startStack(t);
  await s.engine.close();
  const answer = await s.call('GET', memoryPath('alice'));
  t.equal(answer.status, 502);
  t.equal(answer.body.error, 'engine_unavailable');
  t.match(answer.body.message, /could not be reached/);
});
