import { mediaBuyDecider, mediaBuyStream, type MediaBuyState } from '../domain/media-buy/media-buy';
import { taskDecider, taskStream, type TaskState } from '../domain/task/task';
import type { EventStore } from '../eventstore/port';
import { AppError } from '../shared/errors';
import { handleCommand, type CommandContext } from './command-handler';
import { mediaBuyView } from './tasks/media-buy-tasks';

/** The operator's side of async approval: seller or admin keys act on a waiting task. */
async function loadTask(store: EventStore, taskId: string): Promise<Exclude<TaskState, { status: 'none' }>> {
  let state = taskDecider.initialState();
  for (const e of await store.readStream(taskStream(taskId))) state = taskDecider.evolve(state, e as never);
  if (state.status === 'none') throw new AppError('TASK_NOT_FOUND', `unknown task ${taskId}`, 'taskId');
  return state;
}

const changeTask = (store: EventStore, taskId: string, status: 'working' | 'completed' | 'rejected' | 'input-required' | 'failed', message: string, ctx: CommandContext, result?: Record<string, unknown>) =>
  handleCommand(store, taskStream(taskId), taskDecider, { type: 'ChangeTaskStatus', status, message, result, actor: ctx.principal ?? 'operator', now: ctx.now }, ctx);

export async function approveTask(store: EventStore, taskId: string, note: string | undefined, ctx: CommandContext): Promise<string> {
  const task = await loadTask(store, taskId);
  if (task.status !== 'submitted' && task.status !== 'input-required' && task.status !== 'working') {
    throw new AppError('INVALID_STATE', `task ${taskId} is ${task.status}`, 'taskId', { current_status: task.status });
  }
  if (task.status !== 'working') await changeTask(store, taskId, 'working', note ?? 'Approved by the seller; activating', ctx);
  try {
    const { state } = await handleCommand(store, mediaBuyStream(task.resourceId), mediaBuyDecider, { type: 'ApproveMediaBuy', taskId, note, now: ctx.now }, ctx);
    const buy = state as Exclude<MediaBuyState, { status: 'none' }>;
    await changeTask(store, taskId, 'completed', 'Media buy approved and active', ctx, mediaBuyView(buy.terms, buy.status));
  } catch (err) {
    await changeTask(store, taskId, 'failed', (err as Error).message, ctx).catch(() => {});
    throw err;
  }
  return 'completed';
}

export async function rejectTask(store: EventStore, taskId: string, reason: string, ctx: CommandContext): Promise<string> {
  const task = await loadTask(store, taskId);
  if (!reason.trim()) throw new AppError('VALIDATION_ERROR', 'a reason is required', 'reason');
  await handleCommand(store, mediaBuyStream(task.resourceId), mediaBuyDecider, { type: 'RejectMediaBuy', taskId, reason, now: ctx.now }, ctx);
  await changeTask(store, taskId, 'rejected', reason, ctx, { media_buy_id: task.resourceId, status: 'rejected', reason });
  return 'rejected';
}

export async function requestInput(store: EventStore, taskId: string, reason: string, ctx: CommandContext): Promise<string> {
  const task = await loadTask(store, taskId);
  if (!reason.trim()) throw new AppError('VALIDATION_ERROR', 'a reason is required', 'reason');
  await changeTask(store, taskId, 'input-required', reason, ctx, { media_buy_id: task.resourceId, reason: 'APPROVAL_REQUIRED', message: reason, errors: [] });
  return 'input-required';
}
