import { appendOnce } from '../command-handler';
import { taskStream } from '../../domain/task/task';
import { recordedRelease, type TaskContext } from './context';

/** The release as the event names it (`adcp_version`). */
const releaseField = (ctx: TaskContext) => {
  const { adcpVersion } = recordedRelease(ctx);
  return adcpVersion ? { adcp_version: adcpVersion } : {};
};

/**
 * AdCP 3.0: "the publisher sends webhooks when status changes (working, input-required,
 * completed, failed)", and 3.0 buyers (and the official runner) expect the `completed` one even
 * when the answer itself was synchronous. The spec's callers are not told (their rule: a
 * synchronous answer creates no task). Recorded as a task submitted and completed in one append,
 * under an id derived from the resource, so a retried request notifies once; the webhook
 * dispatcher sends it like any other task status change.
 */
export async function recordSyncCompletion(
  ctx: TaskContext,
  p: { taskType: string; resourceId: string; pushNotificationConfig: Record<string, unknown>; context?: Record<string, unknown>; result: Record<string, unknown>; now: string },
): Promise<void> {
  const taskId = `task_sync_${p.resourceId}`;
  const metadata = { time: p.now, principal: ctx.principal.keyId, ...(ctx.requestId ? { correlationId: ctx.requestId } : {}) };
  await appendOnce(ctx.ports.store, taskStream(taskId), [
    {
      type: 'TaskSubmitted',
      data: { task_id: taskId, task_type: p.taskType, owner: ctx.principal.org, resource_id: p.resourceId, push_notification_config: p.pushNotificationConfig, ...(p.context ? { context: p.context } : {}), wire: 'adcp3', ...releaseField(ctx), message: 'Completed synchronously', at: p.now },
      metadata,
    },
    {
      type: 'TaskStatusChanged',
      data: { task_id: taskId, from: 'submitted', status: 'completed', message: 'Completed synchronously', result: p.result, actor: 'system', at: p.now },
      metadata,
    },
  ]);
}
