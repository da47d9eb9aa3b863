/** The command line of `agent-test-gateway chat`: its usage, its options, and the command that reconnects. */

import { parseArgs } from 'node:util';
import { gatewayProblem, gatewayUrl, MISSING_TOKEN, tokenFrom } from './connection.js';
import { commandLine } from './launcher.js';

export const USAGE = `usage: agent-test-gateway chat <agent> [options]

  <agent>              an agent ref (coach) or ref.N for revision N (coach.7)

options:
  --gateway URL        the gateway (default: $AGENT_TEST_GATEWAY_URL or http://127.0.0.1:8080)
  --device-ref X       the simulated user (forced under mcp:); default: a fresh one
  --locale L           the engine locale, e.g. en-US (default en-US)
  --session ID         reconnect to an existing conversation instead of opening a new one
  -h, --help           this help

The platform access token is read from AGENT_TEST_GATEWAY_TOKEN.
Type a line and Enter to send it; Ctrl-C or Ctrl-D closes the conversation.
`;

/** A usage problem; an empty message asks for the usage alone (--help). */
export class UsageError extends Error {}

export interface Options {
  /** The agent as typed: `coach` or `coach.7`, the engine key without `agent:`. */
  agentKey: string;
  gateway: string;
  token: string;
  deviceRef?: string;
  locale?: string;
  session?: string;
}

export function parseOptions(args: string[], env: NodeJS.ProcessEnv): Options {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        gateway: { type: 'string' },
        'device-ref': { type: 'string' },
        locale: { type: 'string' },
        session: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) throw new UsageError('');
  if (positionals.length !== 1) {
    throw new UsageError(positionals.length === 0 ? 'name the agent, e.g. coach' : `one agent only, not ${positionals.join(' ')}`);
  }
  const gateway = gatewayUrl(values.gateway, env);
  const problem = gatewayProblem(gateway);
  if (problem !== undefined) throw new UsageError(problem);
  const token = tokenFrom(env);
  if (!token) throw new UsageError(MISSING_TOKEN);
  return {
    agentKey: positionals[0]!,
    gateway,
    token,
    ...(values['device-ref'] === undefined ? {} : { deviceRef: values['device-ref'] }),
    ...(values.locale === undefined ? {} : { locale: values.locale }),
    ...(values.session === undefined ? {} : { session: values.session.trim() }),
  };
}

const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/** The command that reconnects to the session, complete enough to paste: npx, the gateway and the connect settings. */
export function reconnectCommand(opts: Options, sessionId: string): string {
  const args = [
    ...commandLine().split(' '),
    'chat',
    opts.agentKey,
    '--gateway',
    opts.gateway,
    '--session',
    sessionId,
    ...(opts.deviceRef === undefined ? [] : ['--device-ref', opts.deviceRef]),
    ...(opts.locale === undefined ? [] : ['--locale', opts.locale]),
  ];
  return args.map(shellWord).join(' ');
}
