import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type {
  AgentCard,
  Artifact,
  DeleteTaskPushNotificationConfigParams,
  GetTaskPushNotificationConfigParams,
  ListTaskPushNotificationConfigParams,
  Message,
  MessageSendParams,
  Task,
  TaskArtifactUpdateEvent,
  TaskIdParams,
  TaskPushNotificationConfig,
  TaskQueryParams,
  TaskState,
  TaskStatusUpdateEvent,
} from '@a2a-js/sdk';
import { A2AError, type A2ARequestHandler } from '@a2a-js/sdk/server';
import { taskStream, type A2aTaskRegistration, type TaskEvent } from '../../domain/task/task';
import { taskResultIn } from '../../wire/codecs';
import { assertDeliverableUrl } from '../../shared/url-guard';
import { pushNotificationConfigSchema } from '../../application/tasks/media-buy-tasks';
import { newEventId, ownerScopedId } from '../../shared/ids';
import { isObject } from '../../shared/objects';
import { INTERNAL_ERROR, INVALID_PARAMS, jsonTypeOf, SERVER_ERROR } from '../json-rpc';
import { callTool, type McpContext } from '../mcp/tools';
import { followLog } from '../../application/live';
import { firstTaskEvent, releaseOf, taskEvents } from '../../application/task-reads';
import type { CompletedTasks } from './completed-tasks';

type Obj = Record<string, unknown>;
type Submitted = Extract<TaskEvent, { type: 'TaskSubmitted' }>['data'];
type StatusChange = Extract<TaskEvent, { type: 'TaskStatusChanged' }>['data'];

/** A2A's final task states. */
const FINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** The longest a stream stays open (a caller that still waits resubscribes). */
export const STREAM_MAX_MS = 10 * 60_000;

/** AdCP task statuses a call may answer with while the work goes on (the task id names it). */
const PENDING: ReadonlySet<string> = new Set(['submitted', 'working', 'input-required']);

/** Why a message part is not an A2A 0.3 Part (text, file or data), if it is not. */
function partProblem(part: unknown, i: number): string | undefined {
  const at = `message.parts[${i}]`;
  if (!isObject(part)) return `${at} must be a Part object { kind: "text" | "file" | "data", … }, not ${jsonTypeOf(part)}`;
  switch (part.kind) {
    case 'text':
      return typeof part.text === 'string' ? undefined : `${at}.text must be a string, not ${jsonTypeOf(part.text)}`;
    case 'file':
      return isObject(part.file) ? undefined : `${at}.file must be an object, not ${jsonTypeOf(part.file)}`;
    case 'data':
      // The DataPart's own payload is judged by invocationOf, where it names the task.
      return undefined;
    default:
      return `${at}.kind must be "text", "file" or "data"`;
  }
}

/**
 * What a message asks: the AdCP task (a skill of the agent card) and its input. A message that is
 * not A2A's Message (parts an array of Parts) is refused as invalid params, naming what is wrong.
 */
function invocationOf(message: Record<string, unknown>): { skill: string; input: Obj } {
  const parts = message.parts ?? [];
  if (!Array.isArray(parts)) throw A2AError.invalidParams(`message.parts must be an array of Parts, not ${jsonTypeOf(parts)}`);
  const problem = parts.map(partProblem).find((p) => p !== undefined);
  if (problem) throw A2AError.invalidParams(problem);
  const data = parts.filter((p: { kind?: unknown }) => p.kind === 'data');
  if (data.length !== 1) {
    throw A2AError.invalidParams(`a message must carry exactly one DataPart { skill, input } (this one has ${data.length}); text is not routed to AdCP tasks`);
  }
  const payload = (data[0] as { data?: unknown }).data;
  if (!isObject(payload)) throw A2AError.invalidParams(`the DataPart data must be an object { skill, input }, not ${jsonTypeOf(payload)}`);
  const { skill } = payload;
  // `parameters` is what @adcp/sdk's A2A client sends; `input` what its A2A server documents.
  const input = payload.input ?? payload.parameters;
  if (typeof skill !== 'string' || skill.length === 0) throw A2AError.invalidParams('the DataPart must name the AdCP task in a non-empty string `skill` (one of the agent card\'s skills)');
  if (input !== undefined && !isObject(input)) throw A2AError.invalidParams(`the DataPart \`input\` (or \`parameters\`) must be an object, not ${jsonTypeOf(input)}`);
  return { skill, input: input ?? {} };
}

