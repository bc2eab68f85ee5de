import { randomInt } from 'node:crypto';
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
import { GroupCommit, type GroupResult } from './group-commit';
import { LocalWake, pollingSubscription, type WakeSource } from './subscription';
import { numberPlaceholders } from '../readmodel/postgres';
import { SqlExpression, statementTexts, statementsText } from '../readmodel/postgres-batch';
import type { Sql } from '../readmodel/port';

// BIGINT columns (positions, versions) come back as numbers: they stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

const CHANNEL = 'adcp_events';
/** How often, at most, an instance tells the others it appended (their wake-up latency bound). */
const BROADCAST_EVERY_MS = 5;

/**
 * Schema and the one-round-trip append function.
 *
 * Appends run concurrently; what readers must never do is pass a position whose transaction has
 * not committed yet and skip it for good once it does. Two things make that hold without a
 * database-wide lock held to commit (which made every append wait for the one before it to
 * commit, fsync included):
 *
 * - each append takes its positions and its transaction id (`xid8`) together, in a critical
 *   section of a few microseconds (a session advisory lock released before the rows are even
 *   written), so position order and transaction-id order agree: an event at a lower position
 *   belongs to a transaction with a lower or equal id;
 * - readers take the log up to its first gap, a position not visible (yet) between two that
 *   are. A gap is an append still running, or one rolled back (a lost race, a bad event). Past a
 *   gap they take an event only once its transaction and every older one have ended
 *   (`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`, the test Emmett and Marten's
 *   newer daemons read with): by the first point, the gap's owner is then one of those, so the
 *   gap is for good. Whatever a reader takes is therefore a prefix of the log as it will stay.
 *
 * Commits land in any order; readers wait only at a gap, for the appends older than the event
 * after it to end. (xids are cluster-wide: a long transaction anywhere on the server delays a
 * gap's resolution until it ends; without gaps, nothing waits.)
 *
 * Appends do not NOTIFY inside their transaction: a notification takes a database-wide lock from
 * commit to its end, which would serialise commits again. The store notifies after commit,
 * coalesced (PgWake.broadcast).
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
  transaction_id XID8 NOT NULL DEFAULT '0',
  UNIQUE (stream_id, stream_version)
);
-- Logs written before appends ran concurrently: their events have all committed (id 0 is older
-- than any running transaction).
ALTER TABLE events ADD COLUMN IF NOT EXISTS transaction_id XID8 NOT NULL DEFAULT '0';
-- The critical section every append goes through: p_count consecutive positions and the
-- transaction's id, taken together (see above). It must come before the transaction's first
-- write, which would assign the id outside the section. Only this section draws from the
-- sequence. A session lock outlives a failed transaction: the adapter closes a connection whose
-- append failed in any other way than a version conflict (raised before the section).
CREATE OR REPLACE FUNCTION adcp_take_positions(p_count BIGINT, OUT o_first BIGINT, OUT o_xid XID8) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_lock(4242002);
  o_xid := pg_current_xact_id();
  o_first := nextval('events_position_seq');
  IF p_count > 1 THEN
    PERFORM setval('events_position_seq', o_first + p_count - 1);
  END IF;
  PERFORM pg_advisory_unlock(4242002);
END $$;
-- p_expected: >= 0 exact version, -1 any, -2 exists, (no_stream is 0).
-- p_events: a JSON array of {"id", "type", "data", "meta"} (one parameter: no array literals to
-- escape and parse for every event).
-- p_inline: statements of inline projections (Projection.consistency), run after the events are
-- written, in the same transaction, with $1 the append's first position and $2 the stream's
-- version before it (the only values they cannot know in advance); NULL for none.
CREATE OR REPLACE FUNCTION adcp_append_events(p_stream TEXT, p_expected BIGINT, p_events JSONB, p_inline TEXT[])
RETURNS TABLE (next_version BIGINT, last_position BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  v_count BIGINT := jsonb_array_length(p_events);
  v_current BIGINT;
  v_first BIGINT;
  v_xid XID8;
  v_sql TEXT;
BEGIN
  -- The stream's version is its last event's: no row of its own to write. Two appenders that
  -- both read version n both write n + 1, and the unique (stream_id, stream_version) index lets
  -- one commit; the other fails with unique_violation, which the adapter reports as a conflict
  -- (or, for an append that expects any version, tries again).
  -- A new stream (expected no_stream) needs no lookup: the unique index refuses its version 1
  -- if the stream exists, and that is the conflict (after the section below, so its positions
  -- become a gap readers step over once it settles). Creates are most appends: this is a tenth
  -- of their cost on the database.
  IF p_expected = 0 AND v_count > 0 THEN
    v_current := 0;
  ELSE
    SELECT coalesce(max(e.stream_version), 0) INTO v_current FROM events e WHERE e.stream_id = p_stream;
  END IF;
  IF (p_expected >= 0 AND v_current <> p_expected) OR (p_expected = -2 AND v_current = 0) THEN
    RAISE EXCEPTION USING ERRCODE = 'AD409', MESSAGE = 'wrong expected version', DETAIL = v_current::text;
  END IF;
  IF v_count = 0 THEN
    RETURN QUERY SELECT v_current, coalesce((SELECT max(e.position) FROM events e), 0)::BIGINT;
    RETURN;
  END IF;
  -- Before the first write (see adcp_take_positions): the positions of one append are consecutive.
  SELECT t.o_first, t.o_xid INTO v_first, v_xid FROM adcp_take_positions(v_count) AS t;
  INSERT INTO events (position, transaction_id, event_id, stream_id, stream_version, type, data, metadata)
    SELECT v_first + t.ord - 1, v_xid, (t.e->>'id')::uuid, p_stream, v_current + t.ord, t.e->>'type', t.e->'data', t.e->'meta'
    FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
    ORDER BY t.ord;
  IF p_inline IS NOT NULL THEN
    FOREACH v_sql IN ARRAY p_inline LOOP
      EXECUTE v_sql USING v_first, v_current;
    END LOOP;
  END IF;
  RETURN QUERY SELECT v_current + v_count, v_first + v_count - 1;
END $$;
-- Group commit: several appends, each written as adcp_append_events writes one, in one
-- transaction and one round trip (PostgresEventStore batches concurrent appends into it).
-- p_appends: a JSON array of {"stream", "expected", "events", "inline"} (each as that function's
-- parameters; "inline" an array of statements or null; "events" never empty).
-- Expected versions are checked first: an append refused for its version takes no position, as
-- with adcp_append_events. Then every position of the call is taken in one section, before any
-- append is written: a second section later in the same transaction could take positions above
-- those of a transaction with a higher id, which readers could then step over for good (see
-- above). Each append runs in a subtransaction: one that fails then (a lost race, a taken event id,
-- a failing inline statement) rolls back alone, its positions left as a gap that settles with the
-- call's transaction. A failed append is answered with its error (r_state, r_message, r_detail,
-- r_constraint); the others commit. The adapter sends at most 32 appends a call, under the 64
-- subtransactions a backend tracks in shared memory (more would make every snapshot on the server
-- look subtransactions up on disk).
CREATE OR REPLACE FUNCTION adcp_append_batch(p_appends JSONB)
RETURNS TABLE (r_ord INT, r_version BIGINT, r_position BIGINT, r_state TEXT, r_message TEXT, r_detail TEXT, r_constraint TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  v_currents BIGINT[] := '{}';
  v_refused BOOLEAN[] := '{}';
  v_total BIGINT := 0;
  v_next BIGINT;
  v_xid XID8;
  v_a JSONB;
  v_k BIGINT;
  v_expected BIGINT;
  v_count BIGINT;
  v_current BIGINT;
  v_sql TEXT;
BEGIN
  -- A new stream (0) or any version (-1) is never refused here: the unique index refuses the
  -- first if the stream exists, and the second reads its version when it is written, below.
  FOR v_a, v_k IN SELECT t.a, t.k FROM jsonb_array_elements(p_appends) WITH ORDINALITY AS t(a, k) LOOP
    v_expected := (v_a->>'expected')::bigint;
    IF v_expected = 0 OR v_expected = -1 THEN
      v_current := v_expected;
    ELSE
      SELECT coalesce(max(e.stream_version), 0) INTO v_current FROM events e WHERE e.stream_id = v_a->>'stream';
    END IF;
    v_refused := v_refused || ((v_expected >= 0 AND v_current <> v_expected) OR (v_expected = -2 AND v_current = 0));
    -- Kept: the version a refusal reports, an exact one, or a negative one to read when written.
    v_currents := v_currents || (CASE WHEN v_expected = -2 AND v_current > 0 THEN -2 ELSE v_current END);
    IF NOT v_refused[v_k] THEN
      v_total := v_total + jsonb_array_length(v_a->'events');
    END IF;
  END LOOP;
  IF v_total > 0 THEN
    SELECT t.o_first, t.o_xid INTO v_next, v_xid FROM adcp_take_positions(v_total) AS t;
  END IF;
  FOR v_a, v_k IN SELECT t.a, t.k FROM jsonb_array_elements(p_appends) WITH ORDINALITY AS t(a, k) LOOP
    v_count := jsonb_array_length(v_a->'events');
    v_current := v_currents[v_k];
    r_ord := v_k;
    r_version := NULL;
    r_position := NULL;
    r_state := NULL;
    r_message := NULL;
    r_detail := NULL;
    r_constraint := NULL;
    IF v_refused[v_k] THEN
      r_state := 'AD409';
      r_message := 'wrong expected version';
      r_detail := v_current::text;
      RETURN NEXT;
      CONTINUE;
    END IF;
    BEGIN
      -- Any version, or one that exists: the stream's version now, which an append before this
      -- one in the call may have moved. An exact one: the stream is at it, or the insert conflicts.
      IF v_current < 0 THEN
        SELECT coalesce(max(e.stream_version), 0) INTO v_current FROM events e WHERE e.stream_id = v_a->>'stream';
      END IF;
      INSERT INTO events (position, transaction_id, event_id, stream_id, stream_version, type, data, metadata)
        SELECT v_next + t.ord - 1, v_xid, (t.e->>'id')::uuid, v_a->>'stream', v_current + t.ord, t.e->>'type', t.e->'data', t.e->'meta'
        FROM jsonb_array_elements(v_a->'events') WITH ORDINALITY AS t(e, ord)
        ORDER BY t.ord;
      IF jsonb_typeof(v_a->'inline') = 'array' THEN
        FOR v_sql IN SELECT jsonb_array_elements_text(v_a->'inline') LOOP
          EXECUTE v_sql USING v_next, v_current;
        END LOOP;
      END IF;
      r_version := v_current + v_count;
      r_position := v_next + v_count - 1;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS r_state = RETURNED_SQLSTATE, r_message = MESSAGE_TEXT, r_detail = PG_EXCEPTION_DETAIL, r_constraint = CONSTRAINT_NAME;
    END;
    -- After the block: a row returned inside it would stay returned if the block then failed.
    RETURN NEXT;
    v_next := v_next + v_count;
  END LOOP;
END $$;
-- The append without inline writes (and the signature of instances not yet upgraded).
CREATE OR REPLACE FUNCTION adcp_append_events(p_stream TEXT, p_expected BIGINT, p_events JSONB)
RETURNS TABLE (next_version BIGINT, last_position BIGINT) LANGUAGE sql AS $$
  SELECT * FROM adcp_append_events(p_stream, p_expected, p_events, NULL::TEXT[])
$$;
-- The previous signature, for instances not yet upgraded: the same append, so every append keeps
-- taking its positions in the section above.
CREATE OR REPLACE FUNCTION adcp_append(
  p_stream TEXT, p_expected BIGINT, p_ids UUID[], p_types TEXT[], p_data JSONB[], p_meta JSONB[]
) RETURNS TABLE (next_version BIGINT, last_position BIGINT) LANGUAGE sql AS $$
  SELECT * FROM adcp_append_events(p_stream, p_expected, coalesce((
    SELECT jsonb_agg(jsonb_build_object('id', t.id, 'type', t.type, 'data', t.data, 'meta', t.meta) ORDER BY t.ord)
    FROM unnest(p_ids, p_types, p_data, p_meta) WITH ORDINALITY AS t(id, type, data, meta, ord)), '[]'::jsonb))
$$;
`;

/**
 * Whether an event's transaction and every older one have ended (see POSTGRES_SCHEMA): a gap
 * before such an event is for good (a rolled-back append), not an append still running.
 */
