import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner, rebuildBeside } from '../../src/projections/runner';
import { CheckpointMovedError, ProjectionWriteError, type ReadModelStore } from '../../src/readmodel/port';
import { Leases } from '../../src/readmodel/leases';
import { PostgresReadModelStore } from '../../src/readmodel/postgres';
import { PG_ADMIN_URL, describeWith, eventually } from '../support/infra';
import { postgresProjectionEngines, sqliteProjectionEngines, type ProjectionEngines } from '../support/projection-engines';

/** A projection whose rows make double application visible: a counter and a per-event row. */
const tally: Projection = {
  name: 'tally',
  version: 1,
  tables: ['tally_totals', 'tally_seen'],
  ddl: {
    sqlite: [
      'CREATE TABLE IF NOT EXISTS tally_totals (stream TEXT PRIMARY KEY, n INTEGER NOT NULL)',
      'CREATE TABLE IF NOT EXISTS tally_seen (position INTEGER PRIMARY KEY)',
    ],
    postgres: [
      'CREATE TABLE IF NOT EXISTS tally_totals (stream TEXT PRIMARY KEY, n BIGINT NOT NULL)',
      'CREATE TABLE IF NOT EXISTS tally_seen (position BIGINT PRIMARY KEY)',
    ],
  },
  handles: ['Counted'],
  evolve: (e) => [
    {
      sql: 'INSERT INTO tally_totals (stream, n) VALUES (?, 1) ON CONFLICT (stream) DO UPDATE SET n = tally_totals.n + 1',
      params: [e.streamId],
    },
    // A primary-key violation here would expose a second application of the same event.
    { sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [e.position] },
  ],
};

type Engines = ProjectionEngines;

