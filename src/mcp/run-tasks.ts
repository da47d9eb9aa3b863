import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type CallToolResult, type Request, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { z } from 'zod';
import { isGatewayError, type ErrorCode as GatewayCode } from '../errors.js';
import { runLines } from '../runs/follow.js';
import { cancelLocated, cancelRun, listRuns, locateOwnRun, locateRun, readerOf, type Located } from '../runs/locate.js';
import type { Run, RunKind } from '../runs/run.js';
import { runView, type RunView } from '../runs/views.js';
import type { Side } from '../suites/report/comparison.js';
import type { TurnEvent } from '../suites/report/run-report.js';
import { parse, runIdSchema } from '../schemas/requests.js';
import { pendingResult, progressLine, withPage, type RunPages } from './run-tools.js';
import { refusal, toolError } from './results.js';
import type { SessionCaller } from './sessions.js';
import { listedAs, type Extra, type ToolConfig } from './tools.js';

/**
 * MCP tasks ("call now, fetch later") over the gateway's runs. `run_suite` and `compare_revisions`
 * are task tools (taskSupport `optional`): a task IS the run, its id the run's id, so `tasks/get`,
 * `tasks/result`, `tasks/cancel` and `tasks/list` find it through the runs' own location
 * (`locateRun`) from any pod, after a rollout moved it, and from any MCP session of the caller who
 * started it. As over REST, `tasks/get` and `tasks/result` read a teammate's run too (Viewer on
 * all its agents; anyone else's is "not found"), `tasks/cancel` cancels the caller's own only, and
 * `tasks/list` lists the caller's own. The store is one per MCP session, bound to that session's
 * caller and the token of its latest request (the SDK hands it no caller of its own).
 *
 * A call without a task is answered as before the tasks existed (the report, or past
 * MCP_RUN_WAIT_MS the run's id and progress): the SDK routes such a call through the same task
 * handler and reads its answer back from the store at once, so the store keeps that one answer
 * until it is read.
 */

/** How the report of an ended run is answered, per kind (structured report and its text). */
export type ReportAnswer = (kind: RunKind, report: Record<string, unknown>) => CallToolResult;

const TASK_STATUS = { running: 'working', passed: 'completed', failed: 'completed', error: 'failed', cancelled: 'cancelled' } as const;

/** Answers the SDK must hand back to this session once: a call answered without a task, and refusals. */
interface Settled {
  task: Task;
  answer: CallToolResult;
  once: boolean;
}

/** Refusals (a task that failed before a run started) a session keeps for its client to read. */
const SETTLED_KEPT = 100;

export class RunTaskStore implements TaskStore, RunPages {
  readonly #app: FastifyInstance;
  readonly #caller: SessionCaller;
  readonly #reportAnswer: ReportAnswer;
  readonly #settled = new LRUCache<string, Settled>({ max: SETTLED_KEPT });
  /** Tasks created for a call that asked for a task (the others are answered inline). */
  readonly #asked = new WeakSet<Task>();

  constructor(app: FastifyInstance, caller: SessionCaller, reportAnswer: ReportAnswer) {
    this.#app = app;
    this.#caller = caller;
    this.#reportAnswer = reportAnswer;
  }

  /** The run's page on the gateway as this session's client reaches it; undefined when RUNS_PAGE is off. */
  pageOf(runId: string): string | undefined {
    return this.#caller.pages === undefined ? undefined : `${this.#caller.pages}/runs/${runId}`;
  }

  /** The task of a run just started here (`context.runId`), or of a refusal (`context.refusal`). */
  async createTask(options: CreateTaskOptions, _requestId: unknown, request: Request): Promise<Task> {
    const refused = options.context?.refusal as CallToolResult | undefined;
    const task =
      refused === undefined
        ? this.#taskOf((await this.#locate(String(options.context?.runId))).view)
        : this.#settle(randomUUID(), refused, false);
    if (request.params !== undefined && 'task' in request.params) this.#asked.add(task);
    return task;
  }

  /** Whether the call that created `task` asked for a task (else the handler answers it inline). */
  asked(task: Task): boolean {
    return this.#asked.has(task);
  }

