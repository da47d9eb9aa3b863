/**
 * The pod's places for engine sockets (src/conversations/admission.ts), alone: real
 * conversations, no stack. Which idle conversation makes room, when a new one is refused, and how
 * long a closing socket keeps its place.
 */

import t, { type Test } from 'tap';
import { Admission, type Limits } from '../src/conversations/admission.js';
import { Conversation, type IdlePolicy } from '../src/conversations/conversation.js';
import type { EvictionLimit } from '../src/domain/vocabulary.js';
import type { EngineSocket } from '../src/engine/socket.js';
import { GatewayError } from '../src/errors.js';

const settings = { deviceRef: 'mcp:alice', locale: 'en-US', timeZone: null, runLabel: null, timeOffset: null };
const idle: IdlePolicy = { afterMs: 60_000, close: () => undefined };
const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

/** An interactive conversation of the caller's, before it asks for a place. */
const newcomer = (callerId: string): Conversation => new Conversation({ callerId, agentKey: 'coach', settings });

function setUp(t: Test, limits: Partial<Limits> = {}) {
  const evicted: Array<[Conversation, EvictionLimit]> = [];
  let freed = 0;
  const admission = new Admission(
    {
      maxConversationsPerCaller: 2,
      maxConversationsPerPod: 3,
      maxRunConversationsPerPod: 2,
      maxRunConversationsPerCaller: 2,
      engineConnectTimeoutMs: 1_000,
      ...limits,
    },
    (conv, limit) => {
      evicted.push([conv, limit]);
      admission.leave(conv);
    },
    () => (freed += 1),
  );
  const made: Conversation[] = [];
  t.teardown(() => made.forEach((conv) => conv.state !== 'closed' && conv.moveTo('closed', idle)));
  /** A conversation that made room, entered, and is now busy or idle. */
  const open = async (callerId: string, state: 'busy' | 'idle'): Promise<Conversation> => {
    const conv = newcomer(callerId);
    admission.makeRoom(conv);
    made.push(conv);
    admission.enter(conv);
    conv.moveTo('busy', idle);
    if (state === 'idle') conv.moveTo('idle', idle);
    await tick(); // the next one is used later
    return conv;
  };
  return { admission, evicted, open, freed: () => freed };
}

/** An engine socket that ends when told (or when terminated). */
function closingSocket() {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  let terminated = false;
  const socket = {
    whenEnded: () => ended,
    terminate: () => {
      terminated = true;
      end();
    },
  } as unknown as EngineSocket;
  return { socket, end, terminated: () => terminated };
}

const codeOf = (fn: () => void): string | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof GatewayError ? err.code : String(err);
  }
  return undefined;
};

t.test("a caller at its limit: its least recently used idle conversation makes room, the others' stay", async (t) => {
  const { admission, evicted, open } = setUp(t);
  const older = await open('alice', 'idle');
  const newer = await open('alice', 'idle');
  const bobs = await open('bob', 'idle');
  admission.makeRoom(newcomer('alice'));
  t.same(
    evicted.map(([conv, limit]) => [conv === older, limit]),
    [[true, 'caller']],
    'alice’s older idle conversation, for the caller limit',
  );
  t.same(admission.conversations(), [newer, bobs]);
});

t.test('a caller whose conversations are all busy is refused, and nothing is evicted', async (t) => {
  const { admission, evicted, open } = setUp(t);
  await open('alice', 'busy');
  await open('alice', 'busy');
  t.equal(
    codeOf(() => admission.makeRoom(newcomer('alice'))),
    'caller_conversation_limit',
  );
  t.same(evicted, []);
  t.equal(
    codeOf(() => admission.makeRoom(newcomer('bob'))),
    undefined,
    'another caller still has room',
  );
});

t.test('a full pod: the least recently used idle conversation of anyone makes room; all busy is refused', async (t) => {
  const { admission, evicted, open } = setUp(t);
  await open('alice', 'busy');
  const carols = await open('carol', 'idle');
  await open('bob', 'busy');
  admission.makeRoom(newcomer('dave'));
  t.same(
    evicted.map(([conv, limit]) => [conv === carols, limit]),
    [[true, 'pod']],
  );
  await open('dave', 'busy');
  t.equal(admission.size, 3);
  t.equal(
    codeOf(() => admission.makeRoom(newcomer('erin'))),
    'pod_conversation_limit',
  );
});

t.test('a closing socket keeps its place until it has ended', async (t) => {
  const { admission, open, freed } = setUp(t, { maxConversationsPerCaller: 1 });
  const first = await open('alice', 'idle');
  const closing = closingSocket();
  admission.leave(first, closing.socket);
  first.moveTo('closed', idle);
  const next = await open('alice', 'busy');
  let admitted = false;
  const waiting = admission.roomForSocket(next).then(() => (admitted = true));
  await tick();
  t.equal(admitted, false, 'the new socket waits for the closing one');
  closing.end();
  await waiting;
  t.equal(admitted, true, 'and opens once it has ended');
  t.equal(freed(), 1, 'the admission was told a place came free');
  t.equal(closing.terminated(), false, 'nothing was cut short');
});

t.test('a closing socket that outlasts the connect timeout is ended', async (t) => {
  const { admission, open } = setUp(t, { maxConversationsPerCaller: 1, engineConnectTimeoutMs: 30 });
  const first = await open('alice', 'idle');
  const closing = closingSocket();
  admission.leave(first, closing.socket);
  first.moveTo('closed', idle);
  const next = await open('alice', 'busy');
  const started = Date.now();
  await admission.roomForSocket(next);
  t.equal(closing.terminated(), true, 'terminated');
  t.ok(Date.now() - started >= 25, 'after the connect timeout');
});

t.test('room for a socket is immediate when nothing is closing', async (t) => {
  const { admission, open } = setUp(t);
  const conv = await open('alice', 'busy');
  const started = Date.now();
  await admission.roomForSocket(conv);
  t.ok(Date.now() - started < 20);
});