function projectionContract(name: string, open: () => Promise<Engines>): void {
  describe(`projections contract: ${name}`, () => {
    let e: Engines;
    const extra: ReadModelStore[] = [];
    beforeEach(async () => {
      e = await open();
    });
    afterEach(async () => {
      for (const r of extra.splice(0)) await r.close();
      await e.cleanup();
    });

    const total = async (rm: ReadModelStore) =>
      Number((await rm.query<{ n: number }>('SELECT COALESCE(SUM(n), 0) AS n FROM tally_totals'))[0]!.n);

    it('one applier among instances: the other follows (its waits and cache drops wait for the applier\'s writes) and takes over when the applier stops', async () => {
      const rm2 = await e.second();
      extra.push(rm2);
      const lease = async (rm: ReadModelStore, holder: string) => ({ leases: await Leases.open(rm, holder), ttlMs: 300 });
      const a = new ProjectionRunner(e.store, e.rm, [tally], undefined, 1000, await lease(e.rm, 'a'));
      const b = new ProjectionRunner(e.store, rm2, [tally], undefined, 1000, await lease(rm2, 'b'));
      const heardByB: number[] = [];
      b.onWritten((events) => heardByB.push(...events.map((x) => x.position)));
      await a.start();
      await b.start();
      for (let i = 0; i < 30; i++) await e.store.append(`f-${i % 3}`, [{ type: 'Counted', data: {} }]);
      const head = await e.store.headPosition();
      await b.waitFor(head, undefined, 15_000);
      // b says it is caught up only once the rows are there, and it wrote none of them itself.
      expect(b.caughtUpWith(head)).toBe(true);
      expect(await total(rm2)).toBe(30);
      expect(heardByB).toContain(head);
      expect((await (await Leases.open(rm2, 'observer')).holderOf('projections-applier'))?.holder).toBe('a');
      await a.stop();
      await e.store.append('f-after', [{ type: 'Counted', data: {} }]);
      await eventually(async () => (await total(rm2)) === 31, 15_000, 'the follower applies once the applier is gone');
      expect(Number((await e.rm.query<{ n: number }>('SELECT COUNT(*) AS n FROM tally_seen'))[0]!.n)).toBe(31); // each event once
      await b.stop();
    });

    it('applies each event once, skips unhandled types, and commits the checkpoint with the rows', async () => {
      for (let i = 0; i < 50; i++) await e.store.append(`s-${i % 5}`, [{ type: i % 10 === 0 ? 'Other' : 'Counted', data: {} }]);
      const runner = new ProjectionRunner(e.store, e.rm, [tally], undefined, 7);
      await runner.start();
      const head = await e.store.headPosition();
      await eventually(() => runner.caughtUpWith(head), 15_000, 'caught up');
      expect(await total(e.rm)).toBe(45);
      expect((await e.rm.getCheckpoint('tally')).position).toBe(head);
      await e.store.append('s-live', [{ type: 'Counted', data: {} }]);
      await eventually(async () => (await total(e.rm)) === 46, 15_000, 'live event');
      await runner.stop();

      // A restart resumes from the stored checkpoint: nothing is applied twice.
      const again = new ProjectionRunner(e.store, e.rm, [tally]);
      await again.start();
      await e.store.append('s-live', [{ type: 'Counted', data: {} }]);
      await eventually(async () => (await total(e.rm)) === 47, 15_000, 'after restart');
      await again.stop();
    });

    it('rejects a batch whose checkpoint moved, leaving rows untouched', async () => {
      await e.rm.migrate(tally.ddl[e.rm.dialect]);
      await e.rm.applyBatch('tally', 0, 5, [{ sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [1] }], 1);
      await expect(
        e.rm.applyBatch('tally', 0, 9, [{ sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [2] }], 1),
      ).rejects.toBeInstanceOf(CheckpointMovedError);
      await expect(
        e.rm.applyBatch('tally', 3, 9, [{ sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [3] }], 1),
      ).rejects.toBeInstanceOf(CheckpointMovedError);
      const rows = await e.rm.query<{ position: number }>('SELECT position FROM tally_seen ORDER BY position');
      expect(rows.map((r) => Number(r.position))).toEqual([1]);
      expect(await e.rm.getCheckpoint('tally')).toEqual({ position: 5, version: 1 });
    });

    it('checkpoint moves asked for together each succeed or fail alone (a stale one does not hold back the rest)', async () => {
      // What six bus consumers do after the same batch: move their own checkpoints, with nothing
      // else to write (the SQLite store commits such moves of one turn in one transaction).
      await e.rm.applyBatch('group:a', 0, 4, []);
      await e.rm.applyBatch('group:b', 0, 4, []);
      const moves = await Promise.allSettled([
        e.rm.applyBatch('group:a', 4, 10, []),
        e.rm.applyBatch('group:b', 2, 10, []), // stale: b is at 4
        e.rm.applyBatch('group:c', 0, 10, []),
      ]);
      expect(moves.map((m) => m.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((moves[1] as PromiseRejectedResult).reason).toBeInstanceOf(CheckpointMovedError);
      expect(await e.rm.getCheckpoint('group:a')).toEqual({ position: 10, version: 0 });
      expect(await e.rm.getCheckpoint('group:b')).toEqual({ position: 4, version: 0 });
      expect(await e.rm.getCheckpoint('group:c')).toEqual({ position: 10, version: 0 });
    });

    it('a statement that fails names its projection and leaves rows and checkpoint as they were', async () => {
      await e.rm.migrate(tally.ddl[e.rm.dialect]);
      await e.rm.applyBatch('tally', 0, 5, [{ sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [1] }], 1);
      const failed = e.rm.applyBatch('tally', 5, 9, [
        { sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [2] },
        { sql: 'INSERT INTO tally_seen (position) VALUES (?)', params: [1] }, // duplicate key
      ], 1);
      await expect(failed).rejects.toBeInstanceOf(ProjectionWriteError);
      await expect(failed).rejects.toThrow(/^projection tally could not write its rows: /);
      const rows = await e.rm.query<{ position: number }>('SELECT position FROM tally_seen ORDER BY position');
      expect(rows.map((r) => Number(r.position))).toEqual([1]);
      expect(await e.rm.getCheckpoint('tally')).toEqual({ position: 5, version: 1 });
    });

    it('a batch writes its parameters exactly as given, in order (quotes, backslashes, question marks, nulls, numbers, bytes; a row inserted then updated)', async () => {
      await e.rm.migrate(['CREATE TABLE IF NOT EXISTS literal_rows (id TEXT PRIMARY KEY, t TEXT, n BIGINT, x DOUBLE PRECISION, b BYTEA)']);
      const awkward = ["it's", 'back\\slash \\\' quote', 'what? ?', "E'x'", '$1 $$ -- ;', 'naïve 日本 \u{1F600}', ''];
      const statements: { sql: string; params: unknown[] }[] = awkward.map((t, i) => ({ sql: 'INSERT INTO literal_rows (id, t, n, x) VALUES (?, ?, ?, ?)', params: [`r${i}`, t, -9007199254740991 + i, 0.1 + i] }));
      statements.push({ sql: 'INSERT INTO literal_rows (id, t, n, x) VALUES (?, ?, ?, ?)', params: ['nulls', null, null, null] });
      statements.push({ sql: 'INSERT INTO literal_rows (id, b) VALUES (?, ?)', params: ['bytes', Buffer.from([0, 1, 92, 39, 255])] });
      // Order matters: the update must see the insert just before it in the same batch.
      statements.push({ sql: 'UPDATE literal_rows SET t = t || ?, n = n + ? WHERE id = ?', params: ['!', 1, 'r0'] });
      // A negative number after a minus (written bare it would start a `--` comment).
      statements.push({ sql: 'UPDATE literal_rows SET n = n -? WHERE id = ?', params: [-2, 'r1'] });
      // PostgreSQL: a number where the column is TEXT takes the column's type, as a parameter does.
      // (better-sqlite3 binds a JS number as REAL, stored in TEXT as '42.0': not this test's point.)
      const pgOnly = e.rm instanceof PostgresReadModelStore;
      if (pgOnly) statements.push({ sql: 'INSERT INTO literal_rows (id, t) VALUES (?, ?)', params: [42, 'numeric id'] }, { sql: 'UPDATE literal_rows SET t = t || ? WHERE id = ?', params: ['?', 42] });
      await e.rm.applyBatch('literals', 0, 3, statements);
      const rows = await e.rm.query<{ id: string; t: string | null; n: number | string | null; x: number | null }>('SELECT id, t, n, x FROM literal_rows ORDER BY id');
      const byId = new Map(rows.map((r) => [r.id, r]));
      awkward.forEach((t, i) => {
        const r = byId.get(`r${i}`)!;
        expect(r.t).toBe(i === 0 ? `${t}!` : t);
        expect(Number(r.n)).toBe(-9007199254740991 + i + (i === 0 ? 1 : 0) + (i === 1 ? 2 : 0));
        expect(Number(r.x)).toBeCloseTo(0.1 + i, 12);
      });
      expect(byId.get('nulls')).toEqual({ id: 'nulls', t: null, n: null, x: null });
      if (pgOnly) expect(byId.get('42')?.t).toBe('numeric id?');
      const [bytes] = await e.rm.query<{ b: Buffer }>('SELECT b FROM literal_rows WHERE id = ?', ['bytes']);
      expect([...bytes!.b]).toEqual([0, 1, 92, 39, 255]);
      expect(await e.rm.getCheckpoint('literals')).toEqual({ position: 3, version: 0 });
      // On PostgreSQL all of it went as one round trip, not the statement-by-statement retry.
      if (e.rm instanceof PostgresReadModelStore) expect(e.rm.retriedBatches).toBe(0);
    });

    it('two runners on one read model (two instances) still apply each event exactly once', async () => {
      const rm2 = await e.second();
      extra.push(rm2);
      const a = new ProjectionRunner(e.store, e.rm, [tally], undefined, 3);
      const b = new ProjectionRunner(e.store, rm2, [tally], undefined, 3);
      await Promise.all([a.start(), b.start()]);
      for (let i = 0; i < 120; i++) await e.store.append(`c-${i % 4}`, [{ type: 'Counted', data: { i } }]);
      const head = await e.store.headPosition();
      await eventually(async () => (await e.rm.getCheckpoint('tally')).position === head, 20_000, 'checkpoint at head');
      await Promise.all([a.stop(), b.stop()]);
      expect(await total(e.rm)).toBe(120);
    });

    it('rebuilds from zero to the same rows', async () => {
      for (let i = 0; i < 300; i++) await e.store.append(`r-${i % 3}`, [{ type: 'Counted', data: {} }]);
      const runner = new ProjectionRunner(e.store, e.rm, [tally]);
      await runner.start();
      const head = await e.store.headPosition();
      await eventually(() => runner.caughtUpWith(head), 15_000, 'caught up');
      await runner.stop();
      const before = await e.rm.query('SELECT stream, n FROM tally_totals ORDER BY stream');
      const progress: number[] = [];
      const result = await rebuildBeside(e.store, e.rm, tally, (_p, _h, applied) => progress.push(applied), 64);
      expect(result).toEqual({ events: 300, position: head });
      expect(progress.at(-1)).toBe(300);
      expect(await e.rm.query('SELECT stream, n FROM tally_totals ORDER BY stream')).toEqual(before);
    });

    it('rebuilds a projection whose version changed at start', async () => {
      await e.store.append('v', [{ type: 'Counted', data: {} }]);
      await e.rm.migrate(tally.ddl[e.rm.dialect]);
      // Pretend an older build applied it with different rows.
      await e.rm.applyBatch('tally', 0, await e.store.headPosition(), [
        { sql: 'INSERT INTO tally_totals (stream, n) VALUES (?, ?)', params: ['v', 99] },
      ], 0);
      const runner = new ProjectionRunner(e.store, e.rm, [tally]);
      await runner.start();
      await eventually(async () => (await total(e.rm)) === 1, 15_000, 'rebuilt');
      await runner.stop();
    });
  });
}

projectionContract('sqlite', sqliteProjectionEngines);

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'postgres read models', () => {
  projectionContract('postgres', postgresProjectionEngines);
});