/**
 * The sales agent over A2A: each `message/send` runs one AdCP task through the same tools as MCP
 * (one domain, AdCP 3.0 answers), and answers an A2A Task, completed with the call, whose first
 * artifact's DataPart is the AdCP response (kept a while for `tasks/get`). Work that goes on (a
 * buy awaiting seller approval) is the AdCP task the artifact names: as an A2A task with that id,
 * `tasks/get` shows it in its AdCP status (submitted, working, input-required, then completed with
 * its result, or failed / rejected / canceled), read from the event-sourced task.
 */
export class AdcpA2AHandler implements A2ARequestHandler {
  constructor(
    /** Built only when asked for (the transport asks only before streaming, which the route serves itself). */
    private readonly card: () => AgentCard,
    private readonly ctx: McpContext,
    private readonly completed: CompletedTasks,
    /** Aborted when the caller goes away: an open stream stops following its task. */
    private readonly signal: AbortSignal = new AbortController().signal,
  ) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.card();
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw A2AError.authenticatedExtendedCardNotConfigured();
  }

  async sendMessage(params: MessageSendParams): Promise<Task> {
    const message: unknown = params.message;
    if (!isObject(message)) throw A2AError.invalidParams(`params.message must be a Message object, not ${jsonTypeOf(message)}`);
    if (typeof message.messageId !== 'string' || message.messageId.length === 0) throw A2AError.invalidParams('message.messageId is required');
    const configuration: unknown = params.configuration;
    if (configuration !== undefined && !isObject(configuration)) throw A2AError.invalidParams(`params.configuration must be an object, not ${jsonTypeOf(configuration)}`);
    // A message naming a taskId is another call in that conversation: AdCP tasks move on through
    // the seller (approval) or a new call, never through a reply, and @adcp/sdk's client names
    // the last task it saw on every later call of a session.
    const { skill, input } = invocationOf(message);
    const contextId = typeof message.contextId === 'string' && message.contextId.length > 0 ? message.contextId : newEventId();
    const push = await this.pushConfigOf(params.configuration?.pushNotificationConfig);
    const result = await callTool(skill, input, { ...this.ctx, a2a: { context_id: contextId, ...(push ? { push_notification_config: push } : {}) } });
    const task = taskOfAnswer(result, { contextId, message: message as unknown as Message, now: this.ctx.app.clock().toISOString(), task: skill === 'call_adcp_agent' && typeof input.task === 'string' ? input.task : skill });
    this.completed.keep(this.ctx.principal.org, task);
    return task;
  }

  async getTask(params: TaskQueryParams): Promise<Task> {
    const id = taskIdOf(params);
    const kept = this.completed.find(this.ctx.principal.org, id);
    if (kept) return withHistoryLength(kept, params.historyLength);
    const answer = await callTool('tasks_get', { task_id: id, include_result: true }, this.ctx);
    const data = (answer.structuredContent ?? {}) as Obj;
    if (answer.isError) throw taskReadError(id, data.adcp_error);
    return taskOfAdcpTask(data, await this.contextIdOf(id));
  }

  async cancelTask(params: TaskIdParams): Promise<Task> {
    const task = await this.getTask(params);
    // Finished tasks cannot be canceled (A2A); pending ones end through the seller or the buy.
    throw new A2AError(-32002, `Task not cancelable: ${task.id} is ${task.status.state}; ${task.status.state === 'submitted' || task.status.state === 'working' || task.status.state === 'input-required' ? 'the seller decides it' : 'it has ended'}`, undefined, task.id);
  }

  async setTaskPushNotificationConfig(_params: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    throw A2AError.unsupportedOperation('a task\'s push notification config is set when it starts: send configuration.pushNotificationConfig with message/send');
  }

  async getTaskPushNotificationConfig(params: TaskIdParams | GetTaskPushNotificationConfigParams): Promise<TaskPushNotificationConfig> {
    const [config] = await this.listTaskPushNotificationConfigs({ id: taskIdOf(params) });
    if (!config) throw A2AError.invalidParams(`task ${params.id} has no push notification config`);
    return config;
  }

  async listTaskPushNotificationConfigs(params: ListTaskPushNotificationConfigParams): Promise<TaskPushNotificationConfig[]> {
    const id = taskIdOf(params);
    const registration = await this.registrationOf(id);
    if (!registration && !this.completed.find(this.ctx.principal.org, id)) await this.getTask({ id }); // not found: say so
    const push = registration?.push_notification_config;
    // Credentials stay with the seller: the config is shown without them.
    return push ? [{ taskId: id, pushNotificationConfig: { id, url: push.url, ...(push.authentication ? { authentication: { schemes: [...push.authentication.schemes] } } : {}) } }] : [];
  }

  async deleteTaskPushNotificationConfig(_params: DeleteTaskPushNotificationConfigParams): Promise<void> {
    throw A2AError.unsupportedOperation('a task\'s push notification config stays for its life');
  }

  /**
   * `message/stream`: the call as `message/send` makes it; an answer that ended with the call is
   * that one Task. A pending answer streams the AdCP task it names, as the work goes: the Task in
   * its current state (the submitted arm as its artifact), a status update for each change
   * (`working`, `input-required`), and at the end the result as an artifact update and the final
   * status (`final: true`).
   */
  async *sendMessageStream(params: MessageSendParams): AsyncGenerator<Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent, void, undefined> {
    const call = await this.sendMessage(params);
    const adcpTaskId = call.artifacts?.[0]?.metadata?.adcp_task_id;
    if (typeof adcpTaskId !== 'string') {
      yield call;
      return;
    }
    yield* this.follow(adcpTaskId, call.artifacts![0]!);
  }

  /** `tasks/resubscribe`: a task's stream again, from its current state (a call's own Task, if kept, as it ended). */
  async *resubscribe(params: TaskIdParams): AsyncGenerator<Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent, void, undefined> {
    const id = taskIdOf(params);
    const kept = this.completed.find(this.ctx.principal.org, id);
    if (kept) {
      yield kept;
      return;
    }
    yield* this.follow(id);
  }

  /**
   * Follows the caller's AdCP task from its event stream (every status change, in order, on any
   * instance) for at most STREAM_MAX_MS, until a final state or until the caller goes away. The
   * changes come from the live log (pushed as this instance sees them, not polled); it is
   * followed before the stream is read, so a change between the two is in one or the other.
   */
  private async *follow(publicTaskId: string, submittedArtifact?: Artifact): AsyncGenerator<Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent, void, undefined> {
    const found = await this.taskStreamOf(publicTaskId);
    if (!found) throw A2AError.taskNotFound(publicTaskId);
    const { streamId, submitted } = found;
    const contextId = submitted.a2a?.context_id ?? publicTaskId;
    const live = followLog(this.ctx.app.ports, undefined, (e) => (e.streamId === streamId ? e : undefined));
    const end = () => void live.return?.();
    const timer = setTimeout(end, STREAM_MAX_MS);
    this.signal.addEventListener('abort', end, { once: true });
    try {
      await live.ready; // following before reading: a change in between is in one or the other
      const events = await taskEvents(this.ctx.app.ports, streamId);
      let version = events.length;
      const changes = events.filter((e) => e.type === 'TaskStatusChanged').map((e) => e.data as StatusChange);
      const current = changes.at(-1);
      const state = (current?.status ?? 'submitted') as TaskState;
      if (FINAL.has(state)) {
        yield { kind: 'task', id: publicTaskId, contextId, status: { state, timestamp: current!.at }, artifacts: [this.outcomeArtifact(submitted, current!)] };
        return;
      }
      yield {
        kind: 'task',
        id: publicTaskId,
        contextId,
        status: { state, timestamp: current?.at ?? submitted.at, message: statusMessage(publicTaskId, contextId, { task_id: publicTaskId, status: state, message: current?.message ?? submitted.message }) },
        ...(submittedArtifact ? { artifacts: [submittedArtifact] } : {}),
      };
      if (this.signal.aborted) return;
      for await (const e of live) {
        if (e.streamVersion <= version) continue; // read with the stream already
        version = e.streamVersion;
        if (e.type !== 'TaskStatusChanged') continue;
        const change = e.data as StatusChange;
        const changed = change.status as TaskState;
        if (FINAL.has(changed)) {
          yield { kind: 'artifact-update', taskId: publicTaskId, contextId, artifact: this.outcomeArtifact(submitted, change), append: false, lastChunk: true };
          yield { kind: 'status-update', taskId: publicTaskId, contextId, status: { state: changed, timestamp: change.at }, final: true };
          return;
        }
        yield {
          kind: 'status-update',
          taskId: publicTaskId,
          contextId,
          status: { state: changed, timestamp: change.at, message: statusMessage(publicTaskId, contextId, { task_id: publicTaskId, status: changed, message: change.message, ...change.result }) },
          final: false,
        };
      }
    } finally {
      clearTimeout(timer);
      this.signal.removeEventListener('abort', end);
      end();
    }
  }

  /** What a task ended with: its result in the release its call was answered in, or why it did not complete. */
  private outcomeArtifact(submitted: Submitted, change: StatusChange): Artifact {
    if (change.status === 'completed' && change.result) return artifact('result', { ...taskResultIn(releaseOf(submitted), submitted.task_type, change.result, new Date(change.at)), ...(submitted.context ? { context: submitted.context } : {}) });
    return artifact('error', { status: change.status, message: change.message, ...(submitted.context ? { context: submitted.context } : {}) });
  }

  /** The caller's AdCP task's stream and how it was submitted (undefined for another buyer's, or none). */
  private async taskStreamOf(publicTaskId: string): Promise<{ streamId: string; submitted: Submitted } | undefined> {
    for (const id of [ownerScopedId(this.ctx.principal.org, publicTaskId), publicTaskId]) {
      const first = await firstTaskEvent(this.ctx.app.ports, id);
      const data = first?.data as Submitted | undefined;
      if (first?.type === 'TaskSubmitted' && data?.owner === this.ctx.principal.org) return { streamId: taskStream(id), submitted: data };
    }
    return undefined;
  }

  /** The conversation a task was started in over A2A (its id stands in for one started elsewhere). */
  private async contextIdOf(publicTaskId: string): Promise<string> {
    return (await this.registrationOf(publicTaskId))?.context_id ?? publicTaskId;
  }

  /** How the caller's AdCP task was registered over A2A, if it was (undefined for another buyer's, or none). */
  private async registrationOf(publicTaskId: string): Promise<A2aTaskRegistration | undefined> {
    return (await this.taskStreamOf(publicTaskId))?.submitted.a2a;
  }

  /**
   * An A2A-native push registration (`configuration.pushNotificationConfig`): a deliverable URL (the
   * same guard as every webhook URL), and optionally the legacy schemes' `authentication`, as
   * AdCP's `push_notification_config` takes it; without one, notifications are RFC 9421-signed.
   */
  private async pushConfigOf(raw: unknown): Promise<A2aTaskRegistration['push_notification_config']> {
    if (raw === undefined) return undefined;
    const field = 'configuration.pushNotificationConfig';
    if (!isObject(raw) || typeof raw.url !== 'string') throw A2AError.invalidParams(`${field} must be an object with a url`);
    try {
      await assertDeliverableUrl(raw.url, `${field}.url`, this.ctx.app.config.allowPrivateWebhookUrls);
    } catch (err) {
      throw A2AError.invalidParams(`${field}.url: ${(err as Error).message}`);
    }
    if (raw.authentication === undefined) return { url: raw.url };
    // The same rule as AdCP's push_notification_config.authentication.
    const auth = pushNotificationConfigSchema.shape.authentication.safeParse(raw.authentication);
    if (!auth.success || !auth.data) {
      throw A2AError.invalidParams(`${field}.authentication must be { schemes: ["HMAC-SHA256"] or ["Bearer"], credentials: at least 32 characters } (or left out: notifications are then RFC 9421-signed)`);
    }
    return { url: raw.url, authentication: { schemes: auth.data.schemes, credentials: auth.data.credentials } };
  }
}

