import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../shared/errors';
import { newEventId } from '../shared/ids';
import {
  checkExpectedVersion,
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
import { LocalWake, pollingSubscription } from './subscription';
import { startBackgroundCheckpoints, type BackgroundCheckpoints } from './sqlite-checkpointer';

export interface SqliteEventStoreOptions {
  /** Database file; created with its directory when missing. */
  file: string;
  /**
   * NORMAL (default) in WAL mode survives a process crash (kill -9) but may lose the last
   * transactions on power loss; FULL survives both at roughly a quarter of the append rate.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** How often a live subscription looks for appends made by other processes. */
  pollIntervalMs?: number;
}

/**
 * Another process (the CLI, a second server on the same file) held the write lock past the busy
 * timeout: this append wrote nothing (an earlier one of the same command may have), and the
 * caller may retry. A 503, not an internal error.
 */
function lockedOut(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') return err;
  return new AppError('UNAVAILABLE', 'the event store is busy (another process holds its write lock); the request did not complete, retry shortly');
}

interface Row {
  position: number;
  event_id: string;
  stream_id: string;
  stream_version: number;
  type: string;
  data: string;
  metadata: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position       INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id       TEXT NOT NULL UNIQUE,
  stream_id      TEXT NOT NULL,
  stream_version INTEGER NOT NULL,
  type           TEXT NOT NULL,
  data           TEXT NOT NULL,
  metadata       TEXT NOT NULL,
  UNIQUE (stream_id, stream_version)
);`;

export function openSqlite(file: string, synchronous: 'FULL' | 'NORMAL' = 'NORMAL'): Database.Database {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  // Several processes may share the file (CLI beside a running server): wait for the write lock.
  db.pragma('busy_timeout = 10000');
  // Events and read models key their indexes by hashed ids, so each commit dirties pages all
  // over the file: a 64 MiB page cache keeps them in memory, and checkpointing every ~40 MB of
  // WAL instead of ~4 MB spreads the checkpoint's fsync over ten times as many commits.
  db.pragma('cache_size = -65536');
  db.pragma('wal_autocheckpoint = 10000');
  db.pragma('journal_size_limit = 67108864');
  return db;
}

const shared = new Map<string, { db: Database.Database; refs: number; checkpoints: BackgroundCheckpoints }>();

/**
 * One connection per file per process, shared by the event store and the read models. Two
 * connections to one file would invalidate each other's page cache on every write (each append
 * followed by a projection batch), which costs more than the writes themselves.
 */
export function acquireSqlite(file: string, synchronous: 'FULL' | 'NORMAL' = 'NORMAL'): Database.Database {
  // An in-memory database (the application's tests on in-memory ports) is its caller's alone.
  if (file === ':memory:') return new Database(':memory:');
  const key = path.resolve(file);
  const entry = shared.get(key);
  if (entry && entry.db.open) {
    entry.refs++;
    return entry.db;
  }
  // A connection closed behind our back leaves its checkpointer running: it goes with it.
  if (entry) void entry.checkpoints.stop();
  const db = openSqlite(key, synchronous);
  const checkpoints = startBackgroundCheckpoints(key, { synchronous, onError: (message) => process.emitWarning(`background WAL checkpoints of ${key}: ${message}`, 'SqliteCheckpointWarning') });
  shared.set(key, { db, refs: 1, checkpoints });
  return db;
}

/**
 * Closes the shared connection when its last user lets go, after its background checkpointer
 * (so the closing connection is the file's last and folds the WAL back into it).
 */
export async function releaseSqlite(db: Database.Database): Promise<void> {
  const key = path.resolve(db.name);
  const entry = shared.get(key);
  if (entry?.db === db && --entry.refs > 0) return;
  if (entry?.db === db) {
    shared.delete(key);
    await entry.checkpoints.stop();
  }
  if (db.open) db.close();
}

/** An event as the events table stores it, serialized before it is queued for a commit. */
interface EncodedEvent {
  id?: string;
  type: string;
  data: string;
  /** The metadata JSON, with the commit's time first (unless the caller gave its own). */
  metadata: (now: string) => string;
}

function encode(e: NewEvent): EncodedEvent {
  const data = storedJson(e.data);
  const given = e.metadata ?? {};
  const rest = storedJson(given); // refused now, not inside the commit
  if (Object.hasOwn(given, 'time') || !rest.startsWith('{')) return { id: e.id, type: e.type, data, metadata: (now) => storedJson({ time: now, ...given }) };
  // The same text as storedJson({ time: now, ...given }), without serializing twice.
  return { id: e.id, type: e.type, data, metadata: (now) => (rest === '{}' ? `{"time":"${now}"}` : `{"time":"${now}",${rest.slice(1)}`) };
}

function toStored(r: Row): StoredEvent {
  return {
    id: r.event_id,
    streamId: r.stream_id,
    type: r.type,
    data: JSON.parse(r.data),
    metadata: JSON.parse(r.metadata),
    streamVersion: r.stream_version,
    position: r.position,
  };
}

/**
 * The embedded default. SQLite serialises writers, and positions come from AUTOINCREMENT inside
 * the write transaction, so commit order equals position order and readAll can never skip an
 * in-flight event.
 */
/** The most recent events this process keeps for readers following the head: by count, and by their text's size. */
const RECENT_MAX_EVENTS = 8192;
const RECENT_MAX_CHARS = 8 * 1024 * 1024;

export class SqliteEventStore implements EventStore {
  readonly kind = 'sqlite';
  readonly db: Database.Database;
  private wake = new LocalWake();
  private pollIntervalMs: number;
  private appendTx: (streamId: string, events: readonly EncodedEvent[], expected: ExpectedVersion) => { result: AppendResult; rows: Row[] };
  /**
   * The events this process committed most recently, with contiguous positions. readAll serves
   * a range from here when it lies inside it: contiguity proves no other writer's event sits in
   * between, and subscribers following the head (projections, consumers) skip a query per batch.
   */
  private recent: { row: Row; stored?: StoredEvent }[] = [];
  /** Characters of data and metadata held in `recent`: bounded, as events may be large. */
  private recentChars = 0;
  private groupTx: (fn: () => void) => void;
  private appendInGroup: (streamId: string, events: readonly EncodedEvent[], expected: ExpectedVersion) => { result: AppendResult; rows: Row[] };
  private stmts;

  constructor(options: SqliteEventStoreOptions) {
    this.db = acquireSqlite(options.file, options.synchronous);
    this.db.exec(SCHEMA);
    this.pollIntervalMs = options.pollIntervalMs ?? 200;
    this.stmts = {
      version: this.db.prepare<[string], { v: number | null }>(
        'SELECT MAX(stream_version) AS v FROM events WHERE stream_id = ?',
      ),
      insert: this.db.prepare(
        'INSERT INTO events (event_id, stream_id, stream_version, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      readStream: this.db.prepare<[string, number, number], Row>(
        'SELECT * FROM events WHERE stream_id = ? AND stream_version >= ? ORDER BY stream_version LIMIT ?',
      ),
      readAll: this.db.prepare<[number, number], Row>('SELECT * FROM events WHERE position >= ? ORDER BY position LIMIT ?'),
      head: this.db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events'),
    };
    const write = (streamId: string, events: readonly EncodedEvent[], expected: ExpectedVersion) => {
      // A stream that must be new needs no lookup: the unique (stream_id, stream_version) index
      // refuses version 1 exactly when the stream exists, and a refused statement writes nothing.
      const fresh = expected === 'no_stream' || expected === 0;
      const current = fresh ? 0 : (this.stmts.version.get(streamId)?.v ?? 0);
      if (!fresh) checkExpectedVersion(streamId, expected, current);
      const now = new Date().toISOString();
      const rows: Row[] = events.map((e, i) => {
        const row = {
          event_id: e.id ?? newEventId(),
          stream_id: streamId,
          stream_version: current + i + 1,
          type: e.type,
          data: e.data,
          metadata: e.metadata(now),
          position: 0,
        };
        let info: Database.RunResult;
        try {
          info = this.stmts.insert.run(row.event_id, streamId, row.stream_version, row.type, row.data, row.metadata);
        } catch (err) {
          if (fresh && i === 0 && /UNIQUE constraint failed: events\.stream_id, events\.stream_version/.test((err as Error).message)) {
            throw new ConcurrencyError(streamId, expected, this.stmts.version.get(streamId)?.v ?? 0);
          }
          throw err;
        }
        row.position = Number(info.lastInsertRowid);
        return row;
      });
      return { result: { nextVersion: current + events.length, position: rows.at(-1)?.position ?? 0 }, rows };
    };
    const tx = this.db.transaction(write);
    // IMMEDIATE takes the write lock before reading the version, so two processes cannot both
    // pass the expected-version check.
    this.appendTx = (s, e, x) => tx.immediate(s, e, x);
    // Inside a group, an append needs no savepoint of its own: a version conflict is raised
    // before it writes anything, and any other failure rolls the whole group back.
    this.appendInGroup = write;
    const group = this.db.transaction((fn: () => void) => fn());
    this.groupTx = (fn) => group.immediate(fn);
  }

  async append(
    streamId: string,
    events: readonly NewEvent[],
    options: { expectedVersion?: ExpectedVersion } = {},
  ): Promise<AppendResult> {
    const expected = options.expectedVersion ?? 'any';
    validateAppend(streamId, events, expected);
    // Serialized (and refused, if a string cannot be stored) before joining a group commit, so
    // such an event fails alone instead of rolling back everyone's appends in its group.
    const encoded = events.map(encode);
    if (events.length === 0) {
      const { result } = this.appendTx(streamId, encoded, expected);
      result.position = await this.headPosition();
      return result;
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.pending.push({ streamId, events: encoded, expected, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.commitPending());
    });
  }

  private pending: { streamId: string; events: readonly EncodedEvent[]; expected: ExpectedVersion; resolve: (r: AppendResult) => void; reject: (e: unknown) => void }[] = [];

  /**
   * Group commit: appends made in the same turn of the event loop (concurrent requests) commit in
   * one transaction, so one version conflict fails only its own append (it is raised before that
   * append writes). Any other failure part-way rolls the group back and its appends are committed
   * one by one instead, so only the faulty one fails. Every promise settles after the commit, so
   * an acknowledged append is durable.
   */
  private commitPending(): void {
    const batch = this.pending.splice(0);
    let outcomes: ({ ok: { result: AppendResult; rows: Row[] } } | { err: unknown })[] = [];
    let faultyAppend = false;
    try {
      this.groupTx(() => {
        for (const a of batch) {
          try {
            outcomes.push({ ok: this.appendInGroup(a.streamId, a.events, a.expected) });
          } catch (err) {
            if (!(err instanceof ConcurrencyError)) {
              faultyAppend = true;
              throw err;
            }
            outcomes.push({ err });
          }
        }
      });
    } catch (err) {
      if (!faultyAppend) {
        // The transaction itself failed (the write lock stayed busy, the disk refused): every
        // append in it failed the same way, and retrying each alone would only wait again.
        const failure = lockedOut(err);
        for (const a of batch) a.reject(failure);
        return;
      }
      outcomes = batch.map((a) => {
        try {
          return { ok: this.appendTx(a.streamId, a.events, a.expected) };
        } catch (e) {
          return { err: e };
        }
      });
    }
    for (const o of outcomes) if ('ok' in o) this.remember(o.ok.rows);
    batch.forEach((a, i) => {
      const o = outcomes[i]!;
      if ('ok' in o) a.resolve(o.ok.result);
      else a.reject(o.err);
    });
    this.wake.notify();
  }

  private remember(rows: Row[]): void {
    for (const r of rows) {
      const last = this.recent.at(-1);
      // Another process appended in between (or this is the first): start a new contiguous run.
      if (last && r.position !== last.row.position + 1) {
        this.recent = [];
        this.recentChars = 0;
      }
      this.recent.push({ row: r }); // parsed on first read, then shared by every reader
      this.recentChars += r.data.length + r.metadata.length;
    }
    // Bounded by count and by size: the newest half is kept (readers follow the head).
    if (this.recent.length > RECENT_MAX_EVENTS || this.recentChars > RECENT_MAX_CHARS) {
      let chars = 0;
      let keep = 0;
      while (keep < this.recent.length && keep < RECENT_MAX_EVENTS / 2) {
        const r = this.recent[this.recent.length - 1 - keep]!.row;
        if (chars + r.data.length + r.metadata.length > RECENT_MAX_CHARS / 2) break;
        chars += r.data.length + r.metadata.length;
        keep++;
      }
      this.recent = keep ? this.recent.slice(-keep) : [];
      this.recentChars = chars;
    }
  }

  /**
   * The recent events held in memory: entries, and bytes estimated as their text twice over
   * (UTF-16, then the parsed copy readers share).
   */
  recentHeld(): { entries: number; bytes: number } {
    return { entries: this.recent.length, bytes: this.recentChars * 4 };
  }

  /**
   * `log import`: events from another store as they are (ids, versions, metadata, positions), in
   * one transaction. For an empty store nobody else writes: versions are checked only by the
   * unique index, which the importer's own check (LogTally) makes redundant.
   */
  async importEvents(events: readonly StoredEvent[]): Promise<void> {
    const insert = this.db.prepare('INSERT INTO events (position, event_id, stream_id, stream_version, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const tx = this.db.transaction(() => {
      for (const e of events) insert.run(e.position, e.id, e.streamId, e.streamVersion, e.type, storedJson(e.data), storedJson(e.metadata));
    });
    try {
      tx.immediate();
    } catch (err) {
      throw lockedOut(err);
    }
    this.wake.notify();
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    if (!isPossibleStreamId(streamId)) return [];
    return this.stmts.readStream.all(streamId, options.fromVersion ?? 1, options.limit ?? -1).map(toStored);
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    const from = options.fromPosition ?? 0;
    const limit = options.limit ?? 1000;
    const first = this.recent[0]?.row.position;
    if (first !== undefined && from >= first && from <= this.recent.at(-1)!.row.position) {
      return this.recent.slice(from - first, from - first + limit).map((e) => (e.stored ??= toStored(e.row)));
    }
    return this.stmts.readAll.all(from, limit).map(toStored);
  }

  async headPosition(): Promise<number> {
    return this.stmts.head.get()?.p ?? 0;
  }

  subscribe(handler: BatchHandler, options?: SubscribeOptions): Subscription {
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

  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await releaseSqlite(this.db);
  }
}
