/**
 * The platform API adapter (docs/engine-contract.md, "The platform API"). It forwards the caller's bearer token
 * and nothing else of the caller's request; answers are checked before anything trusts them.
 */

import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { createJsonClient, UpstreamError } from '../http/json-client.js';
import type { Config } from '../ops/config.js';
import { statusClass, type Metrics } from '../ops/metrics.js';

const role = z.enum(['Owner', 'Editor', 'Viewer']).nullable().catch(null);
export type Role = z.infer<typeof role>;

const me = z.object({ id: z.string().min(1), email: z.string().max(320).optional() });
const revision = z.object({
  id: z.string(),
  revision: z.number().int(),
  state: z.string(),
});
export type Revision = z.infer<typeof revision>;
const revisions = z.array(revision);
const agent = z.object({ id: z.string(), project: z.object({ id: z.string().min(1) }) });
const projectContext = z.object({
  userRole: role.optional().default(null),
  tenant: z.object({ userRole: role.optional().default(null) }).nullish(),
});
const project = z.object({
  signInRequired: z.boolean().optional().default(false),
  externalRolesEnforced: z.boolean().optional().default(false),
  identityProviders: z.array(z.unknown()).nullish(),
});

export interface PlatformClient {
  me(token: string): Promise<{ id: string; email?: string | undefined }>;
  revisions(token: string, ref: string): Promise<Revision[]>;
  agentProject(token: string, agentId: string): Promise<string>;
  projectRoles(token: string, projectId: string): Promise<{ project: Role; tenant: Role }>;
  /** Closed to anonymous sessions: sign-in required, or external roles enforced with a provider listed. */
  projectClosed(token: string, projectId: string): Promise<boolean>;
  close(): Promise<void>;
}

export function createPlatformClient(config: Config, metrics: Metrics): PlatformClient {
  const http = createJsonClient(config.platformUrl, {
    timeoutMs: config.platformTimeoutMs,
    observe: (template, status, seconds) =>
      metrics.platformRequestDuration.observe({ operation: template, status: statusClass(status) }, seconds),
  });

  async function get<S extends z.ZodType>(
    token: string,
    path: string,
    template: string,
    schema: S,
    notFound: () => GatewayError,
  ): Promise<z.output<S>> {
    let res;
    try {
      res = await http.request({ path, template, headers: { authorization: `Bearer ${token}` } });
    } catch (err) {
      if (err instanceof UpstreamError) {
        throw new GatewayError('platform_unavailable', `The platform API ${err.message}; try again shortly.`);
      }
      throw err;
    }
    if (res.status === 401) {
      throw new GatewayError('unauthenticated', 'The platform does not accept this access token; sign in again.');
    }
    if (res.status === 403) {
      throw new GatewayError('forbidden', "You need Viewer, Editor or Owner on the agent's project to use this agent.");
    }
    if (res.status === 404) throw notFound();
    if (res.status !== 200) {
      throw new GatewayError('platform_unavailable', `The platform API answered ${template} with HTTP ${res.status}; try again shortly.`);
    }
    const parsed = schema.safeParse(res.body);
    if (!parsed.success) {
      throw new GatewayError('platform_unavailable', `The platform API answered ${template} with a body this gateway does not understand.`);
    }
    return parsed.data;
  }

  const missing = (what: string) => () => new GatewayError('not_found', `The platform does not know ${what}.`);

  return {
    me: (token) => get(token, '/api/v1/users/me', '/api/v1/users/me', me, missing('the user of this token')),
    revisions: (token, ref) =>
      get(
        token,
        `/api/v1/agents/${encodeURIComponent(ref)}/revisions`,
        '/api/v1/agents/{ref}/revisions',
        revisions,
        () => new GatewayError('agent_not_found', `There is no agent with the ref ${ref}.`),
      ),
    agentProject: async (token, agentId) =>
      (await get(token, `/api/v1/agents/${encodeURIComponent(agentId)}`, '/api/v1/agents/{id}', agent, missing('this agent'))).project.id,
    projectRoles: async (token, projectId) => {
      const ctx = await get(
        token,
        `/api/v1/project/${encodeURIComponent(projectId)}/context`,
        '/api/v1/project/{id}/context',
        projectContext,
        missing("the agent's project"),
      );
      return { project: ctx.userRole, tenant: ctx.tenant?.userRole ?? null };
    },
    projectClosed: async (token, projectId) => {
      const p = await get(
        token,
        `/api/v1/project/${encodeURIComponent(projectId)}`,
        '/api/v1/project/{id}',
        project,
        missing("the agent's project"),
      );
      return p.signInRequired || (p.externalRolesEnforced && (p.identityProviders?.length ?? 0) > 0);
    },
    close: () => http.close(),
  };
}
