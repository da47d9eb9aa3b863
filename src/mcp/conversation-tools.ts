import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { Conversation, ConversationList, TurnResult } from '../api/responses.js';
import type { TurnResultView } from '../conversations/views.js';
import type { Element } from '../engine/elements.js';
import { invalidRequest } from '../errors.js';
import { INTRO } from '../schemas/connect.js';
import { callContext } from '../conversations/calls.js';
import { agentSchema, sessionIdSchema, startBody } from '../schemas/requests.js';
import { callerOf, guarded, success, yesNo } from './results.js';
import { registerTool } from './tools.js';

/**
 * test_agent, end_conversation, list_conversations: the conversation routes as tools. They go
 * through the same `conversationService` as REST, so a conversation held on a sibling pod runs on
 * its socket there, and ownership is decided as for any call.
 */
const agentField = agentSchema.describe('The agent: its ref (e.g. coach, the Published revision) or ref.N for revision N (e.g. coach.3).');
const sessionField = sessionIdSchema.describe('The session_id a previous test_agent answered: continues that conversation.');

/** The start body's rules (line, the connect fields, no unknown field) with the agent and a session to continue. */
const testAgentInput = startBody.extend({
  agent: agentField,
  line: startBody.shape.line.describe(
    'What the simulated user says, one line. Default on a new conversation: #intro (the agent opens). Required with session_id.',
  ),
  session_id: sessionField.optional(),
});

const TEST_AGENT =
  `Say one line to a Promethist agent in a live test conversation and answer what the agent did: its speech, ` +
  `tool calls, shown elements, how the turn ended. Without session_id a new conversation starts (one real engine session, ` +
  `counting towards usage) with #intro unless a line is given; pass the answered session_id to continue it over the same ` +
  `engine socket (the engine keeps its planning). locale, device_ref (the simulated user, under mcp:), time_zone, run_label ` +
  `and time_offset (a negative ISO-8601 duration) are fixed when the conversation connects. A line may not start with # ` +
  `(engine actions such as #exit are never sent). With a progress token, progress notifications carry the agent's speech ` +
  `as it arrives.`;

export function registerConversationTools(server: McpServer, app: FastifyInstance): void {
  registerTool(
    server,
    app.log,
    'test_agent',
    {
      title: 'Test an agent: one turn of a live conversation',
      description: TEST_AGENT,
      inputSchema: testAgentInput,
      outputSchema: TurnResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (args, extra) =>
      guarded(app.log, async () => {
        const { agent, line, session_id, ...connect } = args;
        if (session_id !== undefined && line === undefined) {
          const rule = 'line is required to continue a conversation (with session_id)';
          throw invalidRequest([{ field: 'line', rule }]);
        }
        const caller = callerOf(extra);
        const access = await app.authorizer.authorize(caller, agent);
        const said = line ?? INTRO;
        const onElement = speechProgress(extra);
        const call = {
          ...callContext(caller, agent, session_id),
          access,
          connect,
          line: said,
          signal: extra.signal,
          ...(onElement ? { onElement } : {}),
        };
        const view = session_id === undefined ? await app.conversationService.start(call) : await app.conversationService.turn(call);
        return success(view, renderTurn(view));
      }),
  );

  registerTool(
    server,
    app.log,
    'end_conversation',
    {
      title: 'End a test conversation',
      description:
        'Close a test conversation: a plain socket close, never #exit; about 30 s later the engine runs its end-of-conversation ' +
        'work. Closing a closed conversation again is fine.',
      inputSchema: z.strictObject({ agent: agentField, session_id: sessionIdSchema.describe('The conversation to close.') }),
      outputSchema: Conversation,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    ({ agent, session_id }, extra) =>
      guarded(app.log, async () => {
        const caller = callerOf(extra);
        await app.authorizer.authorizeViewer(caller, agent);
        const call = callContext(caller, agent, session_id);
        await app.conversationService.close(call);
        const view = await app.conversationService.get(call);
        return success(
          view,
          `Conversation ${view.session_id} with ${view.agent} is closed after ${view.turns} turn(s). ${view.notes.join(' ')}`,
        );
      }),
  );

  registerTool(
    server,
    app.log,
    'list_conversations',
    {
      title: 'List my test conversations',
      description: 'Your test conversations on every pod of this gateway, open and recently closed, newest first (any agent).',
      inputSchema: z.strictObject({}),
      outputSchema: ConversationList,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (_args, extra) =>
      guarded(app.log, async () => {
        const caller = callerOf(extra);
        const conversations = await app.conversationService.list(caller);
        const lines = conversations.map(
          (c) =>
            `- ${c.session_id} ${c.agent}: ${c.connection}, ${c.turns} turn(s), device ` +
            `${c.device_ref}${c.close_cause ? `, closed (${c.close_cause})` : ''}`,
        );
        return success(
          { conversations },
          conversations.length === 0 ? 'You have no test conversations on this gateway.' : lines.join('\n'),
        );
      }),
  );
}

/** With a progress token, each spoken text element as it arrives: `progress` counts them. */
function speechProgress(extra: {
  _meta?: { progressToken?: string | number } | undefined;
  sendNotification: (n: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; message?: string };
  }) => Promise<void>;
}): ((element: Element) => void) | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  let spoken = 0;
  return (element) => {
    if (element.type !== 'text' || typeof element.text !== 'string' || element.text.trim() === '') return;
    spoken += 1;
    void extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: spoken, message: element.text } })
      .catch(() => undefined);
  };
}

function renderTurn(view: TurnResultView): string {
  const { turn, conversation: c } = view;
  const said = turn.text === '' ? `${view.agent} said nothing` : `${view.agent} said: ${turn.text}`;
  return [
    said,
    `tools: ${turn.tools.join(', ') || 'none'}; shown: ${turn.shown.join(', ') || 'none'}`,
    `outcome: ${turn.outcome}; ended_by_agent: ${yesNo(c.ended_by_agent)}; reconnected: ${yesNo(c.reconnected)}`,
    `session_id: ${view.session_id} (connection ${c.connection}, ${c.turns} ` +
      `turn(s))${c.connection === 'open' ? ': pass it to test_agent to continue' : ''}`,
    ...view.notes,
  ].join('\n');
}
