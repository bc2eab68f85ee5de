import { taskStream } from '../domain/task/task';
import type { StoredEvent } from '../eventstore/port';
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
