import {
  ANY,
  BACKWARDS,
  END,
  KurrentDBClient,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamRecordedEvent,
  type AppendStreamState,
  type JSONEventType,
} from '@kurrent/kurrentdb-client';
import { newEventId } from '../shared/ids';
import {
  ConcurrencyError,
  validateAppend,
  type AppendResult,
  type BatchHandler,
  type EventMetadata,
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

/**
 * KurrentDB (EventStoreDB) adapter. Not exercised in CI here (no engine on this machine); the
 * contract suite runs against it when KURRENTDB_URL is set. Mapping: our 1-based stream version
 * is KurrentDB's 0-based revision + 1; our global position is the event's commit position in
 * $all (strictly increasing, not contiguous). Stream ids are used as KurrentDB stream names.
 */
export class KurrentEventStore implements EventStore {
  readonly kind = 'kurrentdb';
  private wake = new LocalWake();

  private constructor(private client: KurrentDBClient) {}

  static async connect(url: string): Promise<KurrentEventStore> {
    const client = KurrentDBClient.connectionString(url.replace(/^esdb/, 'kurrentdb'));
    return new KurrentEventStore(client);
  }

  async append(
    streamId: string,
    events: readonly NewEvent[],
    options: { expectedVersion?: ExpectedVersion } = {},
  ): Promise<AppendResult> {
    const expected = options.expectedVersion ?? 'any';
    validateAppend(streamId, events, expected);
    const streamState: AppendStreamState =
      expected === 'any'
        ? ANY
        : expected === 'exists'
          ? STREAM_EXISTS
          : expected === 'no_stream' || expected === 0
            ? NO_STREAM
            : BigInt(expected - 1);
    const now = new Date().toISOString();
    if (events.length === 0) {
      const current = await this.currentVersion(streamId);
      if (!matches(expected, current)) throw new ConcurrencyError(streamId, expected, current);
      return { nextVersion: current, position: await this.headPosition() };
    }
    try {
      const result = await this.client.appendToStream(
        streamId,
        events.map((e) =>
          jsonEvent<JSONEventType>({
            id: e.id ?? newEventId(),
            type: e.type,
            // Through storedJson: the same refusals as the other adapters, so logs stay portable.
            data: JSON.parse(storedJson(e.data)) as never,
            metadata: JSON.parse(storedJson({ time: now, ...e.metadata })) as never,
          }),
        ),
        { streamState },
      );
      this.wake.notify();
      return { nextVersion: Number(result.nextExpectedRevision) + 1, position: Number(result.position?.commit ?? 0n) };
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        const actual = typeof err.actualState === 'bigint' ? Number(err.actualState) + 1 : 0;
        throw new ConcurrencyError(streamId, expected, actual);
      }
      throw err;
    }
  }

  private async currentVersion(streamId: string): Promise<number> {
    try {
      for await (const e of this.client.readStream(streamId, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
        return Number(e.event!.revision) + 1;
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return 0;
      throw err;
    }
    return 0;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    if (!isPossibleStreamId(streamId)) return [];
    const out: StoredEvent[] = [];
    try {
      for await (const r of this.client.readStream(streamId, {
        fromRevision: BigInt((options.fromVersion ?? 1) - 1),
        maxCount: options.limit ?? Number.MAX_SAFE_INTEGER,
      })) {
        if (r.event) out.push(toStored(r.event as AllStreamRecordedEvent));
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    const from = options.fromPosition ?? 0;
    const out: StoredEvent[] = [];
    for await (const r of this.client.readAll({
      fromPosition: from <= 0 ? START : { commit: BigInt(from), prepare: BigInt(from) },
      maxCount: options.limit ?? 1000,
      filter: excludeSystemEvents(),
    })) {
      if (r.event && r.event.isJson) out.push(toStored(r.event));
    }
    return out;
  }

  async headPosition(): Promise<number> {
    for await (const r of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1, filter: excludeSystemEvents() })) {
      if (r.event) return Number(r.event.position.commit);
    }
    return 0;
  }

  subscribe(handler: BatchHandler, options?: SubscribeOptions): Subscription {
    return pollingSubscription(
      { readAll: (o) => this.readAll(o), headPosition: () => this.headPosition(), wake: this.wake, pollIntervalMs: 250 },
      handler,
      options,
    );
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }
}

function matches(expected: ExpectedVersion, current: number): boolean {
  return (
    expected === 'any' ||
    (expected === 'exists' && current > 0) ||
    ((expected === 'no_stream' || expected === 0) && current === 0) ||
    expected === current
  );
}

function toStored(e: AllStreamRecordedEvent): StoredEvent {
  return {
    id: e.id,
    streamId: e.streamId,
    type: e.type,
    data: e.data,
    metadata: (e.metadata ?? { time: e.created.toISOString() }) as EventMetadata,
    streamVersion: Number(e.revision) + 1,
    position: Number(e.position.commit),
  };
}
