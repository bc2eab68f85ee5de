import { randomBytes } from 'node:crypto';
import type { TaskStatus } from '../domain/task/task';

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

function resultFor(p: TaskEnvelopeInput): Record<string, unknown> | undefined {
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
