/**
 * The conversation service (src/conversations/service.ts), alone: over a fake registry and a fake
 * forwarder, where a call runs — here when this pod holds the conversation, on the sibling holding
 * it otherwise, here again when the sibling has gone — and the owner a sibling remembers, kept here.
 */

import t from 'tap';
import type { TurnCall } from '../src/conversations/calls.js';
import type { Forwarded, Forwarder, Sibling, Whereabouts } from '../src/conversations/forwarder.js';
import type { ConversationRegistry } from '../src/conversations/registry.js';
import type { Ownership } from '../src/conversations/conversation.js';
import { ConversationService } from '../src/conversations/service.js';
import type { TurnResultView } from '../src/conversations/views.js';

const SESSION = 'session-1';
const POD_B: Sibling = { address: 'http://10.0.0.2:8080' };
const POD_C: Sibling = { address: 'http://10.0.0.3:8080' };

const OWNER: Ownership = {
  sessionId: SESSION,
  callerId: 'user-1',
  agentKey: 'coach',
  settings: { deviceRef: 'device-1', locale: 'en', timeZone: null, runLabel: null, timeOffset: null },
  turns: 2,
  createdAt: 1,
};

/** A conversation as the registry's turn answers it, enough for the API's view. */
const conversation = (sessionId: string) => ({
  sessionId,
  agentKey: 'coach',
  settings: OWNER.settings,
  turns: 3,
  state: 'idle',
  endedByAgent: false,
});

/** The registry's methods the service calls: `held` the sessions it holds; what it was asked. */
function fakeRegistry(held: string[] = []) {
  const asked: string[] = [];
  const remembered: Ownership[] = [];
  const registry = {
    holds: (sessionId: string) => held.includes(sessionId),
    ownership: (sessionId: string) => {
      const owner = remembered.find((o) => o.sessionId === sessionId);
      return owner === undefined ? undefined : { held: false, closedHere: false, owner };
    },
    remember: (owner: Ownership) => {
      asked.push(`remember ${owner.sessionId}`);
      remembered.push(owner);
    },
    turn: (_caller: unknown, _access: unknown, sessionId: string) => {
      asked.push(`turn ${sessionId}`);
      return Promise.resolve({
        conversation: conversation(sessionId),
        record: { outcome: 'exit', elements: [], durationMs: 7 },
        reconnected: false,
        notes: ['ran here'],
      });
    },
  };
  return { registry: registry as unknown as ConversationRegistry, asked, remembered };
}

/** A forwarder whose siblings answer `where` for every lookup (or each lookup in turn); what it was asked. */
function fakeForwarder(where: Whereabouts | Whereabouts[], answers: Record<string, Forwarded<TurnResultView>> = {}) {
  const asked: string[] = [];
  const lookups = Array.isArray(where) ? [...where] : undefined;
  const forwarder: Forwarder = {
    locate: (sessionId, fresh) => {
      asked.push(`locate ${sessionId}${fresh ? ' fresh' : ''}`);
      return Promise.resolve(lookups === undefined ? (where as Whereabouts) : (lookups.shift() ?? {}));
    },
    turn: (sibling, call) => {
      asked.push(`turn ${call.sessionId} on ${sibling.address}`);
      return Promise.resolve(answers[sibling.address] ?? { ran: true, answer: ranOn(sibling, call.sessionId) });
    },
    get: () => Promise.reject(new Error('not asked in these tests')),
    close: () => Promise.reject(new Error('not asked in these tests')),
    conversationsOf: () => Promise.resolve([]),
  };
  return { forwarder, asked };
}

/** A sibling's answer to a forwarded turn, marked with where it ran. */
const ranOn = (sibling: Sibling, sessionId: string) =>
  ({ session_id: sessionId, notes: [`ran on ${sibling.address}`] }) as unknown as TurnResultView;

const turnCall = (over: Partial<TurnCall> = {}): TurnCall => ({
  caller: { id: 'user-1', token: 'token' },
  authorization: 'Bearer token',
  agent: { key: 'coach' } as never,
  sessionId: SESSION,
  access: {} as never,
  line: 'hello',
  connect: {},
  ...over,
});

t.test('a conversation held here runs here: no sibling is asked', async (t) => {
  const { registry, asked } = fakeRegistry([SESSION]);
  const { forwarder, asked: forwarded } = fakeForwarder({ holder: POD_B });
  const service = new ConversationService({ registry, forwarder });
  const result = await service.turn(turnCall());
  t.same(result.notes, ['ran here']);
  t.equal(result.turn.line, 'hello', 'answered in the API shape, with the line sent');
  t.equal(result.conversation.connection, 'open');
  t.same(asked, [`turn ${SESSION}`]);
  t.same(forwarded, [], 'the forwarder is not even asked where it is');
});

