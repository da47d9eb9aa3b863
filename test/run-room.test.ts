// A run's conversations open an engine session only while the pod holds the run: the room is asked
// right before the socket opens (after any wait for room), for a start, a reconnect and a warm-up,
// so that a pod resumed after a pause opens nothing for a run a sibling may have taken over.
import t from 'tap';
import { callContext } from '../src/conversations/calls.js';
import type { AgentAccess } from '../src/domain/vocabulary.js';
import { RunHalted } from '../src/suites/run/journal.js';
import { RunRoom } from '../src/suites/run/room.js';
import { startStack } from './support/stack.js';

const access: AgentAccess = { agentKey: 'coach', revision: 1, revisionState: 'Published', projectId: 'p', signIn: false };

t.test("a run's room refuses every engine session once the pod no longer holds the run", async (t) => {
  const s = await startStack(t);
  let holds = true;
  const room = new RunRoom(2, undefined, () => holds);
  const service = s.app.conversationService;
  const call = (line: string) => ({
    ...callContext({ id: 'user-1', token: 'demo-token' }, { ref: 'coach', key: 'coach', revision: null }),
    access,
    connect: {},
    line,
    run: room,
  });

  const first = await service.start(call('hello'));
  t.equal(s.engine.record.connections.length, 1, 'held: the start opened its session');
  // The engine drops the socket: the next line would reconnect to the same engine session.
  const dropped = await service.turn({ ...call('sim:drop'), sessionId: first.session_id });
  t.equal(dropped.conversation.connection, 'closed');

  holds = false;
  const halted = (opening: Promise<unknown>) =>
    opening.then(
      () => 'opened',
      (err: unknown) => (err instanceof RunHalted ? 'halted' : String(err)),
    );
  t.equal(await halted(service.turn({ ...call('again'), sessionId: first.session_id })), 'halted', 'a reconnect is refused');
  t.equal(await halted(service.start(call('hello'))), 'halted', 'a start is refused');
  t.equal(await halted(service.warmUp(call('').caller, access, {}, room)), 'halted', 'a warm-up is refused');
  t.equal(s.engine.record.connections.length, 1, 'no engine session opened after the lease lapsed');
  t.equal(s.app.conversationRegistry.stats.open, 0, 'the refused conversations took no place');

  holds = true;
  const reconnected = await service.turn({ ...call('again'), sessionId: first.session_id });
  t.equal(reconnected.session_id, first.session_id, 'held again: the reconnect goes through');
  t.equal(s.engine.record.connections.length, 2);
});
