import pg from 'pg';
import { newEventId } from '../shared/ids';
import {
  ConcurrencyError,
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
import { LocalWake, pollingSubscription, type WakeSource } from './subscription';

// BIGINT columns (positions, versions) come back as numbers: they stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

const CHANNEL = 'adcp_events';

/**
 * Schema and the one-round-trip append function.
 *
 * Global positions must become visible in order, or a reader could pass position 6 while 5 is
 * still uncommitted and skip it for good. A sequence alone does not give that (positions are
 * handed out at insert time, commits land in any order), and filtering on the oldest open
 * transaction is not enough either (an older transaction can take a higher position). So each
 * append takes one transaction-scoped advisory lock before it inserts and holds it until commit:
 * positions are assigned and committed in the same order, and `readAll` is a plain range scan.
 * The cost is one commit at a time per database, measured by `npm run bench`.
 */
export const POSTGRES_SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position       BIGSERIAL PRIMARY KEY,
  event_id       UUID NOT NULL UNIQUE,
  stream_id      TEXT NOT NULL,
  stream_version BIGINT NOT NULL,
  type           TEXT NOT NULL,
  data           JSONB NOT NULL,
  metadata       JSONB NOT NULL,
  UNIQUE (stream_id, stream_version)
);
CREATE TABLE IF NOT EXISTS streams (
  stream_id TEXT PRIMARY KEY,
  version   BIGINT NOT NULL
);
-- p_expected: >= 0 exact version, -1 any, -2 exists, (no_stream is 0).
CREATE OR REPLACE FUNCTION adcp_append(
  p_stream TEXT, p_expected BIGINT, p_ids UUID[], p_types TEXT[], p_data JSONB[], p_meta JSONB[]
) RETURNS TABLE (next_version BIGINT, last_position BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  v_current BIGINT;
  v_last BIGINT;
BEGIN
  -- Upsert-and-lock the stream row: a concurrent appender to the same stream waits here.
  INSERT INTO streams AS s (stream_id, version) VALUES (p_stream, 0)
    ON CONFLICT (stream_id) DO UPDATE SET version = s.version
    RETURNING s.version INTO v_current;
  IF (p_expected >= 0 AND v_current <> p_expected) OR (p_expected = -2 AND v_current = 0) THEN
    RAISE EXCEPTION USING ERRCODE = 'AD409', MESSAGE = 'wrong expected version', DETAIL = v_current::text;
  END IF;
  IF coalesce(array_length(p_ids, 1), 0) = 0 THEN
    RETURN QUERY SELECT v_current, coalesce((SELECT max(e.position) FROM events e), 0)::BIGINT;
    RETURN;
  END IF;
  -- Serialise position assignment with commit order (see above); released at commit/rollback.
  PERFORM pg_advisory_xact_lock(4242002);
  INSERT INTO events (event_id, stream_id, stream_version, type, data, metadata)
    SELECT t.id, p_stream, v_current + t.ord, t.type, t.data, t.meta
    FROM unnest(p_ids, p_types, p_data, p_meta) WITH ORDINALITY AS t(id, type, data, meta, ord)
    ORDER BY t.ord;
  SELECT currval(pg_get_serial_sequence('events', 'position')) INTO v_last;
  UPDATE streams SET version = v_current + array_length(p_ids, 1) WHERE stream_id = p_stream;
  PERFORM pg_notify('${CHANNEL}', '');
  RETURN QUERY SELECT v_current + array_length(p_ids, 1), v_last;
END $$;
`;

interface Row {
  position: number;
  event_id: string;
  stream_id: string;
  stream_version: number;
  type: string;
  data: unknown;
  metadata: StoredEvent['metadata'];
}

const COLUMNS = 'position, event_id, stream_id, stream_version, type, data, metadata';

function toStored(r: Row): StoredEvent {
  return {
    id: r.event_id,
    streamId: r.stream_id,
    type: r.type,
    data: r.data,
    metadata: r.metadata,
    streamVersion: r.stream_version,
    position: r.position,
  };
}

export interface PostgresEventStoreOptions {
  connectionString: string;
  poolSize?: number;
  pollIntervalMs?: number;
}

/** Wakes subscribers on NOTIFY from any instance's append; reconnects lazily on error. */
class PgWake implements WakeSource {
  private local = new LocalWake();
  private client?: pg.Client;
  private closed = false;

  constructor(private connectionString: string) {}

  async start(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('error', () => {
      // The poll interval keeps subscribers moving; try to listen again shortly.
      this.client = undefined;
      client.end().catch(() => {});
      if (!this.closed) setTimeout(() => void this.start().catch(() => {}), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    client.on('notification', () => this.local.notify());
    this.client = client;
  }

  onAppended(listener: () => void): () => void {
    return this.local.onAppended(listener);
  }

  notifyLocal(): void {
    this.local.notify();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client?.end().catch(() => {});
  }
}

export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres';
  readonly pool: pg.Pool;
  private wake: PgWake;
  private listening?: Promise<void>;
  private pollIntervalMs: number;

  private constructor(private options: PostgresEventStoreOptions) {
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: options.poolSize ?? 10 });
    // An idle client's error (server restart) must not crash the process; the pool replaces it.
    this.pool.on('error', () => {});
    this.wake = new PgWake(options.connectionString);
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
  }

  static async connect(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    const store = new PostgresEventStore(options);
    const client = await store.pool.connect();
    try {
      // Serialise schema creation across instances starting together.
      await client.query('SELECT pg_advisory_lock(4242001)');
      await client.query(POSTGRES_SCHEMA);
      await client.query('SELECT pg_advisory_unlock(4242001)');
    } finally {
      client.release();
    }
    return store;
  }

  async append(
    streamId: string,
    events: readonly NewEvent[],
    options: { expectedVersion?: ExpectedVersion } = {},
  ): Promise<AppendResult> {
    const expected = options.expectedVersion ?? 'any';
    validateAppend(streamId, events, expected);
    const code = expected === 'any' ? -1 : expected === 'exists' ? -2 : expected === 'no_stream' ? 0 : expected;
    const now = new Date().toISOString();
    try {
      const { rows } = await this.pool.query<{ next_version: number; last_position: number }>(
        'SELECT next_version, last_position FROM adcp_append($1, $2, $3::uuid[], $4::text[], $5::jsonb[], $6::jsonb[])',
        [
          streamId,
          code,
          events.map((e) => e.id ?? newEventId()),
          events.map((e) => e.type),
          events.map((e) => storedJson(e.data)),
          events.map((e) => storedJson({ time: now, ...e.metadata })),
        ],
      );
      const row = rows[0]!;
      if (events.length > 0) this.wake.notifyLocal();
      return { nextVersion: row.next_version, position: row.last_position };
    } catch (err) {
      const e = err as { code?: string; detail?: string };
      if (e.code === 'AD409') throw new ConcurrencyError(streamId, expected, Number(e.detail));
      throw err;
    }
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    if (!isPossibleStreamId(streamId)) return [];
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLUMNS} FROM events WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version LIMIT $3`,
      [streamId, options.fromVersion ?? 1, options.limit ?? null],
    );
    return rows.map(toStored);
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLUMNS} FROM events
        WHERE position >= $1 ORDER BY position LIMIT $2`,
      [options.fromPosition ?? 0, options.limit ?? 1000],
    );
    return rows.map(toStored);
  }

  async headPosition(): Promise<number> {
    const { rows } = await this.pool.query<{ p: number | null }>(
      'SELECT position AS p FROM events ORDER BY position DESC LIMIT 1',
    );
    return rows[0]?.p ?? 0;
  }

  subscribe(handler: BatchHandler, options?: SubscribeOptions): Subscription {
    this.listening ??= this.wake.start().catch(() => {});
    return pollingSubscription(
      {
        readAll: (o) => this.readAll(o),
        headPosition: () => this.headPosition(),
        wake: this.wake,
        pollIntervalMs: this.pollIntervalMs,
      },
      handler,
      options,
    );
  }

  async close(): Promise<void> {
    await this.wake.close();
    await this.pool.end();
  }
}
