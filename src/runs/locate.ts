import { GatewayError } from '../errors.js';
import type { RunRegistry } from './registry.js';
import { runView, type RunView } from './views.js';

/** A run as this pod or its siblings know it: its view, its caller, and who holds it (null: this pod; undefined: nobody now). */
export interface Located {
  view: RunView;
  callerId: string;
  holder: string | null | undefined;
}

/** No pod knows the run: it ended and was dropped for room (RUNS_KEPT_BYTES), or it never existed or expired. */
function runNotFound(runs: RunRegistry, id: string): GatewayError {
  if (runs.droppedForRoom(id)) {
    return new GatewayError(
      'run_not_found',
      `Run ${id} ended and was dropped for room: the pods keep at most RUNS_KEPT_BYTES of runs, and dropped the oldest ended ` +
        `ones first. Its report is no longer kept.`,
    );
  }
  return new GatewayError('run_not_found', `No run ${id} is known: it never existed, or it ended and was forgotten.`);
}

/**
 * A run from any pod, for its caller only: this pod's record when it holds the run or the run
 * ended, else the siblings' answer (the holder's first), else this pod's replica. 404 when no pod
 * knows it, 403 when it is another caller's.
 */
export async function locateRun(runs: RunRegistry, id: string, callerId: string): Promise<Located> {
  const here = runs.get(id);
  let located: Located | undefined;
  if (here !== undefined && (here.holder === null || here.ended)) {
    located = { view: runView(here, runs.podName), callerId: here.spec.callerId, holder: here.holder === null ? null : undefined };
  } else {
    const there = await runs.siblings.find(id);
    if (there !== undefined) {
      const { caller_id, ...view } = there.view;
      located = { view, callerId: caller_id, holder: there.held ? there.address : undefined };
    } else if (here !== undefined) located = { view: runView(here, runs.podName), callerId: here.spec.callerId, holder: undefined };
  }
  if (located === undefined) throw runNotFound(runs, id);
  if (located.callerId !== callerId) {
    throw new GatewayError('run_not_yours', 'This run belongs to another caller: only the caller who started it sees or cancels it.');
  }
  return located;
}

/** Cancels a located run where it is held; answers its view after (as it was, when nobody holds it now). */
export async function cancelLocated(runs: RunRegistry, located: Located, why: string): Promise<RunView> {
  const { id } = located.view;
  const here = runs.get(id);
  if (located.holder === null && here !== undefined) {
    await runs.cancel(here, why);
    return runView(here, runs.podName);
  }
  if (typeof located.holder === 'string') return (await runs.siblings.cancel(located.holder, id, why)) ?? located.view;
  return located.view;
}

/**
 * The caller's runs from every pod, newest first, each as the pod holding it (or, ended, any pod
 * that kept it) sees it; without their reports (`GET /v1/runs/{id}` has them).
 */
export async function listRuns(runs: RunRegistry, callerId: string): Promise<RunView[]> {
  const byId = new Map<string, { view: RunView; held: boolean }>();
  const add = (entry: { view: RunView; held: boolean }) => {
    const known = byId.get(entry.view.id);
    if (known === undefined || (!known.held && (entry.held || entry.view.status !== 'running'))) byId.set(entry.view.id, entry);
  };
  for (const run of runs.list(callerId)) add({ view: { ...runView(run, runs.podName), report: null }, held: run.holder === null });
  for (const entry of await runs.siblings.listOf(callerId)) add(entry);
  return [...byId.values()].map((e) => e.view).sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at));
}
