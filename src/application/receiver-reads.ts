import { receivedQueries } from '../../projections/received-webhooks';
import type { TaskPorts } from './ports';

/** What a buyer's receiver endpoints accepted (after verification and dedup), as the buyer reads it. */

type Reads = Pick<TaskPorts, 'readModels'>;

/** The owner's accepted webhooks with the endpoint each came to, newest first (optionally one task's). */
export function recentReceivedWebhooks(ports: Reads, owner: string, opts: { taskId?: string; limit: number }): ReturnType<typeof receivedQueries.recent> {
  return receivedQueries.recent(ports.readModels, owner, opts);
}

/** The latest status senders reported for the owner's task (one row per sender; a late, older status never replaces a newer one). */
export function receivedTaskStatus(ports: Reads, owner: string, taskId: string): ReturnType<typeof receivedQueries.taskStatus> {
  return receivedQueries.taskStatus(ports.readModels, owner, taskId);
}
