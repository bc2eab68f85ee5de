import type { LiveEvents } from './ports';
import type { StoredEvent } from '../eventstore/port';
import { AppError } from '../shared/errors';

/** The most payloads one subscriber may have waiting; past it, it is ended with a resume position. */
export const MAX_WAITING = 1_000;

/**
 * The log as one subscriber sees it: each event after `after` (default: from now on) that
 * `select` turns into a payload, in log order, as an async iterator (what GraphQL subscriptions
 * are made of). `select` may look things up (an event's owner): events are selected one at a
 * time, so payloads keep the log's order. A subscriber that reads slower than the log grows is
 * ended with an error naming the position to resume from, rather than buffered without bound.
 */
export function liveEvents<T>(live: Pick<LiveEvents, 'follow'>, after: number | undefined, select: (event: StoredEvent) => Promise<T | undefined> | T | undefined): AsyncIterableIterator<T> & { ready: Promise<void> } {
  const ready: T[] = [];
  let waiting: { resolve: (r: IteratorResult<T>) => void; reject: (err: unknown) => void } | undefined;
  let failure: unknown;
  let ended = false;
  let chain = Promise.resolve();

  const finish = (err?: unknown) => {
    if (ended) return;
    ended = true;
    follow.stop();
    if (err !== undefined) failure = err;
    const w = waiting;
    waiting = undefined;
    if (w) failure === undefined ? w.resolve({ value: undefined, done: true }) : w.reject(failure);
  };
  const offer = (value: T) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w.resolve({ value, done: false });
    } else if (ready.length >= MAX_WAITING) {
      finish(new AppError('UNAVAILABLE', `this subscription fell ${MAX_WAITING} events behind and was ended; subscribe again with after set to the position of the last event received, to resume without a gap`));
    } else ready.push(value);
  };

  const follow = live.follow(
    after,
    (events) => {
      chain = chain.then(async () => {
        for (const event of events) {
          if (ended) return;
          const value = await select(event);
          if (value !== undefined && !ended) offer(value);
        }
      }).catch((err: unknown) => finish(err));
    },
    (err) => finish(err),
  );

  return {
    /** Settles once the subscriber is live (from `after`, or from this moment on). */
    ready: follow.ready,
    next(): Promise<IteratorResult<T>> {
      if (ready.length > 0) return Promise.resolve({ value: ready.shift()!, done: false });
      if (ended) return failure === undefined ? Promise.resolve({ value: undefined, done: true }) : Promise.reject(failure);
      return new Promise((resolve, reject) => (waiting = { resolve, reject }));
    },
    return(): Promise<IteratorResult<T>> {
      ready.length = 0;
      failure = undefined;
      finish();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(err: unknown): Promise<IteratorResult<T>> {
      finish();
      return Promise.reject(err);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
