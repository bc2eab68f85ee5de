import type { Task } from '@a2a-js/sdk';

/**
 * A2A tasks that ended in their `message/send` answer (every synchronous AdCP task), kept for a
 * while for `tasks/get` by the instance that answered: each is already in its answer, and writing
 * every read (get_products, list_creatives…) to the shared database to be fetched again at most
 * rarely is not worth it. Tasks that go on (a buy awaiting approval) are not kept here: they are
 * the event-sourced AdCP tasks, which every instance reads. Bounded in count and age.
 */
export class CompletedTasks {
  private readonly tasks = new Map<string, { task: Task; at: number }>();

  constructor(
    private readonly max = 10_000,
    private readonly ttlMs = 3_600_000,
    private readonly now: () => number = Date.now,
  ) {}

  keep(owner: string, task: Task): void {
    const key = `${owner}\u0000${task.id}`;
    this.tasks.delete(key);
    this.tasks.set(key, { task, at: this.now() });
    // Oldest first (insertion order): drop past the bound, and what has aged out.
    for (const [k, v] of this.tasks) {
      if (this.tasks.size <= this.max && this.now() - v.at <= this.ttlMs) break;
      this.tasks.delete(k);
    }
  }

  /** The owner's task with this id, if kept (another buyer's is never found). */
  find(owner: string, id: string): Task | undefined {
    const kept = this.tasks.get(`${owner}\u0000${id}`);
    if (!kept || this.now() - kept.at > this.ttlMs) return undefined;
    return kept.task;
  }
}