const SETTLED = 'transaction_id < pg_snapshot_xmin(pg_current_snapshot())';

const APPEND_SQL = 'SELECT next_version, last_position FROM adcp_append_events($1, $2, $3::jsonb, $4::text[])';
const APPEND_BATCH_SQL = 'SELECT r_ord, r_version, r_position, r_state, r_message, r_detail, r_constraint FROM adcp_append_batch($1::jsonb)';

/**
 * Group commit (adcp_append_batch): appends made while this many calls are out go together in
 * the next one, at most APPEND_BATCH_MAX a call (under the 64 subtransactions a backend tracks in
 * memory; see the function).
 */
const APPEND_CALLS_IN_FLIGHT = 2;
const APPEND_BATCH_MAX = 32;

/** One append as adcp_append_batch takes it: its stream, expected version code, events (JSON) and inline statements. */
interface BatchedAppend {
  stream: string;
  expected: number;
  events: string;
  inline: string[] | null;
}

interface AppendRow {
  next_version: number;
  last_position: number;
}

/** A unique violation on a stream's next version: another append took it first. */
function isLostRace(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === 'events_stream_id_stream_version_key';
}

/** An append's own failure inside a group's call, with the fields a driver error has. */
function appendError(r: { r_state: string; r_message: string; r_detail: string | null; r_constraint: string | null }): Error {
  return Object.assign(new Error(r.r_message), { code: r.r_state, detail: r.r_detail ?? undefined, constraint: r.r_constraint || undefined });
}

