// The fixture world both simulators serve: one tenant, its projects, users with their roles,
// agents with their revisions, and the engine's test identities. The engine and the platform
// simulator read it live on every request, so a test may change it between calls.

export type Role = 'Owner' | 'Editor' | 'Viewer';
export type RevisionState = 'Draft' | 'Preview' | 'Published' | 'Archived';

export interface Tenant {
  id: string;
  name: string;
}

export interface Project {
  id: string;
  name: string;
  tenantId: string;
  signInRequired: boolean;
  externalRolesEnforced: boolean;
  identityProviders: Array<{ id: string; name: string }>;
}

export interface User {
  id: string;
  email: string;
  /** project id → the user's role on that project */
  projectRoles: Record<string, Role>;
  /** tenant id → the user's role on the tenant, which falls through to its projects */
  tenantRoles: Record<string, Role>;
}

export interface Revision {
  id: string;
  revision: number;
  state: RevisionState;
}

export interface Agent {
  ref: string;
  projectId: string;
  /** oldest first; the platform lists them newest first */
  revisions: Revision[];
}

/** HTTP Basic credentials the engine knows, and the projects it admits them to. */
export interface EngineIdentity {
  username: string;
  password: string;
  enabledProjects: string[];
}

export interface World {
  tenants: Record<string, Tenant>;
  projects: Record<string, Project>;
  users: Record<string, User>;
  /** platform access token → user id */
  tokens: Record<string, string>;
  /** agent ref → agent */
  agents: Record<string, Agent>;
  engineIdentities: EngineIdentity[];
}

const TENANT = 't-acme';

function project(id: string, name: string, closedBy: Partial<Project> = {}): Project {
  return {
    id,
    name,
    tenantId: TENANT,
    signInRequired: false,
    externalRolesEnforced: false,
    identityProviders: [],
    ...closedBy,
  };
}

function agent(ref: string, projectId: string, states: RevisionState[]): Agent {
  return {
    ref,
    projectId,
    revisions: states.map((state, i) => ({ id: `a-${ref}-${i + 1}`, revision: i + 1, state })),
  };
}

/** A fresh copy of the demo world on every call: tests mutate theirs. */
export function demoWorld(): World {
  return {
    tenants: { [TENANT]: { id: TENANT, name: 'Acme' } },
    projects: {
      'p-open': project('p-open', 'Open project'),
      'p-signin': project('p-signin', 'Sign-in project', { signInRequired: true }),
      'p-idp': project('p-idp', 'Identity-provider project', {
        externalRolesEnforced: true,
        identityProviders: [{ id: 'idp-1', name: 'Okta' }],
      }),
      // External roles enforced but no identity provider listed: still open to anonymous sessions.
      'p-extnoidp': project('p-extnoidp', 'External roles, no provider', { externalRolesEnforced: true }),
      'p-secret': project('p-secret', 'Secret project'),
    },
    users: {
      'u-demo': {
        id: 'u-demo',
        email: 'demo@example.com',
        projectRoles: { 'p-open': 'Viewer', 'p-signin': 'Viewer', 'p-idp': 'Viewer', 'p-extnoidp': 'Viewer' },
        tenantRoles: {},
      },
      'u-bob': { id: 'u-bob', email: 'bob@example.com', projectRoles: { 'p-open': 'Viewer' }, tenantRoles: {} },
      'u-tenant': { id: 'u-tenant', email: 'tenant@example.com', projectRoles: {}, tenantRoles: { [TENANT]: 'Editor' } },
      'u-outsider': { id: 'u-outsider', email: 'outsider@example.com', projectRoles: {}, tenantRoles: {} },
    },
    tokens: {
      'demo-token': 'u-demo',
      // Two tokens of one user are one caller.
      'demo-token-2': 'u-demo',
      'bob-token': 'u-bob',
      'tenant-token': 'u-tenant',
      'outsider-token': 'u-outsider',
    },
    agents: {
      coach: agent('coach', 'p-open', ['Archived', 'Published', 'Preview', 'Draft']),
      'draft-only': agent('draft-only', 'p-open', ['Draft']),
      'preview-only': agent('preview-only', 'p-open', ['Preview']),
      // Remembers nothing of anyone: holds a canary attack, and fails its control visit.
      forgetful: agent('forgetful', 'p-open', ['Published']),
      secure: agent('secure', 'p-signin', ['Published']),
      idp: agent('idp', 'p-idp', ['Published']),
      extnoidp: agent('extnoidp', 'p-extnoidp', ['Published']),
      hidden: agent('hidden', 'p-secret', ['Published']),
    },
    // Enabled for p-signin only, so the engine refuses it (FORBIDDEN) on p-idp.
    engineIdentities: [{ username: 'tester', password: 's3cret', enabledProjects: ['p-signin'] }],
  };
}

/** The platform's rule for a project closed to anonymous sessions (docs/engine-contract.md). */
export function isClosedProject(p: Project): boolean {
  return p.signInRequired || (p.externalRolesEnforced && p.identityProviders.length > 0);
}
