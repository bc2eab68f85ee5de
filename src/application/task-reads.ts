import { mediaBuyQueries, type TaskFilter, type TaskRow, type TaskSort } from '../../projections/media-buys';
import { taskStream, type TaskEvent } from '../domain/task/task';
import type { StoredEvent } from '../eventstore/port';
import { ownerScopedId } from '../shared/ids';
import { DEFAULT_VERSION, type AdcpRelease } from '../wire/version';
import type { TaskPorts } from './ports';

/** An AdCP task as its event stream records it (what A2A's task reads and streams follow). */

/** The first event of a task's stream (its TaskSubmitted, if it exists), read alone. */
export async function firstTaskEvent(ports: Pick<TaskPorts, 'store'>, taskId: string): Promise<StoredEvent | undefined> {
  const [first] = await ports.store.readStream(taskStream(taskId), { limit: 1 });
  return first;
}

/** Every event of a task's stream (named as taskStream names it), oldest first. */
export function taskEvents(ports: Pick<TaskPorts, 'store'>, streamId: string): Promise<StoredEvent[]> {
  return ports.store.readStream(streamId);
}

/** The AdCP release a task's call was answered in, as its TaskSubmitted records it (absent: 3.0). */
export function releaseOf(submitted: Pick<Extract<TaskEvent, { type: 'TaskSubmitted' }>['data'], 'adcp_version'> | undefined): AdcpRelease {
  return submitted?.adcp_version ?? DEFAULT_VERSION;
}

/** One of the owner's tasks, by the id its buyer knows, with the release its call was answered in. */
export interface OwnedTask extends TaskRow {
  release: AdcpRelease;
}

/**
 * One task of `owner`'s, by the id its buyer was given (a controller-forced task is stored under
 * an owner-scoped id), or undefined: another buyer's task is as unknown as no task at all.
 */
export async function ownedTask(ports: Pick<TaskPorts, 'store' | 'readModels'>, owner: string, taskId: string): Promise<OwnedTask | undefined> {
  const row = (await mediaBuyQueries.task(ports.readModels, ownerScopedId(owner, taskId), owner)) ?? (await mediaBuyQueries.task(ports.readModels, taskId, owner));
  if (!row) return undefined;
  const first = await firstTaskEvent(ports, row.task_id);
  return { ...row, release: releaseOf(first?.type === 'TaskSubmitted' ? (first.data as Extract<TaskEvent, { type: 'TaskSubmitted' }>['data']) : undefined) };
}

/** The owner's tasks, filtered, sorted and paged (the ids in `filter.taskIds` as its buyer knows them). */
export function ownedTasks(ports: Pick<TaskPorts, 'readModels'>, owner: string, query: TaskFilter & { sort?: TaskSort; after?: { value: string; task_id: string }; limit: number }) {
  const taskIds = query.taskIds?.flatMap((id) => [id, ownerScopedId(owner, id)]);
  return mediaBuyQueries.tasks(ports.readModels, owner, { ...query, ...(taskIds ? { taskIds } : {}) });
}