/** Most events one append can write inline in its one round trip (positions stand in below it). */
const INLINE_MAX = 1024;

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

/**
 * Read-model rows written in the append's own transaction (inline projections, see
 * Projection.consistency): when an append holds an event type `handles` names, the append,
 * `statements` for its events as stored, and the commit are one transaction; `committed` hears
 * them after the commit, before the append returns.
 */
export interface InlineWrites {
  handles(type: string): boolean;
  statements(events: readonly StoredEvent[]): Sql[];
  committed(events: readonly StoredEvent[]): void;
}

/**
 * A value as a jsonb column returns it: object keys shorter first, then bytewise (as PostgreSQL
 * stores them), so rows written inline from an append's events equal those a replay writes from
 * the events read back.
 */
export function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort((a, b) => a.length - b.length || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = inJsonbOrder((value as Record<string, unknown>)[k]);
  return out;
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
  private broadcasting = false;
  private broadcastAgain = false;
  private broadcastTimer?: NodeJS.Timeout;
  private lastBroadcast = 0;
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

  /**
   * Tells the other instances' subscribers that something was appended: after commit, one
   * notification at a time and at most one per BROADCAST_EVERY_MS (appends meanwhile share the
   * next one), since each is a transaction of its own. This instance's own subscribers hear it too,
   * which costs them one read.
   */
  broadcast(): void {
    if (this.broadcastTimer || this.broadcasting) {
      this.broadcastAgain = true;
      return;
    }
    const wait = this.lastBroadcast + BROADCAST_EVERY_MS - Date.now();
    if (wait > 0) {
      this.broadcastTimer = setTimeout(() => {
        this.broadcastTimer = undefined;
        this.broadcast();
      }, wait);
      this.broadcastTimer.unref();
      return;
    }
    const client = this.client;
    if (!client) return; // not listening (yet, or reconnecting): the poll interval covers it
    this.broadcasting = true;
    this.lastBroadcast = Date.now();
    // On the listening connection, so no append waits for a pooled one; not durable, so its
    // commit does not wait for a WAL flush (a lost notification costs one poll interval).
    client
      .query(`BEGIN; SET LOCAL synchronous_commit TO off; NOTIFY ${CHANNEL}; COMMIT`)
      .catch(() => {})
      .finally(() => {
        this.broadcasting = false;
        if (this.broadcastAgain) {
          this.broadcastAgain = false;
          this.broadcast();
        }
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.broadcastTimer);
    await this.client?.end().catch(() => {});
  }
}

/** An append's events as stored, its last at `lastVersion` and `lastPosition` (data parsed once: `parsed`). */
function asStored(streamId: string, written: readonly { id: string; type: string; data: string; meta: string }[], lastVersion: number, lastPosition: number, parsed?: readonly StoredEvent[]): StoredEvent[] {
  return written.map((e, i) => ({
    id: e.id,
    streamId,
    type: e.type,
    data: parsed ? parsed[i]!.data : inJsonbOrder(JSON.parse(e.data)),
    metadata: parsed ? parsed[i]!.metadata : (inJsonbOrder(JSON.parse(e.meta)) as StoredEvent['metadata']),
    streamVersion: lastVersion - written.length + i + 1,
    position: lastPosition - written.length + i + 1,
  }));
}

/**
 * A statement parameter that is one of the stand-ins for the append's positions or versions,
 * as the expression the append function evaluates ($1: its first position, $2: the stream's
 * version before it). The stand-ins are random, above any real position or version, so no other
 * value is taken for one.
 */
function standIn(value: unknown, stand: { position: number; version: number }, count: number): unknown {
  if (typeof value !== 'number') return value;
  if (value >= stand.position && value < stand.position + count) return new SqlExpression(`($1::bigint + ${value - stand.position})`);
  if (value > stand.version && value <= stand.version + count) return new SqlExpression(`($2::bigint + ${value - stand.version})`);
  return value;
}

/**
 * Runs an inline write's statements and commits, in one round trip when every parameter can be
 * written as a literal (projection statements' always can), else one statement at a time.
 */
async function commitWith(client: pg.PoolClient, statements: readonly Sql[]): Promise<void> {
  const text = statements.length > 0 ? statementsText(statements) : '';
  if (text !== undefined) {
    await client.query(text ? `${text};\nCOMMIT` : 'COMMIT');
    return;
  }
  for (const s of statements) await client.query(numberPlaceholders(s.sql), s.params as unknown[]);
  await client.query('COMMIT');
}

export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres';
  readonly pool: pg.Pool;
  private wake: PgWake;
  private listening?: Promise<void>;
  private pollIntervalMs: number;
  /** The highest position this instance appended (committed, maybe not yet visible to readers). */
  private committed = 0;
  private inline?: InlineWrites;
  private appends = new GroupCommit<BatchedAppend, AppendRow>((group) => this.appendBatch(group), { maxInFlight: APPEND_CALLS_IN_FLIGHT, maxBatch: APPEND_BATCH_MAX });

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

  /** Writes these read-model rows in each append's transaction from now on (see InlineWrites). */
  writeInline(inline: InlineWrites): void {
    this.inline = inline;
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
    const inline = this.inline && events.some((e) => this.inline!.handles(e.type)) ? this.inline : undefined;
    // One JSON array of the events, from the already serialised (and checked) data and metadata.
    let batch = '[';
    const written: { id: string; type: string; data: string; meta: string }[] = [];
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      const event = { id: e.id ?? newEventId(), type: e.type, data: storedJson(e.data), meta: storedJson({ time: now, ...e.metadata }) };
      if (inline) written.push(event);
      batch += `${i ? ',' : ''}{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"data":${event.data},"meta":${event.meta}}`;
    }
    let stored: StoredEvent[] | undefined;
    let texts: string[] | undefined;
    if (inline && written.length <= INLINE_MAX) {
      // The statements for the events as a reader will get them, with stand-ins for the positions
      // and versions the function assigns: those parameters become expressions over its $1 and $2.
      const position = 2 ** 52 + INLINE_MAX * randomInt(2 ** 40); // below 2^52 + 2^50; versions above it
      const stand = { position, version: position + 2 ** 50 };
      stored = asStored(streamId, written, stand.version + written.length, stand.position + written.length - 1);
      texts = statementTexts(inline.statements(stored).map((st) => ({ sql: st.sql, params: st.params?.map((v) => standIn(v, stand, written.length)) })));
    }
    // One round trip when the inline statements can be sent as text (projection statements always
    // can); else the events, the statements and the commit as three (commitWith).
    const oneTrip = !inline || texts !== undefined;
    const eventsJson = batch + ']';
    const inlineTexts = texts && texts.length > 0 ? texts : null;
    // After the append, in its transaction: the inline statements for the events as stored.
    const inlineAfter = oneTrip ? undefined : (r: AppendRow) => inline!.statements((stored = asStored(streamId, written, r.next_version, r.last_position)));
    let row: AppendRow | undefined;
    // An append expecting any version that lost a race for the stream's next version reads it
    // again and retries; a few rounds settle even a stream every appender writes to.
    for (let attempt = 1; !row; attempt++) {
      try {
        // One call through the group commit, which may carry other appends made meanwhile.
        row =
          oneTrip && events.length > 0
            ? await this.appends.submit({ stream: streamId, expected: code, events: eventsJson, inline: inlineTexts })
            : await this.appendAlone([streamId, code, eventsJson, inlineTexts], inlineAfter);
      } catch (err) {
        const e = err as { code?: string; detail?: string };
        if (e.code === 'AD409') throw new ConcurrencyError(streamId, expected, Number(e.detail));
        if (!isLostRace(err)) throw err;
        if (expected !== 'any' || attempt >= 20) throw new ConcurrencyError(streamId, expected, await this.versionOf(streamId));
      }
    }
    if (events.length > 0) {
      this.committed = Math.max(this.committed, row.last_position);
      if (inline) inline.committed(asStored(streamId, written, row.next_version, row.last_position, stored));
      this.wake.notifyLocal();
      this.wake.broadcast();
    }
    return { nextVersion: row.next_version, position: row.last_position };
  }

  /**
   * One group commit call: the appends in one transaction, each answered with its row or its own
   * error. A failure of the call itself (the connection, or one in the position section, which
   * holds a session lock) fails them all and closes the connection, which releases that lock.
   */
  private async appendBatch(group: BatchedAppend[]): Promise<GroupResult<AppendRow>[]> {
    let json = '[';
    group.forEach((a, i) => {
      json += `${i ? ',' : ''}{"stream":${JSON.stringify(a.stream)},"expected":${a.expected},"events":${a.events},"inline":${a.inline ? JSON.stringify(a.inline) : 'null'}}`;
    });
    json += ']';
    const client = await this.pool.connect();
    let rows: { r_ord: number; r_version: number | null; r_position: number | null; r_state: string; r_message: string; r_detail: string | null; r_constraint: string | null }[];
    try {
      // A named statement, as the single append's.
      ({ rows } = await client.query({ name: 'adcp_append_batch', text: APPEND_BATCH_SQL, values: [json] }));
      client.release();
    } catch (err) {
      client.release(err as Error);
      throw err;
    }
    const byOrd = new Map(rows.map((r) => [Number(r.r_ord), r]));
    return group.map((_, i) => {
      const r = byOrd.get(i + 1);
      if (!r) return { error: new Error('adcp_append_batch: no answer for an append') };
      if (r.r_state) return { error: appendError(r) };
      return { ok: { next_version: r.r_version!, last_position: r.r_position! } };
    });
  }

  /**
   * An append in a call of its own: one round trip, or, with `inlineAfter`, the append, the inline
   * statements and the commit as three (commitWith).
   */
  private async appendAlone(params: unknown[], inlineAfter?: (r: AppendRow) => readonly Sql[]): Promise<AppendRow> {
    const client = await this.pool.connect();
    try {
      if (inlineAfter) await client.query('BEGIN');
      const r = await this.appendCall(client, params);
      if (inlineAfter) await commitWith(client, inlineAfter(r));
      client.release();
      return r;
    } catch (err) {
      if (inlineAfter) await client.query('ROLLBACK').catch(() => {});
      // A version conflict or a lost race is raised before the function's session lock, or after
      // its release; any other failure may have come while it was held: that connection is
      // closed, which releases it.
      client.release((err as { code?: string }).code === 'AD409' || isLostRace(err) ? undefined : (err as Error));
      throw err;
    }
  }

  private async appendCall(client: pg.PoolClient, params: unknown[]): Promise<AppendRow> {
    // A named statement: each connection parses and plans the call once, not per append.
    const { rows } = await client.query<AppendRow>({ name: 'adcp_append_events', text: APPEND_SQL, values: params });
    return rows[0]!;
  }

  /**
   * `log import`: events from another store as they are (ids, versions, metadata, positions), in
   * one transaction holding the append section's lock, so positions and transaction ids stay in
   * the same order for readers (see POSTGRES_SCHEMA); the position sequence then continues after
   * the last one.
   */
  async importEvents(events: readonly StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    let batch = '[';
    events.forEach((e, i) => {
      batch += `${i ? ',' : ''}{"position":${e.position},"id":${JSON.stringify(e.id)},"stream":${JSON.stringify(e.streamId)},"version":${e.streamVersion},"type":${JSON.stringify(e.type)},"data":${storedJson(e.data)},"meta":${storedJson(e.metadata)}}`;
    });
    batch += ']';
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(4242002)');
      await client.query(
        `INSERT INTO events (position, transaction_id, event_id, stream_id, stream_version, type, data, metadata)
          SELECT (e->>'position')::bigint, pg_current_xact_id(), (e->>'id')::uuid, e->>'stream', (e->>'version')::bigint, e->>'type', e->'data', e->'meta'
          FROM jsonb_array_elements($1::jsonb) AS t(e)`,
        [batch],
      );
      await client.query("SELECT setval('events_position_seq', GREATEST($1::bigint, (SELECT last_value FROM events_position_seq)))", [events.at(-1)!.position]);
      await client.query('COMMIT');
      client.release();
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      client.release(err as Error);
      throw err;
    }
    this.committed = Math.max(this.committed, events.at(-1)!.position);
    this.wake.notifyLocal();
    this.wake.broadcast();
  }

  private async versionOf(streamId: string): Promise<number> {
    const { rows } = await this.pool.query<{ v: number | null }>('SELECT max(stream_version) AS v FROM events WHERE stream_id = $1', [streamId]);
    return rows[0]?.v ?? 0;
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
    const from = options.fromPosition ?? 0;
    const { rows } = await this.pool.query<Row & { settled: boolean }>(
      `SELECT ${COLUMNS}, ${SETTLED} AS settled FROM events
        WHERE position >= $1 ORDER BY position LIMIT $2`,
      [from, options.limit ?? 1000],
    );
    // Up to the first gap whose owner may still be running (see POSTGRES_SCHEMA).
    const events: StoredEvent[] = [];
    let previous = Math.max(0, from - 1);
    for (const r of rows) {
      if (r.position !== previous + 1 && !r.settled) break;
      events.push(toStored(r));
      previous = r.position;
    }
    return events;
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
        committedHead: () => this.committed,
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
