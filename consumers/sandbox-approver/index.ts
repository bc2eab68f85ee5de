import type { BusHandler } from '../../src/bus/port';
import type { MediaBuyEvent } from '../../src/domain/media-buy/media-buy';
import { taskStream, type TaskEvent } from '../../src/domain/task/task';
import type { EventStore } from '../../src/eventstore/port';

export const group = 'sandbox-approver';

/**
 * The simulated seller of sandbox accounts: a sandbox buy that waits for approval (IO signing) is
 * approved `delayMs` after it was submitted, as a real sales team would, but in seconds, so a
 * buyer can test its async flow end to end. A task the compliance controller forced waits for
 * `force_task_completion` instead; anything the operator already decided is left alone. The
 * checkpoint moves only once the approval is recorded, so a restart resumes the wait.
 */
export function sandboxApprover(deps: {
  store: EventStore;
  delayMs: number;
  now: () => Date;
  approve: (taskId: string) => Promise<void>;
  sleep?: (ms: number) => Promise<void>;
}): BusHandler {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  return async (events) => {
    for (const e of events) {
      if (e.type !== 'MediaBuyCreated') continue;
      const d = (e as unknown as Extract<MediaBuyEvent, { type: 'MediaBuyCreated' }>).data;
      if (!d.sandbox || d.status !== 'pending' || !d.task_id) continue;
      const task = await deps.store.readStream(taskStream(d.task_id));
      const submitted = task[0] as unknown as Extract<TaskEvent, { type: 'TaskSubmitted' }> | undefined;
      if (!submitted || submitted.data.awaits_controller || task.length > 1) continue;
      const wait = Date.parse(d.at) + deps.delayMs - deps.now().getTime();
      if (wait > 0) await sleep(Math.min(wait, deps.delayMs));
      await deps.approve(d.task_id);
    }
  };
}
