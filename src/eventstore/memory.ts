import { newEventId } from '../shared/ids';
import {
  checkExpectedVersion,
  validateAppend,
  type AppendResult,
  type BatchHandler,
  type EventStore,
  type ExpectedVersion,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type StoredEvent,
  type SubscribeOptions,
  type Subscription,
  storedJson,
  isPossibleStreamId,
} from './port';
import { LocalWake, pollingSubscription } from './subscription';

/** In-process store for unit tests and `EVENT_STORE_URL=memory:`; forgets everything on exit. */
export class MemoryEventStore implements EventStore {
  readonly kind = 'memory';
  private log: StoredEvent[] = [];
  private streams = new Map<string, StoredEvent[]>();
  private wake = new LocalWake();

  async append(
    streamId: string,
    events: readonly NewEvent[],
    options: { expectedVersion?: ExpectedVersion } = {},
  ): Promise<AppendResult> {
    const expected = options.expectedVersion ?? 'any';
    validateAppend(streamId, events, expected);
    const stream = this.streams.get(streamId) ?? [];
    checkExpectedVersion(streamId, expected, stream.length);
    const now = new Date().toISOString();
    // Round-trip through JSON so callers cannot mutate stored events and payloads behave as in SQL stores.
    const stored = events.map((e, i) => ({
      id: e.id ?? newEventId(),
      streamId,
      type: e.type,
      data: JSON.parse(storedJson(e.data)),
      metadata: JSON.parse(storedJson({ time: now, ...e.metadata })),
      streamVersion: stream.length + i + 1,
      position: this.log.length + i + 1,
    }));
    if (stored.length === 0) return { nextVersion: stream.length, position: this.log.length };
    stream.push(...stored);
    this.streams.set(streamId, stream);
    this.log.push(...stored);
    this.wake.notify();
    return { nextVersion: stream.length, position: this.log.length };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    if (!isPossibleStreamId(streamId)) return [];
    const from = options.fromVersion ?? 1;
    const stream = this.streams.get(streamId) ?? [];
    return stream.slice(from - 1, options.limit === undefined ? undefined : from - 1 + options.limit);
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    const from = Math.max(1, options.fromPosition ?? 0);
    return this.log.slice(from - 1, from - 1 + (options.limit ?? 1000));
  }

  async headPosition(): Promise<number> {
    return this.log.length;
  }

  subscribe(handler: BatchHandler, options?: SubscribeOptions): Subscription {
    return pollingSubscription(
      { readAll: (o) => this.readAll(o), headPosition: () => this.headPosition(), wake: this.wake, pollIntervalMs: 100 },
      handler,
      options,
    );
  }

  async close(): Promise<void> {}
}
