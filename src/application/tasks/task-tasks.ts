import { z } from 'zod';
import type { TaskRow, TaskSort } from '../../../projections/media-buys';
import { TERMINAL, type TaskStatus } from '../../domain/task/task';
import { AppError } from '../../shared/errors';
import { publicId } from '../../shared/ids';
import { DEFAULT_VERSION } from '../../wire/version';
import { ownedTask, ownedTasks, type OwnedTask } from '../task-reads';
import { paginationInput } from '../validation';
import { defineTask, type TaskContext } from './context';

/**
 * The caller's asynchronous tasks: AdCP 3.0's `tasks_get` / `tasks_list` and 3.1's names for the
 * same reads, `get_task_status` / `list_tasks` (3.1.19 calls them aliases of the legacy surface),
 * each answered from one read of the caller's own tasks (`../task-reads`).
 */

const isoDate = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: 'must be an ISO 8601 date-time' });

/** The task statuses AdCP names (3.1 adds auth-required and unknown; no task here is ever in them). */
const TASK_STATUSES = ['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled', 'rejected', 'auth-required', 'unknown'] as const;

/** The one AdCP protocol this agent's tasks belong to. */
const PROTOCOL = 'media-buy';

/** The caller's task, or REFERENCE_NOT_FOUND (TASK_NOT_FOUND here): another buyer's is not told apart from none. */
async function callerTask(ctx: TaskContext, taskId: string): Promise<OwnedTask> {
  const t = await ownedTask(ctx.ports, ctx.principal.org, taskId);
  if (!t) throw new AppError('TASK_NOT_FOUND', 'no task of yours has this task_id', 'task_id');
  return t;
}

/**
 * The release the task's call was answered in, for the MCP and A2A codecs: they write its result
 * in that release, whichever release the asking call negotiated (`wire/codecs.ts`). Only a
 * release other than 3.0 is named, so 3.0 reads answer as they always did.
 */
function releaseField(ctx: TaskContext, t: OwnedTask): { adcp_version?: string } {
  return ctx.wire === 'adcp3' && t.release !== DEFAULT_VERSION ? { adcp_version: t.release } : {};
}

const isTerminal = (status: string) => TERMINAL.includes(status as TaskStatus);

/** What every read of one task answers first: which task, its status and its times. */
function taskHead(t: Awaited<ReturnType<typeof callerTask>>) {
  return { task_id: publicId(t.task_id), task_type: t.task_type, status: t.status, message: t.message, created_at: t.created_at, updated_at: t.updated_at };
}

export const tasksGet = defineTask({
  description: 'Status, result and history of an asynchronous task.',
  input: z.object({ task_id: z.string().min(1), include_result: z.boolean().optional() }).passthrough(),
  async run(input, ctx) {
    const t = await callerTask(ctx, input.task_id);
    return {
      ...taskHead(t),
      ...(t.result ? { result: t.result } : {}),
      history: t.history,
      ...releaseField(ctx, t),
    };
  },
});

export const getTaskStatus = defineTask({
  description: 'AdCP 3.1\'s task poll: status of an asynchronous task; its result with include_result, its history with include_history.',
  input: z
    .object({
      task_id: z.string().min(1).max(255),
      include_history: z.boolean().optional(),
      include_result: z.boolean().optional(),
    })
    .passthrough(),
  async run(input, ctx) {
    const t = await callerTask(ctx, input.task_id);
    return {
      ...taskHead(t),
      ...(isTerminal(t.status) ? { completed_at: t.updated_at } : {}),
      has_webhook: t.push_notification_config !== null,
      // 3.1: "when true, sellers MUST include result on the response when status is completed".
      ...(input.include_result && t.status === 'completed' && t.result ? { result: t.result } : {}),
      ...(t.status === 'failed' ? { error: { code: 'TASK_FAILED', message: t.message } } : {}),
      ...(input.include_history ? { history: t.history } : {}),
      ...releaseField(ctx, t),
    };
  },
});

const SORT_FIELDS = ['created_at', 'updated_at', 'status', 'task_type', 'protocol'] as const;

/** What list_tasks (and tasks_list) filter by, as 3.1.19's request (and 3.0.6's) names them. */
const FILTERS = {
  protocol: z.string().min(1).max(64).optional(),
  protocols: z.array(z.string().min(1).max(64)).min(1).max(20).optional(),
  status: z.enum(TASK_STATUSES).optional(),
  statuses: z.array(z.enum(TASK_STATUSES)).min(1).optional(),
  task_type: z.string().min(1).max(64).optional(),
  task_types: z.array(z.string().min(1).max(64)).min(1).max(50).optional(),
  created_after: isoDate.optional(),
  created_before: isoDate.optional(),
  updated_after: isoDate.optional(),
  updated_before: isoDate.optional(),
  task_ids: z.array(z.string().min(1).max(255)).min(1).max(100).optional(),
  context_contains: z.string().min(1).max(255).optional(),
  has_webhook: z.boolean().optional(),
};

