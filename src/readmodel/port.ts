/** One parameterised statement. Write placeholders as `?`; the PostgreSQL adapter numbers them. */
export interface Sql {
  sql: string;
  params?: readonly unknown[];
}

export type Dialect = 'sqlite' | 'postgres';

/**
 * Where read models and consumer checkpoints live (SQL tables). A projection's rows and its
 * checkpoint are written in one transaction, so replays after a crash apply each event once.
 */
export interface ReadModelStore {
  readonly dialect: Dialect;
  /** Runs DDL statements (idempotent: CREATE … IF NOT EXISTS). */
  migrate(statements: readonly string[]): Promise<void>;
  /** Stored checkpoint (0 when none) and the projection version it was built with. */
  getCheckpoint(name: string): Promise<{ position: number; version: number }>;
  /**
   * Applies `statements` and moves the checkpoint from `fromPosition` to `toPosition` atomically.
   * Throws CheckpointMovedError (and applies nothing) when the stored checkpoint is not
   * `fromPosition`: another instance or a rebuild got there first.
   */
  applyBatch(name: string, fromPosition: number, toPosition: number, statements: readonly Sql[], version?: number): Promise<void>;
  /**
   * Several projections' batches in one transaction: all move, or none (CheckpointMovedError).
   * `swaps` then run in the same transaction, after the moves: each switches a shadow build in.
   */
  applyBatches(moves: readonly CheckpointMove[], swaps?: readonly ProjectionSwap[]): Promise<void>;
  /** Drops the given tables and forgets the checkpoint (for rebuilds). */
  reset(name: string, tables: readonly string[]): Promise<void>;
  query<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /**
   * One write outside any projection, for operational tables that are not read models (the
   * webhook receiver's nonce cache). Returns how many rows it changed.
   */
  execute(sql: string, params?: readonly unknown[]): Promise<number>;
  close(): Promise<void>;
}

export interface CheckpointMove {
  name: string;
  from: number;
  to: number;
  statements: readonly Sql[];
  version?: number;
}

/**
 * Switches a projection's shadow build in (see projections/shadow.ts): drops the live tables,
 * renames the shadow tables (and indexes) to the live names, runs the live DDL (idempotent; on
 * SQLite, which cannot rename an index, it recreates the indexes), and moves the live checkpoint
 * to where the shadow's is, with the new version, deleting the shadow's. All in the transaction
 * of `applyBatches`: a crash leaves the old build or the new one, never neither. Refused
 * (CheckpointMovedError) when the shadow's checkpoint is not at `position`, or the live one is past it.
 */
export interface ProjectionSwap {
  name: string;
  shadowCheckpoint: string;
  version: number;
  /** The shadow's checkpoint as this build last stored it (after the moves of the same call). */
  position: number;
  tables: readonly { live: string; shadow: string }[];
  indexes: readonly { live: string; shadow: string }[];
  ddl: readonly string[];
}

/** A projection's statement failed: names the projection, so a stalled runner's log says which. */
export class ProjectionWriteError extends Error {
  constructor(
    readonly projection: string,
    cause: unknown,
  ) {
    super(`projection ${projection} could not write its rows: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'ProjectionWriteError';
  }
}

export class CheckpointMovedError extends Error {
  constructor(
    readonly checkpoint: string,
    readonly expected: number,
  ) {
    super(`checkpoint ${checkpoint} is no longer at ${expected}`);
    this.name = 'CheckpointMovedError';
  }
}

/**
 * Moves a checkpoint that several instances may move (a consumer group's, the Kafka relay's) from
 * `from` to `to`; when another instance moved it first, goes on from wherever that one got to.
 * Resolves with the position to continue from. (Failing the batch instead would have it handled
 * again, and for the relay published again, without end.)
 */
export async function moveSharedCheckpoint(store: ReadModelStore, name: string, from: number, to: number): Promise<number> {
  try {
    await store.applyBatch(name, from, to, []);
    return to;
  } catch (err) {
    if (!(err instanceof CheckpointMovedError)) throw err;
    return Math.max(from, (await store.getCheckpoint(name)).position);
  }
}

export const CHECKPOINTS_DDL = `CREATE TABLE IF NOT EXISTS checkpoints (
  name     TEXT PRIMARY KEY,
  position BIGINT NOT NULL,
  version  INTEGER NOT NULL DEFAULT 0
)`;
