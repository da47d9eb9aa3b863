/**
 * The project-role authorizer: who the caller is (the platform's user id for the token, never
 * a claim read from the token), and whether it may run an agent (Viewer or better on the
 * agent's project, a tenant role falling through) and which revision that means.
 */

import { hash } from 'node:crypto';
import type { AgentAccess, AgentRef, Caller } from '../domain/vocabulary.js';
import { GatewayError } from '../errors.js';
import type { Config } from '../ops/config.js';
import type { Metrics } from '../ops/metrics.js';
import type { PlatformClient, Revision, Role } from './client.js';
import { CoalescingCache, type CacheResult } from './coalescing-cache.js';

/** A caller allowed to run an agent, and how. */
export interface Grant {
  caller: Caller;
  access: AgentAccess;
}

export interface Authorizer {
  authenticate(authorization: string | undefined): Promise<Caller>;
  /**
   * authenticate, then authorize, from the caches alone and without waiting: undefined when the
   * platform must be asked or the cached answer is a refusal (the waiting path words it).
   */
  cachedGrant(authorization: string | undefined, agent: AgentRef): Grant | undefined;
  /** Viewer or better on the agent's project, and a revision the engine may run. */
  authorize(caller: Caller, agent: AgentRef): Promise<AgentAccess>;
  /** Viewer or better on the agent's project only: for reading, closing and memory. */
  authorizeViewer(caller: Caller, agent: AgentRef): Promise<{ projectId: string }>;
}

/** What the platform said about an agent for a caller: cached as a whole, refusals included. */
interface Resolution {
  projectId: string;
  signIn: boolean;
  runnable: RunnableRevision | GatewayError;
}

const RANK: Record<NonNullable<Role>, number> = { Viewer: 1, Editor: 2, Owner: 3 };
const rank = (role: Role): number => (role === null ? 0 : RANK[role]);

/** One labels object per result, made once: the cache is counted on every call. */
const CACHE_RESULT_LABELS: Record<CacheResult, { result: CacheResult }> = {
  hit: { result: 'hit' },
  miss: { result: 'miss' },
  coalesced: { result: 'coalesced' },
};

const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;

export function createAuthorizer(config: Config, platform: PlatformClient, metrics: Metrics): Authorizer {
  const observe = (result: CacheResult, lookups = 1) => metrics.authCache.inc(CACHE_RESULT_LABELS[result], lookups);
  const identities = new CoalescingCache<{ id: string; email?: string | undefined }>({
    ttlMs: config.authCacheTtlMs,
    max: 10_000,
    observe,
  });
  const access = new CoalescingCache<Resolution>({ ttlMs: config.authCacheTtlMs, max: 10_000, observe });

  async function authenticate(authorization: string | undefined): Promise<Caller> {
    const token = tokenOf(authorization);
    if (token === undefined) {
      throw new GatewayError('unauthenticated', 'Send Authorization: Bearer <platform access token>.');
    }
    const user = await identities.get(identityKey(token), async () => {
      try {
        return await platform.me(token);
      } catch (err) {
        if (err instanceof GatewayError && err.code === 'not_found') {
          throw new GatewayError('unauthenticated', 'The platform knows no user for this access token.');
        }
        throw err;
      }
    });
    return { id: user.id, email: user.email, token };
  }

  async function resolve(caller: Caller, agent: AgentRef): Promise<Resolution> {
    const revisions = await platform.revisions(caller.token, agent.ref);
    const wanted =
      agent.revision === null ? revisions.find((r) => r.state === 'Published') : revisions.find((r) => r.revision === agent.revision);
    // The role is checked against the agent's project before anything about its revisions is said.
    const probe = wanted ?? revisions[0];
    if (probe === undefined) throw new GatewayError('agent_not_found', `The agent ${agent.ref} has no revisions.`);
    const projectId = await platform.agentProject(caller.token, probe.id);
    const [roles, closed] = await Promise.all([
      platform.projectRoles(caller.token, projectId),
      platform.projectClosed(caller.token, projectId),
    ]);
    if (Math.max(rank(roles.project), rank(roles.tenant)) < RANK.Viewer) {
      throw new GatewayError('forbidden', `You need Viewer, Editor or Owner on the project of agent ${agent.ref}.`);
    }
    return { projectId, signIn: closed, runnable: runnableRevision(agent, wanted, revisions) };
  }

  const resolved = (caller: Caller, agent: AgentRef) => access.get(accessKey(caller.id, agent), () => resolve(caller, agent));

  return {
    authenticate,
    cachedGrant(authorization, agent) {
      const token = tokenOf(authorization);
      const user = token === undefined ? undefined : identities.peek(identityKey(token));
      const resolution = user === undefined ? undefined : access.peek(accessKey(user.id, agent));
      if (resolution === undefined || resolution.runnable instanceof GatewayError) return undefined;
      // Two lookups, both hits: the token's and the agent's.
      observe('hit', 2);
      return { caller: { id: user!.id, email: user!.email, token: token! }, access: accessOf(agent, resolution) };
    },
    async authorize(caller, agent) {
      return accessOf(agent, await resolved(caller, agent));
    },
    async authorizeViewer(caller, agent) {
      return { projectId: (await resolved(caller, agent)).projectId };
    },
  };
}

