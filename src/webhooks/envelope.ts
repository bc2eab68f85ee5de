import { randomBytes } from 'node:crypto';
import type { TaskStatus } from '../domain/task/task';
import type { AdcpRelease } from '../wire/version';

/** `whk_` + 128 random bits: unguessable, stable across the retries of one fire. */
export function newIdempotencyKey(): string {
  return `whk_${randomBytes(16).toString('base64url')}`;
}

export interface TaskEnvelopeInput {
  idempotencyKey: string;
  taskId: string;
  operationId: string;
  taskType: string;
  status: TaskStatus;
  timestamp: string;
  message: string;
  result?: Record<string, unknown>;
  context?: Record<string, unknown>;
  /** The status change's own id, stable across re-emissions (3.1's `notification_id`). */
  notificationId: string;
  /** The registration's `token`, if it set one (3.1 echoes it). */
  token?: string;
}

/**
 * The MCP-style task envelope (spec §2.7). `operation_id` is the registration's, verbatim;
 * `context` is the original request's, verbatim; `result` carries what the status means to the
 * buyer (the task's result, or the reason for input-required / failed / rejected / canceled).
 */
export function taskEnvelope(p: TaskEnvelopeInput): Record<string, unknown> {
  return {
    idempotency_key: p.idempotencyKey,
    task_id: p.taskId,
    operation_id: p.operationId,
    task_type: p.taskType,
    domain: 'media-buy',
    // AdCP 3.0's name for the same thing (mcp-webhook-payload).
    protocol: 'media-buy',
    status: p.status,
    timestamp: p.timestamp,
    message: p.message,
    ...(resultFor(p) ? { result: resultFor(p) } : {}),
    ...(p.context ? { context: p.context } : {}),
  };
}

/**
 * AdCP 3.1's task webhook (`core/mcp-webhook-payload.json` at 3.1.19): 3.0's, plus the status
 * change's `notification_id` (the same on a re-emission, where `idempotency_key` is new) and the
 * registration's `token`, verbatim, when it set one.
 */
export function taskEnvelope31(p: TaskEnvelopeInput): Record<string, unknown> {
  return { ...taskEnvelope(p), notification_id: p.notificationId, ...(p.token !== undefined ? { token: p.token } : {}) };
}

/** The task webhook each release sends (the release the task's call was answered in). */
export const TASK_ENVELOPES: Readonly<Record<AdcpRelease, (p: TaskEnvelopeInput) => Record<string, unknown>>> = { '3.0': taskEnvelope, '3.1': taskEnvelope31 };

/** A2A's final task states: a notification in one of them is the whole Task. */
const A2A_FINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** What the MCP-style envelope says, less its own fields, plus the A2A conversation. */
export type A2aEnvelopeInput = Omit<TaskEnvelopeInput, 'idempotencyKey' | 'operationId' | 'notificationId' | 'token'> & { contextId: string };

/**
 * The A2A-native task notification (spec §6: for a registration made the A2A way): in a final
 * state the A2A `Task`, whose first artifact's last DataPart carries what the MCP-style envelope
 * puts in `result`; in an interim state (`working`, `input-required`) a `TaskStatusUpdateEvent`
 * whose status message's first DataPart carries it. The request's `context` rides in that data.
 */
export function a2aTaskEnvelope(p: A2aEnvelopeInput, ids: { artifactId: string; messageId: string }): Record<string, unknown> {
  const result = resultFor(p);
  const text = { kind: 'text', text: p.message };
  if (A2A_FINAL.has(p.status)) {
    const data = { ...(result ?? { status: p.status }), ...(p.context ? { context: p.context } : {}) };
    return {
      kind: 'task',
      id: p.taskId,
      contextId: p.contextId,
      status: { state: p.status, timestamp: p.timestamp, message: { kind: 'message', role: 'agent', messageId: ids.messageId, taskId: p.taskId, contextId: p.contextId, parts: [text] } },
      artifacts: [{ artifactId: ids.artifactId, name: p.status === 'completed' ? 'result' : 'error', parts: [text, { kind: 'data', data }] }],
    };
  }
  const data = { task_id: p.taskId, task_type: p.taskType, status: p.status, message: p.message, ...result, ...(p.context ? { context: p.context } : {}) };
  return {
    kind: 'status-update',
    taskId: p.taskId,
    contextId: p.contextId,
    status: { state: p.status, timestamp: p.timestamp, message: { kind: 'message', role: 'agent', messageId: ids.messageId, taskId: p.taskId, contextId: p.contextId, parts: [{ kind: 'data', data }, text] } },
    final: false,
  };
}

function resultFor(p: { status: TaskStatus; message: string; result?: Record<string, unknown> }): Record<string, unknown> | undefined {
  switch (p.status) {
    case 'input-required':
      return { reason: p.message, ...p.result };
    case 'failed':
      return { errors: [{ code: 'TASK_FAILED', message: p.message }], ...p.result };
    case 'rejected':
      return { reason: p.message, ...p.result };
    default:
      return p.result;
  }
}