t.test('a conversation held by a sibling is forwarded there, and does not run here', async (t) => {
  const { registry, asked } = fakeRegistry();
  const { forwarder, asked: forwarded } = fakeForwarder({ holder: POD_B });
  const service = new ConversationService({ registry, forwarder });
  const result = await service.turn(turnCall());
  t.same(result.notes, [`ran on ${POD_B.address}`]);
  t.same(forwarded, [`locate ${SESSION}`, `turn ${SESSION} on ${POD_B.address}`]);
  t.same(asked, [], 'the registry runs nothing');
});

t.test('a call a sibling forwarded runs here, never forwarded again', async (t) => {
  const { registry, asked } = fakeRegistry();
  const { forwarder, asked: forwarded } = fakeForwarder({ holder: POD_B });
  const service = new ConversationService({ registry, forwarder });
  const result = await service.turn(turnCall({ forwarded: true }));
  t.same(result.notes, ['ran here']);
  t.same(forwarded, []);
  t.same(asked, [`turn ${SESSION}`]);
});

t.test('held nowhere, an owner a sibling remembers is kept here before the call runs here', async (t) => {
  const { registry, asked, remembered } = fakeRegistry();
  const { forwarder, asked: forwarded } = fakeForwarder({ owner: OWNER });
  const service = new ConversationService({ registry, forwarder });
  const result = await service.turn(turnCall());
  t.same(result.notes, ['ran here']);
  t.same(asked, [`remember ${SESSION}`, `turn ${SESSION}`], 'remembered first, then run here (a reconnect)');
  t.same(remembered, [OWNER]);
  t.same(forwarded, [`locate ${SESSION}`]);
});

t.test('an owner already known here is not overwritten by a sibling’s', async (t) => {
  const { registry, asked } = fakeRegistry();
  registry.remember(OWNER);
  asked.length = 0;
  const { forwarder } = fakeForwarder({ owner: { ...OWNER, callerId: 'someone-else' } });
  await new ConversationService({ registry, forwarder }).turn(turnCall());
  t.same(asked, [`turn ${SESSION}`], 'nothing more remembered');
});

t.test('a remembered holder that moved costs one fresh lookup, then the call goes to the new holder', async (t) => {
  const { registry, asked } = fakeRegistry();
  const { forwarder, asked: forwarded } = fakeForwarder([{ holder: POD_B, remembered: true }, { holder: POD_C }], {
    [POD_B.address]: { ran: false, why: 'moved' },
  });
  const result = await new ConversationService({ registry, forwarder }).turn(turnCall());
  t.same(result.notes, [`ran on ${POD_C.address}`]);
  t.same(forwarded, [
    `locate ${SESSION}`,
    `turn ${SESSION} on ${POD_B.address}`,
    `locate ${SESSION} fresh`,
    `turn ${SESSION} on ${POD_C.address}`,
  ]);
  t.same(asked, []);
});

t.test('a holder that is gone is not asked twice: the call runs here', async (t) => {
  const { registry, asked } = fakeRegistry();
  const { forwarder, asked: forwarded } = fakeForwarder(
    [
      { holder: POD_B, remembered: true },
      { holder: POD_B, remembered: true },
    ],
    { [POD_B.address]: { ran: false, why: 'gone' } },
  );
  const result = await new ConversationService({ registry, forwarder }).turn(turnCall());
  t.same(result.notes, ['ran here']);
  t.same(forwarded, [`locate ${SESSION}`, `turn ${SESSION} on ${POD_B.address}`, `locate ${SESSION} fresh`]);
  t.same(asked, [`turn ${SESSION}`]);
});

t.test('a holder found by asking that cannot take the call: run here, no second lookup', async (t) => {
  const { registry, asked } = fakeRegistry();
  const { forwarder, asked: forwarded } = fakeForwarder({ holder: POD_B }, { [POD_B.address]: { ran: false, why: 'gone' } });
  await new ConversationService({ registry, forwarder }).turn(turnCall());
  t.same(forwarded, [`locate ${SESSION}`, `turn ${SESSION} on ${POD_B.address}`]);
  t.same(asked, [`turn ${SESSION}`]);
});

t.test('without a forwarder, every call runs here', async (t) => {
  const { registry, asked } = fakeRegistry();
  const result = await new ConversationService({ registry }).turn(turnCall());
  t.same(result.notes, ['ran here']);
  t.same(asked, [`turn ${SESSION}`]);
});
