import pg from 'pg';
import { CHECKPOINTS_DDL, CheckpointMovedError, ProjectionWriteError, type CheckpointMove, type ProjectionSwap, type ReadModelStore, type Sql } from './port';
import { batchText, CHECKPOINT_CLAIM_FUNCTION, CHECKPOINT_MOVED_CODE } from './postgres-batch';

pg.types.setTypeParser(20, (v) => Number(v));

/** Rewrites `?` placeholders to `$1…$n` (projection SQL never contains a literal `?`). */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

export class PostgresReadModelStore implements ReadModelStore {
  readonly dialect = 'postgres';
  readonly pool: pg.Pool;
  private texts = new Map<string, string>();
  /** Batches whose one round trip failed for another reason than a moved checkpoint and were run again statement by statement. */
  retriedBatches = 0;

  private constructor(connectionString: string) {
    this.pool = new pg.Pool({ connectionString, max: 10 });
    this.pool.on('error', () => {});
  }

  static async connect(connectionString: string): Promise<PostgresReadModelStore> {
    const store = new PostgresReadModelStore(connectionString);
    await store.pool.query(CHECKPOINTS_DDL);
    // Instances starting together: CREATE OR REPLACE FUNCTION races with itself ("tuple concurrently updated").
    await store.pool.query(`BEGIN; SELECT pg_advisory_xact_lock(4242003); ${CHECKPOINT_CLAIM_FUNCTION} COMMIT`);
    return store;
  }

  private text(sql: string): string {
    let t = this.texts.get(sql);
    if (!t) {
      t = numberPlaceholders(sql);
      this.texts.set(sql, t);
    }
    return t;
  }

  async migrate(statements: readonly string[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock(4242002)');
      for (const s of statements) await client.query(s);
    } finally {
      await client.query('SELECT pg_advisory_unlock(4242002)').catch(() => {});
      client.release();
    }
  }

  async getCheckpoint(name: string): Promise<{ position: number; version: number }> {
    const { rows } = await this.pool.query('SELECT position, version FROM checkpoints WHERE name = $1', [name]);
    return rows[0] ?? { position: 0, version: 0 };
  }

  async applyBatch(name: string, from: number, to: number, statements: readonly Sql[], version = 0): Promise<void> {
    return this.applyBatches([{ name, from, to, statements, version }]);
  }

  /**
   * One round trip for the whole batch (see postgres-batch.ts). When it fails for another reason
   * than a moved checkpoint, it is rolled back and run again one statement at a time, which names
   * the projection whose statement fails (or succeeds, if the failure was passing). A batch that
   * switches in a projection rebuilt beside (swaps: DDL and checks of their own) takes that path too.
   */
  async applyBatches(moves: readonly CheckpointMove[], swaps: readonly ProjectionSwap[] = []): Promise<void> {
    const text = swaps.length > 0 ? undefined : batchText(moves);
    if (text === undefined) return this.applyStatementByStatement(moves, swaps);
    const client = await this.pool.connect();
    let failed = false;
    try {
      await client.query(text);
    } catch (err) {
      failed = true;
      await client.query('ROLLBACK').catch(() => {});
      const e = err as { code?: string; detail?: string };
      if (e.code === CHECKPOINT_MOVED_CODE) {
        const moved = moves.find((m) => m.name === e.detail) ?? moves[0]!;
        throw new CheckpointMovedError(moved.name, moved.from);
      }
    } finally {
      client.release();
    }
    if (!failed) return;
    this.retriedBatches++;
    await this.applyStatementByStatement(moves);
  }

  private async applyStatementByStatement(moves: readonly CheckpointMove[], swaps: readonly ProjectionSwap[] = []): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      for (const { name, from, to, statements, version = 0 } of moves) {
        const claim =
          from === 0
            ? await client.query(
                `INSERT INTO checkpoints (name, position, version) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET position = excluded.position, version = excluded.version
                 WHERE checkpoints.position = 0`,
                [name, to, version],
              )
            : await client.query('UPDATE checkpoints SET position = $1, version = $2 WHERE name = $3 AND position = $4', [to, version, name, from]);
        if (claim.rowCount !== 1) throw new CheckpointMovedError(name, from);
        try {
          for (const s of statements) await client.query(this.text(s.sql), (s.params ?? []) as unknown[]);
        } catch (err) {
          throw new ProjectionWriteError(name, err);
        }
      }
      for (const swap of swaps) await this.swap(client, swap);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * See ProjectionSwap. PostgreSQL DDL is transactional; readers of the live tables wait for the
   * commit (DROP takes an exclusive lock) and then find the renamed tables under the same names.
   */
  private async swap(client: pg.PoolClient, s: ProjectionSwap): Promise<void> {
    const claimed = await client.query('DELETE FROM checkpoints WHERE name = $1 AND position = $2', [s.shadowCheckpoint, s.position]);
    if (claimed.rowCount !== 1) throw new CheckpointMovedError(s.shadowCheckpoint, s.position);
    // Live rows further on than the build (a runner still applies them): switching now would take
    // readers back in time. The build reads on and tries again. (Locked: no runner moves it meanwhile.)
    const live = await client.query<{ position: number }>('SELECT position FROM checkpoints WHERE name = $1 FOR UPDATE', [s.name]);
    if (live.rows[0] && Number(live.rows[0].position) > s.position) throw new CheckpointMovedError(s.name, s.position);
    for (const t of s.tables) await client.query(`DROP TABLE IF EXISTS ${t.live}`);
    for (const i of s.indexes) {
      await client.query(`DROP INDEX IF EXISTS ${i.live}`); // an old build's index on a table it no longer has
      await client.query(`ALTER INDEX IF EXISTS ${i.shadow} RENAME TO ${i.live}`);
    }
    for (const t of s.tables) {
      await client.query(`ALTER TABLE ${t.shadow} RENAME TO ${t.live}`);
      // Indexes PostgreSQL named after the table (`<table>_pkey`, `<table>_<column>_key`) keep the
      // shadow's name through a table rename: give them the live table's.
      const { rows } = await client.query<{ indexname: string }>('SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1', [t.live]);
      for (const { indexname } of rows) {
        if (indexname.startsWith(`${t.shadow}_`)) await client.query(`ALTER INDEX ${indexname} RENAME TO ${t.live}${indexname.slice(t.shadow.length)}`);
      }
    }
    for (const statement of s.ddl) await client.query(statement);
    await client.query(
      `INSERT INTO checkpoints (name, position, version) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET position = excluded.position, version = excluded.version`,
      [s.name, s.position, s.version],
    );
  }

  async reset(name: string, tables: readonly string[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      for (const t of tables) await client.query(`DROP TABLE IF EXISTS ${t}`);
      await client.query('DELETE FROM checkpoints WHERE name = $1', [name]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const { rows } = await this.pool.query(this.text(sql), params as unknown[]);
    return rows as T[];
  }

  async execute(sql: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.pool.query(this.text(sql), params as unknown[])).rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