const tokenOf = (authorization: string | undefined): string | undefined =>
  authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];

/** Cache keys: a digest of the token, never the token itself. */
const identityKey = (token: string): string => hash('sha256', token, 'base64url');
const accessKey = (callerId: string, agent: AgentRef): string => `${callerId}\n${agent.key}`;

function accessOf(agent: AgentRef, { projectId, signIn, runnable }: Resolution): AgentAccess {
  if (runnable instanceof GatewayError) throw runnable;
  return { agentKey: agent.key, revision: runnable.revision, revisionState: runnable.state, projectId, signIn };
}

/** A revision the engine runs for an anonymous session. */
type RunnableRevision = Revision & { state: 'Published' | 'Preview' };
const isRunnable = (revision: Revision): revision is RunnableRevision => revision.state === 'Preview' || revision.state === 'Published';

function runnableRevision(agent: AgentRef, wanted: Revision | undefined, revisions: Revision[]): RunnableRevision | GatewayError {
  if (agent.revision === null) {
    // wanted is the Published one, if any
    if (wanted && isRunnable(wanted)) return wanted;
    const preview = revisions.find((r) => r.state === 'Preview');
    const draft = revisions.find((r) => r.state === 'Draft');
    if (!preview && draft) {
      // Naming the Draft as ref.N would only be refused in turn: say at once what unblocks it.
      return new GatewayError(
        'no_published_revision',
        `The agent ${agent.ref} has only a Draft (revision ${draft.revision}), no Published or Preview revision, ` +
          'and the engine runs a Draft for no anonymous session: ' +
          `promote it to Preview to test it, then name it as ${agent.ref}.N (e.g. ${agent.ref}.${draft.revision} once promoted).`,
      );
    }
    return new GatewayError(
      'no_published_revision',
      `The agent ${agent.ref} has no Published revision; to test a Preview revision, name it as ${agent.ref}.N${
        preview ? ` (e.g. ${agent.ref}.${preview.revision})` : ''
      }.`,
    );
  }
  if (wanted === undefined) {
    return new GatewayError('revision_not_found', `The agent ${agent.ref} has no revision ${agent.revision}.`);
  }
  if (isRunnable(wanted)) return wanted;
  if (wanted.state === 'Draft') {
    return new GatewayError(
      'revision_not_runnable',
      `Revision ${wanted.revision} of ${agent.ref} is a Draft, ` +
        'and the engine runs a Draft for no anonymous session: promote it to Preview to test it.',
    );
  }
  return new GatewayError(
    'revision_not_runnable',
    `Revision ${wanted.revision} of ${agent.ref} is ${wanted.state}; only a Preview or Published revision can run.`,
  );
}
