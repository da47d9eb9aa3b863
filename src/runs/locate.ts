import type { AgentRef, Caller } from '../domain/vocabulary.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Authorizer } from '../platform/authorizer.js';
import { agentSchema } from '../schemas/requests.js';
import type { RunRegistry } from './registry.js';
import type { Run } from './run.js';
import type { RunFilter } from './siblings.js';
import { runView, type RunView } from './views.js';

/** A run as this pod or its siblings know it: its view, its caller, and who holds it (null: this pod; undefined: nobody now). */
export interface Located {
  view: RunView;
  callerId: string;
  holder: string | null | undefined;
}

/**
 * Who asks about a run: the caller, and whether it has Viewer on an agent's project (the platform's
 * answer for the caller's token, cached by the authorizer). A run is readable by its caller and by
 * every caller with Viewer on the projects of all its agents.
 */
export interface Reader {
  id: string;
  /** Viewer on the project of the agent with this engine key (`agent:coach.3`). */
  views(engineKey: string): Promise<boolean>;
}

/** The platform's refusals that mean "no Viewer here"; any other error (the platform down) is passed on. */
const NOT_A_VIEWER = new Set(['forbidden', 'not_found', 'agent_not_found']);

/** The caller as a reader of runs: its Viewer roles asked of the platform through the authorizer, once per agent. */
export function readerOf(authorizer: Authorizer, caller: Caller): Reader {
  const asked = new Map<string, Promise<boolean>>();
  const views = async (engineKey: string): Promise<boolean> => {
    const agent = agentSchema.safeParse(engineKey.replace(/^agent:/, ''));
    if (!agent.success) return false;
    try {
      await authorizer.authorizeViewer(caller, agent.data);
      return true;
    } catch (err) {
      if (isGatewayError(err) && NOT_A_VIEWER.has(err.code)) return false;
      throw err;
    }
  };
  return {
    id: caller.id,
    views: (engineKey) => {
      let answer = asked.get(engineKey);
      if (answer === undefined) {
        answer = views(engineKey);
        asked.set(engineKey, answer);
      }
      return answer;
    },
  };
}

const notFound = (id: string) =>
  new GatewayError('run_not_found', `No run ${id} is known: it never existed, or it ended and was forgotten.`);

/**
 * A run from any pod, whoever's: this pod's record when it holds the run or the run ended, else
 * the siblings' answer (the holder's first), else this pod's replica.
 */
async function find(runs: RunRegistry, id: string): Promise<Located | undefined> {
  const here = runs.get(id);
  if (here !== undefined && (here.holder === null || here.ended)) {
    return { view: runView(here, runs.podName), callerId: here.spec.callerId, holder: here.holder === null ? null : undefined };
  }
  const there = await runs.siblings.find(id);
  if (there !== undefined) {
    const { caller_id, ...view } = there.view;
    return { view, callerId: caller_id, holder: there.held ? there.address : undefined };
  }
  return here === undefined ? undefined : { view: runView(here, runs.podName), callerId: here.spec.callerId, holder: undefined };
}

/** Whether `reader` may read the run `view` shows: its caller, or a Viewer of every agent in it. */
async function readable(view: RunView, callerId: string, reader: Reader): Promise<boolean> {
  if (callerId === reader.id) return true;
  const agents = view.baseline === null ? [view.agent] : [view.agent, view.baseline];
  return (await Promise.all(agents.map((agent) => reader.views(agent)))).every(Boolean);
}

/**
 * A run from any pod, for a caller who may read it (`readable`); 404 when no pod knows it or the
 * caller may not read it, alike, so that a stranger learns nothing of a run's existence.
 */
export async function locateRun(runs: RunRegistry, id: string, reader: Reader): Promise<Located> {
  const located = await find(runs, id);
  if (located === undefined || !(await readable(located.view, located.callerId, reader))) throw notFound(id);
  return located;
}

/** A run its caller may act on (cancel): readable by the team, acted on by the caller who started it alone (403 to a teammate). */
export async function locateOwnRun(runs: RunRegistry, id: string, reader: Reader): Promise<Located> {
  const located = await locateRun(runs, id, reader);
  if (located.callerId !== reader.id) {
    throw new GatewayError('run_not_yours', 'Only the caller who started this run cancels it; you may read it and follow it.');
  }
  return located;
}

/**
 * Cancels a located run where it is held: on the holder, or, when the holder does not take it (it
 * is gone, a takeover is pending), on a pod keeping a replica, which ends it there. Answers its
 * view after (as it was, when no pod could take the cancel).
 */
export async function cancelLocated(runs: RunRegistry, located: Located, why: string): Promise<RunView> {
  const { id } = located.view;
  if (typeof located.holder === 'string') {
    const view = await runs.siblings.cancel(located.holder, id, why);
    if (view !== undefined) return view;
  }
  const here = runs.get(id);
  if (here !== undefined) {
    await runs.cancelHere(here, why);
    return runView(runs.get(id) ?? here, runs.podName);
  }
  for (const address of runs.siblings.addresses) {
    if (address === located.holder) continue;
    const view = await runs.siblings.cancel(address, id, why);
    if (view !== undefined) return view;
  }
  return located.view;
}

/** Cancels a caller's run by its id, wherever it is now (a run may have moved since it was started here). */
export async function cancelRun(runs: RunRegistry, id: string, callerId: string, why: string): Promise<RunView> {
  // Its own caller reads it, whatever the platform says of its agents.
  return cancelLocated(runs, await locateRun(runs, id, { id: callerId, views: () => Promise.resolve(false) }), why);
}

/** Whether a run's agents (either side of a comparison) are the agent asked for: any revision of a plain ref, or that revision. */
function runOfAgent(run: Run, asked: AgentRef): boolean {
  const matches = (agent: AgentRef) => (asked.revision === null ? agent.ref === asked.ref : agent.key === asked.key);
  return matches(run.spec.agent) || (run.spec.baseline !== undefined && matches(run.spec.baseline.agent));
}

/** The runs this pod knows that a filter keeps, newest first. */
export const runsMatching = (runs: RunRegistry, filter: RunFilter): Run[] =>
  'callerId' in filter ? runs.list(filter.callerId) : runs.all().filter((run) => runOfAgent(run, filter.agent));

/**
 * Runs from every pod, newest first, each as the pod holding it (or, ended, any pod that kept it)
 * sees it; without their reports (`GET /v1/runs/{id}` has them). `filter`: the caller's own, or
 * an agent's (any caller's, then kept to those `reader` may read).
 */
export async function listRuns(runs: RunRegistry, filter: RunFilter, reader?: Reader): Promise<RunView[]> {
  const byId = new Map<string, { view: RunView; held: boolean }>();
  const add = (entry: { view: RunView; held: boolean }) => {
    const known = byId.get(entry.view.id);
    if (known === undefined || (!known.held && (entry.held || entry.view.status !== 'running'))) byId.set(entry.view.id, entry);
  };
  for (const run of runsMatching(runs, filter)) add({ view: { ...runView(run, runs.podName), report: null }, held: run.holder === null });
  for (const entry of await runs.siblings.listOf(filter)) add(entry);
  const views = [...byId.values()].map((e) => e.view).sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at));
  if (reader === undefined) return views;
  const allowed = await Promise.all(views.map((view) => readable(view, view.started_by.id, reader)));
  return views.filter((_, i) => allowed[i]);
}
