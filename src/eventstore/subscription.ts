import type { BatchHandler, StoredEvent, SubscribeOptions, Subscription } from './port';

/** A source of "something was appended" signals; a missed signal only costs one poll interval. */
export interface WakeSource {
  onAppended(listener: () => void): () => void;
}

interface Deps {
  readAll(opts: { fromPosition: number; limit: number }): Promise<StoredEvent[]>;
  headPosition(): Promise<number>;
  wake: WakeSource;
  /** Upper bound on how long a live subscription waits without a wake signal. */
  pollIntervalMs: number;
  /**
   * The highest position this process knows committed, where reads may lag behind commits (the
   * PostgreSQL adapter shows an event only once every older transaction has ended). While the
   * subscription is below it, it reads again soon rather than waiting for the next signal.
   */
  committedHead?: () => number;
}

/**
 * Catch-up-then-live subscription shared by every SQL adapter: read full batches by position
 * until a short one shows the log exhausted, then wait for a wake signal (or the poll interval)
 * and read again.
 * The handler sees each event once per subscription, in position order; a failing handler is
 * retried with the same batch after a pause, so delivery to it is at-least-once.
 */
export function pollingSubscription(deps: Deps, handler: BatchHandler, options: SubscribeOptions = {}): Subscription {
  const batchSize = options.batchSize ?? 500;
  let next = options.fromPosition ?? 0;
  let last = 0;
  let stopped = false;
  let wakeUp: (() => void) | undefined;
  // Set by every wake signal, cleared before each read: a signal that arrives while a batch is
  // being handled is not lost, so the loop can sleep right after a short batch instead of
  // spending a query to learn that nothing more is there.
  let signalled = false;
  let markCaughtUp!: () => void;
  const caughtUp = new Promise<void>((resolve) => (markCaughtUp = resolve));
  const unsubscribe = deps.wake.onAppended(() => {
    signalled = true;
    wakeUp?.();
  });

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (signalled) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
      wakeUp = done;
    });

  // How long to wait before reading again for a committed event not yet visible: from 1 ms,
  // doubling up to the poll interval, back to 1 ms after progress.
  let settling = 1;
  const loop = (async () => {
    let target = await deps.headPosition().catch(() => 0);
    if (target < next) markCaughtUp();
    while (!stopped) {
      let events: StoredEvent[];
      try {
        signalled = false;
        events = await deps.readAll({ fromPosition: next, limit: batchSize });
        if (events.length > 0 && !stopped) {
          await handler(events);
          last = events[events.length - 1]!.position;
          next = last + 1;
        }
      } catch (err) {
        options.onError?.(err);
        await sleep(Math.min(2000, Math.max(50, deps.pollIntervalMs * 5)));
        continue;
      }
      if (events.length >= batchSize) continue;
      if (last >= target || events.length === 0) {
        markCaughtUp();
        target = 0;
      }
      if (events.length > 0) settling = 1;
      if (stopped) break;
      if (deps.committedHead && next <= deps.committedHead()) {
        await sleep(settling);
        settling = Math.min(deps.pollIntervalMs, settling * 2);
      } else {
        await sleep(deps.pollIntervalMs);
      }
    }
  })();

  return {
    caughtUp,
    get position() {
      return last;
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      unsubscribe();
      await loop;
    },
  };
}

/** In-process wake signals, used by the memory and SQLite adapters. */
export class LocalWake implements WakeSource {
  private listeners = new Set<() => void>();
  onAppended(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  notify(): void {
    for (const l of this.listeners) l();
  }
}
