import type Database from 'better-sqlite3';
import { acquireSqlite, releaseSqlite } from '../eventstore/sqlite';
import { CHECKPOINTS_DDL, CheckpointMovedError, ProjectionWriteError, type CheckpointMove, type ProjectionSwap, type ReadModelStore, type Sql } from './port';

export class SqliteReadModelStore implements ReadModelStore {
  readonly dialect = 'sqlite';
  readonly db: Database.Database;
  private cache = new Map<string, Database.Statement>();

  constructor(file: string, synchronous: 'FULL' | 'NORMAL' = 'NORMAL') {
    this.db = acquireSqlite(file, synchronous);
    this.db.exec(CHECKPOINTS_DDL);
  }

  private stmt(sql: string): Database.Statement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.cache.set(sql, s);
    }
    return s;
  }

  async migrate(statements: readonly string[]): Promise<void> {
    for (const s of statements) this.db.exec(s);
  }

  async getCheckpoint(name: string): Promise<{ position: number; version: number }> {
    const row = this.stmt('SELECT position, version FROM checkpoints WHERE name = ?').get(name) as
      | { position: number; version: number }
      | undefined;
    return row ?? { position: 0, version: 0 };
  }

  async applyBatch(name: string, from: number, to: number, statements: readonly Sql[], version = 0): Promise<void> {
    if (statements.length === 0) return this.moveCheckpoint({ name, from, to, statements, version });
    return this.applyBatches([{ name, from, to, statements, version }]);
  }

  async applyBatches(moves: readonly CheckpointMove[], swaps: readonly ProjectionSwap[] = []): Promise<void> {
    this.db
      .transaction(() => {
        for (const move of moves) {
          if (!this.claim(move)) throw new CheckpointMovedError(move.name, move.from);
          try {
            for (const s of move.statements) this.stmt(s.sql).run(...((s.params ?? []) as unknown[]));
          } catch (err) {
            throw new ProjectionWriteError(move.name, err);
          }
        }
        for (const swap of swaps) this.swap(swap);
      })
      .immediate();
    // Cached statements name tables that are gone or are other tables now.
    if (swaps.length > 0) this.cache.clear();
  }

  /** See ProjectionSwap. SQLite DDL is transactional: it commits or rolls back with the batch. */
  private swap(s: ProjectionSwap): void {
    if (this.db.prepare('DELETE FROM checkpoints WHERE name = ? AND position = ?').run(s.shadowCheckpoint, s.position).changes !== 1) {
      throw new CheckpointMovedError(s.shadowCheckpoint, s.position);
    }
    // Live rows further on than the build (a runner still applies them): switching now would take
    // readers back in time. The build reads on and tries again.
    const live = this.db.prepare('SELECT position FROM checkpoints WHERE name = ?').get(s.name) as { position: number } | undefined;
    if (live && live.position > s.position) throw new CheckpointMovedError(s.name, s.position);
    for (const t of s.tables) this.db.exec(`DROP TABLE IF EXISTS ${t.live}`);
    // No ALTER INDEX … RENAME here: the shadow's indexes go, and the live DDL makes them again.
    for (const i of s.indexes) this.db.exec(`DROP INDEX IF EXISTS ${i.shadow}`);
    for (const t of s.tables) this.db.exec(`ALTER TABLE ${t.shadow} RENAME TO ${t.live}`);
    for (const statement of s.ddl) this.db.exec(statement);
    this.db
      .prepare('INSERT INTO checkpoints (name, position, version) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position, version = excluded.version')
      .run(s.name, s.position, s.version);
  }

  /**
   * Moves a checkpoint from `from` to `to`; false when it is no longer at `from` (another writer
   * moved it, or it was reset). Claimed first in a batch: a competing writer fails here before
   * touching any row.
   */
  private claim({ name, from, to, version = 0 }: CheckpointMove): boolean {
    const moved =
      from === 0
        ? this.stmt(
            'INSERT INTO checkpoints (name, position, version) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position, version = excluded.version WHERE checkpoints.position = 0',
          ).run(name, to, version).changes
        : this.stmt('UPDATE checkpoints SET position = ?, version = ? WHERE name = ? AND position = ?').run(to, version, name, from).changes;
    return moved === 1;
  }

  private pendingMoves: { move: CheckpointMove; resolve: () => void; reject: (err: unknown) => void }[] = [];

  /**
   * Group commit for checkpoint moves with nothing else to write: every bus consumer's, after each
   * batch (six consumers follow every append, so this was six write transactions per batch).
   * Moves asked for in the same turn of the event loop commit in one transaction; a move that
   * finds its checkpoint moved fails alone (its UPDATE wrote nothing), and every promise settles
   * after the commit, so a consumer still checkpoints only what it has handled.
   */
  private moveCheckpoint(move: CheckpointMove): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pendingMoves.push({ move, resolve, reject });
      if (this.pendingMoves.length === 1) setImmediate(() => this.commitMoves());
    });
  }

  private commitMoves(): void {
    const batch = this.pendingMoves.splice(0);
    if (batch.length === 0) return;
    let claimed: boolean[] = [];
    try {
      this.db.transaction(() => (claimed = batch.map(({ move }) => this.claim(move)))).immediate();
    } catch (err) {
      for (const m of batch) m.reject(err);
      return;
    }
    batch.forEach(({ move, resolve, reject }, i) => (claimed[i] ? resolve() : reject(new CheckpointMovedError(move.name, move.from))));
  }

  async reset(name: string, tables: readonly string[]): Promise<void> {
    this.db
      .transaction(() => {
        for (const t of tables) this.db.exec(`DROP TABLE IF EXISTS ${t}`);
        this.stmt('DELETE FROM checkpoints WHERE name = ?').run(name);
      })
      .immediate();
    this.cache.clear();
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.stmt(sql).all(...(params as unknown[])) as T[];
  }

  async execute(sql: string, params: readonly unknown[] = []): Promise<number> {
    return this.stmt(sql).run(...(params as unknown[])).changes;
  }

  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.commitMoves(); // moves asked for before the close are committed, not lost
    await releaseSqlite(this.db);
  }
}
