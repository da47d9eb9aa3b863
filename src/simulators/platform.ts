// The platform API simulator: the platform endpoints of docs/engine-contract.md over a World, a
// record of every request (so tests can count round trips and check what token was forwarded),
// and run-time faults (so tests can make the platform fail, lag, hang or answer garbage).
import type { Socket } from 'node:net';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { demoWorld, type Agent, type Project, type User, type World } from './world.js';

export interface PlatformFaults {
  /** answer this status instead of the real answer */
  status?: number;
  /** answer this much later */
  delayMs?: number;
  /** never answer */
  hang?: boolean;
  /** answer 200 with a body that is not JSON */
  malformed?: boolean;
  /** only requests whose path matches are faulted; every request when absent */
  match?: RegExp;
}

export interface PlatformRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  at: number;
}

export interface PlatformSimulator {
  url: string;
  world: World;
  requests: PlatformRequest[];
  /** requests whose path starts with the string or matches the RegExp; all of them without one */
  count(pathPrefixOrRegex?: string | RegExp): number;
  /** clears the request record (not the faults) */
  reset(): void;
  faults: PlatformFaults;
  close(): Promise<void>;
}

export interface PlatformSimulatorOptions {
  world?: World;
  host?: string;
  port?: number;
  logger?: boolean;
}

export async function startPlatformSimulator(opts: PlatformSimulatorOptions = {}): Promise<PlatformSimulator> {
  const world = opts.world ?? demoWorld();
  const requests: PlatformRequest[] = [];
  const sockets = new Set<Socket>();
  // Long agent refs, as the gateway allows them, are not the router's 414.
  const app = Fastify({ logger: opts.logger ?? false, routerOptions: { maxParamLength: 4096 } });

  const sim: PlatformSimulator = {
    url: '',
    world,
    requests,
    faults: {},
    count(p) {
      if (p === undefined) return requests.length;
      return requests.filter((r) => (typeof p === 'string' ? r.path.startsWith(p) : p.test(r.path))).length;
    },
    reset() {
      requests.length = 0;
    },
    async close() {
      // A hung request would keep app.close() waiting for ever: cut every connection first.
      for (const s of sockets) s.destroy();
      await app.close();
    },
  };

  app.server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0] ?? req.url;
    requests.push({ method: req.method, path, authorization: req.headers.authorization, at: Date.now() });
    // Read sim.faults on each request: tests may replace the object as well as mutate it.
    const f = sim.faults;
    if (f.match && !f.match.test(path)) return;
    if (f.hang) await new Promise<never>(() => {});
    if (f.delayMs) await new Promise((r) => setTimeout(r, f.delayMs));
    if (f.status) return reply.code(f.status).send({ error: 'fault', message: `simulated status ${f.status}` });
    // Labelled JSON on purpose: a client must not trust the content type.
    if (f.malformed) return reply.code(200).type('application/json').send('<html>upstream error');
  });

  /** The caller behind the bearer token, or a 401 already sent. */
  function caller(req: FastifyRequest, reply: FastifyReply): User | undefined {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const user = m?.[1] !== undefined ? world.users[world.tokens[m[1]] ?? ''] : undefined;
    if (!user) void reply.code(401).send({ error: 'unauthorized', message: 'unknown or missing token' });
    return user;
  }

  /** Any role gives read access; a tenant role falls through to the tenant's projects. */
  function hasRole(user: User, p: Project): boolean {
    return Boolean(user.projectRoles[p.id] ?? user.tenantRoles[p.tenantId]);
  }

  /** The project if it exists and the caller may see it, or undefined with a 404/403 already sent. */
  function visibleProject(user: User, projectId: string, reply: FastifyReply): Project | undefined {
    const p = world.projects[projectId];
    if (!p) void reply.code(404).send({ error: 'not_found', message: `no project ${projectId}` });
    else if (!hasRole(user, p)) void reply.code(403).send({ error: 'forbidden', message: `no access to ${projectId}` });
    else return p;
    return undefined;
  }

  function agentById(id: string): { agent: Agent; rev: Agent['revisions'][number] } | undefined {
    for (const agent of Object.values(world.agents)) {
      const rev = agent.revisions.find((r) => r.id === id);
      if (rev) return { agent, rev };
    }
    return undefined;
  }

  app.get('/api/v1/users/me', async (req, reply) => {
    const user = caller(req, reply);
    if (user) return { id: user.id, email: user.email };
  });

  app.get<{ Params: { ref: string } }>('/api/v1/agents/:ref/revisions', async (req, reply) => {
    const user = caller(req, reply);
    if (!user) return;
    const agent = world.agents[req.params.ref];
    if (!agent) return reply.code(404).send({ error: 'not_found', message: `no agent ${req.params.ref}` });
    if (!visibleProject(user, agent.projectId, reply)) return;
    return [...agent.revisions]
      .sort((a, b) => b.revision - a.revision)
      .map((r) => ({ id: r.id, ref: agent.ref, revision: r.revision, state: r.state }));
  });

  app.get<{ Params: { id: string } }>('/api/v1/agents/:id', async (req, reply) => {
    const user = caller(req, reply);
    if (!user) return;
    const found = agentById(req.params.id);
    if (!found) return reply.code(404).send({ error: 'not_found', message: `no agent revision ${req.params.id}` });
    const p = visibleProject(user, found.agent.projectId, reply);
    if (!p) return;
    const { agent, rev } = found;
    return { id: rev.id, ref: agent.ref, revision: rev.revision, state: rev.state, project: { id: p.id, tenant: { id: p.tenantId } } };
  });

  app.get<{ Params: { id: string } }>('/api/v1/project/:id/context', async (req, reply) => {
    const user = caller(req, reply);
    const p = user && visibleProject(user, req.params.id, reply);
    if (!user || !p) return;
    const tenant = world.tenants[p.tenantId];
    return {
      id: p.id,
      name: p.name,
      tenantId: p.tenantId,
      userRole: user.projectRoles[p.id] ?? null,
      tenant: { id: p.tenantId, name: tenant?.name ?? p.tenantId, userRole: user.tenantRoles[p.tenantId] ?? null },
    };
  });

  app.get<{ Params: { id: string } }>('/api/v1/project/:id', async (req, reply) => {
    const user = caller(req, reply);
    const p = user && visibleProject(user, req.params.id, reply);
    if (!user || !p) return;
    return {
      id: p.id,
      name: p.name,
      tenantId: p.tenantId,
      signInRequired: p.signInRequired,
      externalRolesEnforced: p.externalRolesEnforced,
      identityProviders: p.identityProviders,
    };
  });

  await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  sim.url = `http://${opts.host ?? '127.0.0.1'}:${port}`;
  return sim;
}
