import { mediaBuyDecider, mediaBuyStream, type MediaBuyState } from '../domain/media-buy/media-buy';
import { publicId } from '../shared/ids';
import { taskDecider, taskStream, type TaskState } from '../domain/task/task';
import type { EventStore } from '../eventstore/port';
import { AppError, failureMessage } from '../shared/errors';
import { handleCommand, loadState, type CommandContext } from './command-handler';
import { applySync, syncInput } from './tasks/creative-tasks';
import { lifecycleFacts, mediaBuyView } from './tasks/media-buy-tasks';
import { buyStatus3 } from '../wire/adcp3/answers';
import type { TaskPorts } from './ports';

/** The operator's side of async approval: seller or admin keys act on a waiting task. */
async function loadTask(store: EventStore, taskId: string): Promise<Exclude<TaskState, { status: 'none' }> & { request?: Record<string, unknown> }> {
  const { state, history } = await loadState(store, taskStream(taskId), taskDecider);
  const request = (history.find((e) => e.type === 'TaskSubmitted')?.data as { request?: Record<string, unknown> } | undefined)?.request;
  if (state.status === 'none') throw new AppError('TASK_NOT_FOUND', `unknown task ${taskId}`, 'taskId');
  return { ...state, request };
}

const changeTask = (store: EventStore, taskId: string, status: 'working' | 'completed' | 'rejected' | 'input-required' | 'failed', message: string, ctx: CommandContext, result?: Record<string, unknown>) =>
  handleCommand(store, taskStream(taskId), taskDecider, { type: 'ChangeTaskStatus', status, message, result, actor: ctx.principal ?? 'operator', now: ctx.now }, ctx);

export async function approveTask(ports: TaskPorts, taskId: string, note: string | undefined, ctx: CommandContext): Promise<string> {
  const store = ports.store;
  const task = await loadTask(store, taskId);
  if (task.status !== 'submitted' && task.status !== 'input-required' && task.status !== 'working') {
    throw new AppError('INVALID_STATE', `task ${taskId} is ${task.status}`, 'taskId', { current_status: task.status });
  }
  if (task.status !== 'working') await changeTask(store, taskId, 'working', note ?? 'Approved by the seller; activating', ctx);
  try {
    if (task.taskType === 'sync_creatives') {
      // The buyer's sync, carried out now on the buyer's behalf.
      const principal = { keyId: ctx.principal ?? 'operator', org: task.owner, role: 'buyer' as const };
      const result = await applySync({ ports, principal, requestId: ctx.correlationId }, syncInput.parse(task.request ?? {}), false);
      await changeTask(store, taskId, 'completed', 'Creatives approved and synced', ctx, result);
      return 'completed';
    }
    const { state } = await handleCommand(store, mediaBuyStream(task.resourceId), mediaBuyDecider, { type: 'ApproveMediaBuy', taskId, note, now: ctx.now }, ctx);
    const buy = state as Exclude<MediaBuyState, { status: 'none' }>;
    const result = mediaBuyView(buy.terms, buy.status, { revision: buy.revision, ...(buy.confirmedAt ? { confirmed_at: buy.confirmedAt } : {}), ...lifecycleFacts(buy) });
    await changeTask(store, taskId, 'completed', approvedMessage(result, new Date(ctx.now)), ctx, result);
  } catch (err) {
    // The seller's call gets the error itself; the task (the buyer's, and the public stream's) a fixed sentence.
    await changeTask(store, taskId, 'failed', failureMessage(err), ctx).catch(() => {});
    throw err;
  }
  return 'completed';
}

/**
 * The completion message of an approved buy, told from the status its result shows (the 3.0
 * one, the finer): approved is not yet serving while it waits for creatives or its flight.
 */
function approvedMessage(view: ReturnType<typeof mediaBuyView>, now: Date): string {
  switch (buyStatus3(view, now)) {
    case 'pending_creatives':
      return 'Media buy approved; it serves once creatives are assigned (sync_creatives)';
    case 'pending_start':
      return `Media buy approved; its flight starts ${view.start_time}`;
    case 'active':
      return 'Media buy approved and active';
    default:
      return `Media buy approved; now ${buyStatus3(view, now)}`;
  }
}

export async function rejectTask(ports: TaskPorts, taskId: string, reason: string, ctx: CommandContext): Promise<string> {
  const store = ports.store;
  const task = await loadTask(store, taskId);
  if (!reason.trim()) throw new AppError('VALIDATION_ERROR', 'a reason is required', 'reason');
  if (task.taskType === 'create_media_buy') {
    await handleCommand(store, mediaBuyStream(task.resourceId), mediaBuyDecider, { type: 'RejectMediaBuy', taskId, reason, now: ctx.now }, ctx);
    await changeTask(store, taskId, 'rejected', reason, ctx, { media_buy_id: publicId(task.resourceId), status: 'rejected', reason });
  } else {
    await changeTask(store, taskId, 'rejected', reason, ctx, { reason });
  }
  return 'rejected';
}

export async function requestInput(ports: TaskPorts, taskId: string, reason: string, ctx: CommandContext): Promise<string> {
  const task = await loadTask(ports.store, taskId);
  if (!reason.trim()) throw new AppError('VALIDATION_ERROR', 'a reason is required', 'reason');
  const about = task.taskType === 'create_media_buy' ? { media_buy_id: publicId(task.resourceId) } : {};
  await changeTask(ports.store, taskId, 'input-required', reason, ctx, { ...about, reason: 'APPROVAL_REQUIRED', message: reason, errors: [] });
  return 'input-required';
}