/**
 * Why a task could not be read, as JSON-RPC says it: not found (A2A's -32001), a request at fault
 * (-32602), or anything else AdCP refused (a role that may not read tasks) as a server error, each
 * with AdCP's error under `data` as a transport error carries it; -32603 only for our own fault.
 */
function taskReadError(id: string, adcpError: unknown): A2AError {
  const { code, message } = (isObject(adcpError) ? adcpError : {}) as { code?: string; message?: string };
  if (code === 'TASK_NOT_FOUND' || code === 'REFERENCE_NOT_FOUND') return A2AError.taskNotFound(id);
  const rpcCode = code === 'INVALID_REQUEST' || code === 'VALIDATION_ERROR' ? INVALID_PARAMS : code === 'SERVICE_UNAVAILABLE' ? INTERNAL_ERROR : SERVER_ERROR;
  return new A2AError(rpcCode, message ?? 'the task could not be read', { adcp_error: adcpError });
}

function taskIdOf(params: TaskIdParams): string {
  if (!isObject(params) || typeof params.id !== 'string' || params.id.length === 0) throw A2AError.invalidParams('params.id (the task id) is required');
  return params.id;
}

function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined || !task.history) return task;
  return { ...task, history: historyLength > 0 ? task.history.slice(-historyLength) : [] };
}

