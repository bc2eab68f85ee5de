/** One requester's work: what waits, and how many of its items are running. */
interface Lane<T> {
  waiting: T[];
  running: number;
}

/** Why an offer was refused: the requester's own share is spent, or the whole queue is full. */
export type Refusal = 'share' | 'full';

/**
 * Work queued per requester and handed out round-robin between requesters, so a requester
 * with a long backlog delays another's next item by one turn, not by its whole backlog. Each
 * requester may have `share` items waiting or running at once, and all of them together at most
 * `max` waiting; an offer past either is refused whole (nothing of it queued), for the caller to
 * say so rather than drop work silently.
 */
export class FairQueue<T> {
  /** Every requester with items waiting or running (its share is counted here). */
  private readonly lanes = new Map<string, Lane<T>>();
  /** The requesters with items waiting, in turn order: taking moves one to the back. */
  private readonly turns = new Map<string, Lane<T>>();
  private waitingCount = 0;

  constructor(private readonly limits: { share: number; max: number }) {}

  /** Items waiting (not running), over all requesters. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** Requesters with items waiting: how many ways the next turns are split. */
  get requestersWaiting(): number {
    return this.turns.size;
  }

  /** This requester's items waiting or running. */
  pendingOf(requester: string): number {
    const lane = this.lanes.get(requester);
    return lane ? lane.waiting.length + lane.running : 0;
  }

  /** Queues every item for `requester`, or none of them (the refusal says why). */
  offer(requester: string, items: readonly T[]): Refusal | undefined {
    if (items.length === 0) return undefined;
    if (this.pendingOf(requester) + items.length > this.limits.share) return 'share';
    if (this.waitingCount + items.length > this.limits.max) return 'full';
    let lane = this.lanes.get(requester);
    if (!lane) this.lanes.set(requester, (lane = { waiting: [], running: 0 }));
    lane.waiting.push(...items);
    this.waitingCount += items.length;
    if (!this.turns.has(requester)) this.turns.set(requester, lane);
    return undefined;
  }

  /** The next requester's next item, now counted as running for it until `done(requester)`. */
  take(): { requester: string; item: T } | undefined {
    const next = this.turns.entries().next();
    if (next.done) return undefined;
    const [requester, lane] = next.value;
    this.turns.delete(requester);
    const item = lane.waiting.shift()!;
    this.waitingCount--;
    lane.running++;
    // Back of the line, if it has more.
    if (lane.waiting.length > 0) this.turns.set(requester, lane);
    return { requester, item };
  }

  /** An item taken for `requester` finished. */
  done(requester: string): void {
    const lane = this.lanes.get(requester);
    if (!lane) return;
    lane.running--;
    if (lane.running <= 0 && lane.waiting.length === 0) this.lanes.delete(requester);
  }

  /** Drops every waiting item (running ones still finish with `done`). */
  clear(): void {
    for (const [requester, lane] of this.lanes) {
      lane.waiting = [];
      if (lane.running <= 0) this.lanes.delete(requester);
    }
    this.turns.clear();
    this.waitingCount = 0;
  }
}