const tasksListInput = z
  .object({
    filters: z.object(FILTERS).passthrough().optional(),
    sort: z
      .object({ field: z.enum(SORT_FIELDS).default('created_at'), direction: z.enum(['asc', 'desc']).default('desc') })
      .passthrough()
      .optional(),
    pagination: paginationInput.optional(),
  })
  .passthrough();

/** The column a sort field orders by: every task here is a media-buy task, so `protocol` ties and orders as created_at. */
const SORT_COLUMN: Readonly<Record<(typeof SORT_FIELDS)[number], TaskSort['column']>> = { created_at: 'created_at', updated_at: 'updated_at', status: 'status', task_type: 'task_type', protocol: 'created_at' };

/** A page's cursor: the last row's sort value and its id (the keyset the next page starts after). */
const cursorOf = (value: string, taskId: string) => Buffer.from(`${value}\u0000${taskId}`).toString('base64url');

function afterCursor(cursor: string, column: TaskSort['column']): { value: string; task_id: string } {
  const [value, task_id] = Buffer.from(cursor, 'base64url').toString('utf8').split('\u0000');
  const isTime = column === 'created_at' || column === 'updated_at';
  if (!value || !task_id || (isTime && Number.isNaN(Date.parse(value)))) throw new AppError('VALIDATION_ERROR', 'cursor is not one this agent issued', 'pagination.cursor');
  return { value, task_id };
}

/** Which of the request's filters narrowed the list (query_summary.filters_applied). */
const appliedFilters = (f: Record<string, unknown>) => Object.keys(FILTERS).filter((k) => f[k] !== undefined);

export const tasksList = defineTask({
  description: 'The caller\'s asynchronous tasks, newest first unless sorted otherwise, with filters and a cursor.',
  input: tasksListInput,
  async run(input, ctx) {
    const f = input.filters ?? {};
    const sort = { field: input.sort?.field ?? 'created_at', direction: input.sort?.direction ?? 'desc' } as const;
    const column = SORT_COLUMN[sort.field];
    const limit = input.pagination?.max_results ?? 50;
    const after = input.pagination?.cursor !== undefined ? afterCursor(input.pagination.cursor, column) : undefined;
    const protocols = f.protocols ?? (f.protocol ? [f.protocol] : undefined);
    // A filter on another protocol matches nothing here (every task is a media-buy task).
    const { rows, total } = protocols && !protocols.includes(PROTOCOL)
      ? { rows: [] as Omit<TaskRow, 'history' | 'result'>[], total: 0 }
      : await ownedTasks(ctx.ports, ctx.principal.org, {
          statuses: f.statuses ?? (f.status ? [f.status] : undefined),
          types: f.task_types ?? (f.task_type ? [f.task_type] : undefined),
          taskIds: f.task_ids,
          createdAfter: f.created_after && new Date(f.created_after).toISOString(),
          createdBefore: f.created_before && new Date(f.created_before).toISOString(),
          updatedAfter: f.updated_after && new Date(f.updated_after).toISOString(),
          updatedBefore: f.updated_before && new Date(f.updated_before).toISOString(),
          hasWebhook: f.has_webhook,
          resourceContains: f.context_contains,
          sort: { column, direction: sort.direction },
          after,
          limit: limit + 1,
        });
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    const last = page[page.length - 1];
    return {
      query_summary: { total_matching: total, returned: page.length, filters_applied: appliedFilters(f), sort_applied: sort },
      tasks: page.map((t) => ({
        task_id: publicId(t.task_id),
        task_type: t.task_type,
        domain: PROTOCOL,
        status: t.status,
        created_at: t.created_at,
        updated_at: t.updated_at,
        ...(isTerminal(t.status) ? { completed_at: t.updated_at } : {}),
        has_webhook: t.push_notification_config !== null,
      })),
      pagination: { has_more: hasMore, ...(hasMore && last ? { cursor: cursorOf(String(last[column]), last.task_id) } : {}) },
    };
  },
});

/** AdCP 3.1's name for tasks_list, the same read (3.1.19: "preserving the legacy 3.x payload shape"). */
export const listTasks = defineTask({ ...tasksList, description: 'AdCP 3.1\'s task list: the caller\'s asynchronous tasks, with filters, sort and a cursor.' });
