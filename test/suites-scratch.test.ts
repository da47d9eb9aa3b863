import t from 'tap';
import { startStack } from './support/stack.js';
t.test('smoke', async (t) => {
  const s = await startStack(t);
  const r = await s.call('POST', '/v1/agents/coach/runs', { body: {
    conversations: [
      { name: 'a', turns: [ { line: '#intro', expect: { text_matches: "^Hi, I'm coach" } }, { line: 'Where is my order?', expect: { tool: 'lookup_order', shown: 'size_chart' } }, { line: 'bye', expect: { ended_by_agent: true } } ] },
      { name: 'b', turns: [ { line: 'sim:hang' }, { line: 'x' } ] },
    ] } });
  console.log(r.status, JSON.stringify(r.body, null, 1));
  console.log(s.engine.record.connections.map(c => [c.query.runLabel, c.closeCode]));
});