function artifact(name: string, data: Obj, adcpTaskId?: string, lead?: string): Artifact {
  return { artifactId: newEventId(), name, parts: [...(lead ? [{ kind: 'text' as const, text: lead }] : []), { kind: 'data', data }], ...(adcpTaskId ? { metadata: { adcp_task_id: adcpTaskId } } : {}) };
}

/** The answers whose top-level `status` is the media buy's (AdCP 3.0's create and update success arms). */
const BUY_STATUS_ANSWERS: ReadonlySet<string> = new Set(['create_media_buy', 'update_media_buy']);

/**
 * On A2A the first part's `status` is the AdCP task status (@adcp/sdk reads it so, and the
 * runner checks a submitted arm there): an answer whose `status` is the buy's own (a canceled
 * buy is not a canceled call) leads with a TextPart saying so, and its DataPart follows whole.
 */
function buyStatusLead(task: string, data: Obj): string | undefined {
  if (!BUY_STATUS_ANSWERS.has(task) || typeof data.status !== 'string' || PENDING.has(data.status)) return undefined;
  return typeof data.media_buy_id === 'string' ? `Media buy ${data.media_buy_id} is ${data.status}.` : `The media buy is ${data.status}.`;
}

/** A status message for a task still pending: its AdCP words and data (A2A interim states carry them there). */
function statusMessage(taskId: string, contextId: string, data: Obj): Message {
  const text = typeof data.message === 'string' ? data.message : undefined;
  return { kind: 'message', role: 'agent', messageId: newEventId(), taskId, contextId, parts: [...(text ? [{ kind: 'text' as const, text }] : []), { kind: 'data', data }] };
}

