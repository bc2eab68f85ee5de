import type Database from 'better-sqlite3';
import { acquireSqlite, releaseSqlite } from '../eventstore/sqlite';
import { CHECKPOINTS_DDL, CheckpointMovedError, ProjectionWriteError, type CheckpointMove, type ReadModelStore, type Sql } from './port';

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
    return this.applyBatches([{ name, from, to, statements, version }]);
  }

  async applyBatches(moves: readonly CheckpointMove[]): Promise<void> {
    this.db
      .transaction(() => {
        for (const { name, from, to, statements, version = 0 } of moves) {
          // Claim the checkpoint first: a competing writer fails here before touching any row.
          const moved =
            from === 0
              ? this.stmt(
                  'INSERT INTO checkpoints (name, position, version) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position, version = excluded.version WHERE checkpoints.position = 0',
                ).run(name, to, version).changes
              : this.stmt('UPDATE checkpoints SET position = ?, version = ? WHERE name = ? AND position = ?').run(to, version, name, from).changes;
          if (moved !== 1) throw new CheckpointMovedError(name, from);
          try {
            for (const s of statements) this.stmt(s.sql).run(...((s.params ?? []) as unknown[]));
          } catch (err) {
            throw new ProjectionWriteError(name, err);
          }
        }
      })
      .immediate();
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
    releaseSqlite(this.db);
  }
}