  /** The answer of a call without a task, handed to the SDK as an ended task it reads back at once. */
  settleInline(taskId: string, answer: CallToolResult): Task {
    return this.#settle(taskId, answer, true);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const settled = this.#settled.get(taskId);
    if (settled !== undefined) return settled.task;
    const located = await this.#locateOrNull(taskId);
    return located === null ? null : this.#taskOf(located.view);
  }

  async getTaskResult(taskId: string): Promise<CallToolResult> {
    const settled = this.#settled.get(taskId);
    if (settled !== undefined) {
      if (settled.once) this.#settled.delete(taskId);
      return settled.answer;
    }
    const { view } = await this.#locate(taskId);
    const page = this.pageOf(view.id);
    if (view.report !== null) return withPage(this.#reportAnswer(view.kind, view.report), page);
    if (view.error !== null) return withPage(toolError(view.error.error, view.error.message), page);
    return withPage(pendingResult(view, Date.now() - Date.parse(view.created_at)), page);
  }

  /** `tasks/cancel` (the only status a client sets) cancels the run where it is held. */
  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status !== 'cancelled' || this.#settled.has(taskId)) return;
    await cancelLocated(this.#app.runs, await this.#locate(taskId, locateOwnRun), 'the MCP client cancelled the task');
  }

  /** Never called: a task's result is its run's report, which the run keeps. */
  storeTaskResult(): Promise<void> {
    return Promise.reject(new Error('a run task keeps its own result: its report'));
  }

  /** The caller's runs from every pod, newest first; at most RUNS_KEPT_MAX a pod, so one page. */
  async listTasks(): Promise<{ tasks: Task[] }> {
    return { tasks: (await listRuns(this.#app.runs, { callerId: this.#caller.current.id })).map((view) => this.#taskOf(view)) };
  }

  #settle(taskId: string, answer: CallToolResult, once: boolean): Task {
    const at = new Date().toISOString();
    const [status, statusMessage] = answer.isError === true ? (['failed', textOf(answer)] as const) : (['completed', undefined] as const);
    const task: Task = {
      taskId,
      status,
      ttl: this.#app.config.runs.keptMs,
      createdAt: at,
      lastUpdatedAt: at,
      ...(statusMessage && { statusMessage }),
    };
    this.#settled.set(taskId, { task, answer, once });
    return task;
  }

  #taskOf(view: RunView): Task {
    return {
      taskId: view.id,
      status: TASK_STATUS[view.status],
      statusMessage:
        (view.error === null ? progressLine(view) : `${view.error.error}: ${view.error.message}`) +
        (this.pageOf(view.id) === undefined ? '' : `\npage_url: ${this.pageOf(view.id)}`),
      ttl: this.#app.config.runs.keptMs,
      createdAt: view.created_at,
      lastUpdatedAt: view.ended_at ?? new Date().toISOString(),
      pollInterval: this.#app.config.mcpTaskPollMs,
    };
  }

  /** The run, as REST's runs routes find it; a refusal as the protocol's invalid-params error with the gateway's code. */
  async #locate(taskId: string, locate = locateRun): Promise<Located> {
    const located = await this.#locateOrNull(taskId, locate);
    if (located === null) throw new McpError(ErrorCode.InvalidParams, `run_not_found: No run ${taskId} is known.`);
    return located;
  }

  /**
   * Null for a task no pod knows, or one the caller may not read (the SDK answers "task not found");
   * `locate` may refuse more (a teammate's run is read, not cancelled).
   */
  async #locateOrNull(taskId: string, locate = locateRun): Promise<Located | null> {
    if (!runIdSchema.safeParse(taskId).success) return null;
    try {
      return await locate(this.#app.runs, taskId, readerOf(this.#app.authorizer, this.#caller.current));
    } catch (err) {
      if (!isGatewayError(err)) throw err;
      if (err.code === 'run_not_found') return null;
      throw new McpError(ErrorCode.InvalidParams, `${err.code}: ${err.message}`);
    }
  }
}

const textOf = (answer: CallToolResult): string => answer.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');

/** Starts the tool's run from its arguments (the caller authorized, the run admitted), or refuses. */
export type RunStarter<In extends z.ZodObject> = (args: z.output<In>, extra: Extra) => Promise<Run>;

/**
 * Registers a tool that starts a run, as a task tool. Its arguments are checked by the gateway's own
 * rules as every tool's are (`registerTool`); a refusal is a task that failed at once, whose result is
 * the refusal. A client that asked for a task gets it at once; one that did not is answered inline.
 */
export function registerRunTool<In extends z.ZodObject>(
  server: McpServer,
  app: FastifyInstance,
  tasks: RunTaskStore,
  name: string,
  config: ToolConfig<In>,
  start: RunStarter<In>,
): void {
  const { inputSchema, ...rest } = config;
  server.experimental.tasks.registerToolTask(
    name,
    { ...rest, inputSchema: listedAs(inputSchema), execution: { taskSupport: 'optional' } },
    {
      createTask: async (raw, extra) => {
        let run: Run;
        try {
          run = await start(parse(inputSchema, raw, 'arguments'), extra);
        } catch (err) {
          return { task: await extra.taskStore.createTask({ context: { refusal: refusal(err, app.log) } }) };
        }
        const task = await extra.taskStore.createTask({ context: { runId: run.id } });
        if (tasks.asked(task)) return { task };
        return { task: tasks.settleInline(task.taskId, await answerInline(app, run, extra, tasks)) };
      },
      // The SDK answers tasks/get and tasks/result from the store; the handler's own two say the same.
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    },
  );
}

/**
 * A call without a task follows its run (started detached: the call's end does not cancel it, the
 * client's cancellation does): with a progress token each evaluated turn is reported as progress
 * (its side too, in a comparison). Answers the report, or past MCP_RUN_WAIT_MS the run's id and
 * progress as a pending answer that points to get_run.
 */
async function answerInline(app: FastifyInstance, run: Run, extra: Extra, tasks: RunTaskStore): Promise<CallToolResult> {
  // By id, wherever the run is now: it may have moved since it started here.
  const onCancel = () => void cancelRun(app.runs, run.id, run.spec.callerId, 'the MCP client cancelled the call').catch(() => undefined);
  extra.signal.addEventListener('abort', onCancel, { once: true });
  const wait = new AbortController();
  const timer = setTimeout(() => wait.abort(), app.config.mcpRunWaitMs);
  const progress = progressOf(extra);
  try {
    for await (const line of runLines(app.runs, run.id, 0, AbortSignal.any([wait.signal, extra.signal]))) {
      const parsed = JSON.parse(line) as { turn?: TurnEvent & { side?: Side }; report?: object; error?: GatewayCode; message?: string };
      if (parsed.turn !== undefined) progress?.(parsed.turn);
      if (parsed.report !== undefined || parsed.error !== undefined) return tasks.getTaskResult(run.id);
    }
  } catch (err) {
    return refusal(err, app.log);
  } finally {
    clearTimeout(timer);
    extra.signal.removeEventListener('abort', onCancel);
  }
  return withPage(pendingResult(runView(run, app.runs.podName), app.config.mcpRunWaitMs), tasks.pageOf(run.id));
}

/**
 * With a progress token, each evaluated turn is reported as progress (its side too, in a
 * comparison). A turn streamed again (its attempt ran again after the run moved) is not counted
 * twice: progress only grows.
 */
function progressOf(extra: Extra): ((event: TurnEvent & { side?: Side }) => void) | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  const evaluated = new Set<string>();
  return (event) => {
    const key = `${event.side ?? ''}:${event.conversation_index}:${event.attempt}:${event.turn.index}`;
    if (evaluated.has(key)) return;
    evaluated.add(key);
    const attempt = event.attempt > 1 ? ` (attempt ${event.attempt})` : '';
    const side = event.side === undefined ? '' : `${event.side}: `;
    const message = `${side}${event.conversation}${attempt} turn ${event.turn.index}: ${event.turn.status}`;
    void extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: evaluated.size, message } })
      .catch(() => undefined);
  };
}
