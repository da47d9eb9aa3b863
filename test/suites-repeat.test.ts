import t from 'tap';
import type { RunReport } from '../src/suites/report/run-report.js';
import { startStack } from './support/stack.js';
import { runPath } from './support/http.js';

/**
 * Repeats: attempts per conversation on fresh engine sessions, a pass rate and a status
 * (passed, flaky, failed, error), a memory fixture restored before every attempt on its device.
 * `sim:flaky` makes the demo agent alternate: odd engine sessions answer "Yes", even ones "No".
 */
const flaky = { name: 'flaky', turns: [{ line: 'sim:flaky', expect: { text_contains: 'Yes' } }] };

t.test('an agent that alternates: flaky, passing or failing by pass_rate', async (t) => {
  const s = await startStack(t);
  const strict = await s.call('POST', runPath(), {
    body: { repeat: 4, conversations: [flaky, { name: 'steady', turns: [{ line: 'hi' }] }] },
  });
  t.equal(strict.status, 200, 'answers 200', { body: strict.body });
  const report = strict.body as RunReport;
  t.match(report, { repeat: 4, pass_rate: 1, passed: false });
  const [wobbly, steady] = report.conversations;
  t.match(wobbly, { status: 'flaky', passed: false, pass_rate: 0.5, required_pass_rate: 1, attempts_passed: 2, attempts_total: 4 });
  t.same(
    wobbly!.attempts.map((a) => a.attempt),
    [1, 2, 3, 4],
  );
  t.equal(new Set(wobbly!.attempts.map((a) => a.session_id)).size, 4, 'every attempt on a fresh engine session');
  t.match(steady, { status: 'passed', passed: true, pass_rate: 1 });
  t.same(report.totals.conversations, { total: 2, passed: 1, flaky: 1, failed: 0, error: 0, cancelled: 0 });
  t.same(report.totals.attempts, { total: 8, passed: 6, failed: 2, error: 0, invalid: 0, cancelled: 0 });
  t.equal(report.session_ids.length, 8);

  const lenient = await s.call('POST', runPath(), { body: { repeat: 4, pass_rate: 0.5, conversations: [flaky] } });
  t.match(lenient.body, { passed: true, conversations: [{ status: 'flaky', passed: true, pass_rate: 0.5 }] });
  const tougher = await s.call('POST', runPath(), { body: { repeat: 4, pass_rate: 0.75, conversations: [flaky] } });
  t.match(tougher.body, { passed: false, conversations: [{ status: 'flaky', passed: false }] });
  const never = await s.call('POST', runPath(), {
    body: { repeat: 2, conversations: [{ turns: [{ line: 'hi', expect: { tool: 'x' } }] }] },
  });
  t.match(never.body, { conversations: [{ status: 'failed', passed: false, pass_rate: 0 }] });
});

t.test('a memory fixture is restored before every attempt on its device; attempts of one user one after the other', async (t) => {
  const s = await startStack(t);
  const fixture = { units: [{ kind: 'fact', text: 'likes tea' }] };
  const answer = await s.call('POST', runPath(), {
    body: {
      device_ref: 'erin',
      repeat: 3,
      memory: { restore: fixture, confirm: true },
      conversations: [
        { name: 'visit', turns: [{ line: '#intro' }, { line: 'sim:remember:owns a cat' }] },
        { name: 'fresh', device_ref: 'other', turns: [{ line: 'hi' }] },
      ],
    },
  });
  t.equal(answer.status, 200, 'answers 200', { body: answer.body });
  const report = answer.body as RunReport;
  t.match(report.memory, { device_ref: 'mcp:erin', restored: 1, restores: 3, error: null });
  const restores = s.engine.record.memoryRequests.filter((r) => r.path === '/api/memory/restore');
  t.equal(restores.length, 3, 'one restore per attempt of the conversation on the fixture device');
  for (const r of restores) t.same(r.body, fixture, 'the same fixture every time');
  const visits = s.engine.record.connections.filter((c) => c.settings.deviceId === 'mcp:erin' && c.frames.length > 0);
  t.equal(visits.length, 3);
  const attempts = report.conversations[0]!.attempts;
  for (const [i, visit] of visits.entries()) {
    t.ok(visit.openedAt >= restores[i]!.at, `attempt ${i + 1} started after its restore`);
    if (i === 0) continue;
    const previousEnd = Date.parse(attempts[i - 1]!.started_at!) + attempts[i - 1]!.duration_ms;
    t.ok(restores[i]!.at >= previousEnd, `restore ${i + 1} came after attempt ${i} was done (closed)`);
  }
  t.equal(report.conversations[1]!.attempts.length, 3);
  t.equal(
    s.engine.record.memoryRequests.filter((r) => r.path === '/api/memory/restore' && JSON.stringify(r.query).includes('other')).length,
    0,
    'no restore for another device',
  );
});
