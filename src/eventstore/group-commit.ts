/** One item's answer from a group's call: its result, or its own error (the others may have succeeded). */
export type GroupResult<R> = { ok: R } | { error: unknown };

export interface GroupCommitOptions {
  /** Calls out at once; an item that arrives while they are all out waits for the next one. */
  maxInFlight: number;
  /** Items a call carries at most. */
  maxBatch: number;
}

/**
 * Group commit: items that arrive while `maxInFlight` calls are out go together in the next call,
 * so under load one round trip (and one commit) carries several of them, while an item alone goes
 * at once. `send` answers each item of its call in order, or rejects for all of them.
 */
export class GroupCommit<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(
    private send: (items: T[]) => Promise<GroupResult<R>[]>,
    private options: GroupCommitOptions,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const group = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      this.send(group.map((g) => g.item))
        .then(
          (results) =>
            group.forEach((g, i) => {
              const r = results[i];
              if (r === undefined) g.reject(new Error('group commit: no answer for an item of the call'));
              else if ('ok' in r) g.resolve(r.ok);
              else g.reject(r.error);
            }),
          (err: unknown) => group.forEach((g) => g.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          this.drain();
        });
    }
  }
}