/**
 * The A2A task for one call's answer. Its state is the call's: `completed` once the answer is in,
 * whatever the AdCP payload says (@adcp/sdk's A2A contract, adcontextprotocol/adcp-client#899:
 * A2A `Task.state` follows the transport call, the AdCP `status` in the artifact follows the
 * work). A pending answer (`submitted` with a `task_id`) names the AdCP task on the artifact's
 * `metadata.adcp_task_id`: `tasks/get` with that id follows the work to its end. An AdCP error
 * answer is a completed call whose artifact, named `error`, carries `adcp_error` and `errors[]`
 * (the SDK's client reads errors only from a completed task's artifact).
 */
export function taskOfAnswer(result: CallToolResult, call: { contextId: string; message: Message; now: string; task: string }): Task {
  const data = (result.structuredContent ?? {}) as Obj;
  const adcpTaskId = !result.isError && typeof data.task_id === 'string' && typeof data.status === 'string' && PENDING.has(data.status) ? data.task_id : undefined;
  const id = newEventId();
  return {
    kind: 'task',
    id,
    contextId: call.contextId,
    status: { state: 'completed', timestamp: call.now },
    artifacts: [artifact(result.isError ? 'error' : adcpTaskId ? 'submitted' : 'result', data, adcpTaskId, result.isError ? undefined : buyStatusLead(call.task, data))],
    history: [{ ...call.message, taskId: id, contextId: call.contextId }],
  };
}

/** The A2A task for an AdCP task as `tasks_get` answers it (3.0): its status, and its result once completed. */
export function taskOfAdcpTask(t: Obj, contextId: string): Task {
  const id = String(t.task_id);
  const state = t.status as TaskState;
  const at = typeof t.updated_at === 'string' ? t.updated_at : undefined;
  const finished = state === 'completed' || state === 'failed' || state === 'canceled' || state === 'rejected';
  const outcome = state === 'completed' && isObject(t.result) ? artifact('result', t.result) : finished ? artifact('error', { status: state, ...(t.message ? { message: t.message } : {}), ...(t.error ? { error: t.error } : {}) }) : undefined;
  return {
    kind: 'task',
    id,
    contextId,
    status: { state, ...(at ? { timestamp: at } : {}), ...(!finished ? { message: statusMessage(id, contextId, t) } : {}) },
    ...(outcome ? { artifacts: [outcome] } : {}),
  };
}
