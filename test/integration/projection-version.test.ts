import type { EventStore, StoredEvent } from '../../src/eventstore/port';
import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner, rebuildBeside } from '../../src/projections/runner';
import { planShadow } from '../../src/projections/shadow';
import { CheckpointMovedError, type ReadModelStore } from '../../src/readmodel/port';
import { Leases } from '../../src/readmodel/leases';
import { PG_ADMIN_URL, describeWith, eventually } from '../support/infra';
import { postgresProjectionEngines, replayInPlace, sqliteProjectionEngines, type ProjectionEngines } from '../support/projection-engines';

const big = (rm: ReadModelStore) => (rm.dialect === 'postgres' ? 'BIGINT' : 'INTEGER');

/** v1: shots per stream. */
const shotsV1 = (dialectBig: string): Projection => ({
  name: 'shots',
  version: 1,
  tables: ['shot_totals'],
  ddl: {
    sqlite: ['CREATE TABLE IF NOT EXISTS shot_totals (stream TEXT PRIMARY KEY, n INTEGER NOT NULL)', 'CREATE INDEX IF NOT EXISTS shot_totals_by_n ON shot_totals (n)'],
    postgres: [`CREATE TABLE IF NOT EXISTS shot_totals (stream TEXT PRIMARY KEY, n ${dialectBig} NOT NULL)`, 'CREATE INDEX IF NOT EXISTS shot_totals_by_n ON shot_totals (n)'],
  },
  handles: ['Shot'],
  evolve: (e) => [{ sql: 'INSERT INTO shot_totals (stream, n) VALUES (?, 1) ON CONFLICT (stream) DO UPDATE SET n = shot_totals.n + 1', params: [e.streamId] }],
  // Folded per stream (as counters do), so tens of thousands of events build in seconds on PostgreSQL too.
  evolveBatch: (events) =>
    [...perStream(events)].map(([stream, { n }]) => ({ sql: 'INSERT INTO shot_totals (stream, n) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET n = shot_totals.n + excluded.n', params: [stream, n] })),
});

function perStream(events: readonly StoredEvent[]): Map<string, { n: number; last: number }> {
  const by = new Map<string, { n: number; last: number }>();
  for (const e of events) {
    const s = by.get(e.streamId) ?? { n: 0, last: 0 };
    by.set(e.streamId, { n: s.n + 1, last: e.position });
  }
  return by;
}

/** v2: a new column (the last shot's position) and an index on it; a changed evolve. */
const shotsV2 = (dialectBig: string): Projection => ({
  name: 'shots',
  version: 2,
  tables: ['shot_totals'],
  ddl: {
    sqlite: [
      'CREATE TABLE IF NOT EXISTS shot_totals (stream TEXT PRIMARY KEY, n INTEGER NOT NULL, last_position INTEGER NOT NULL)',
      'CREATE INDEX IF NOT EXISTS shot_totals_by_n ON shot_totals (n)',
      'CREATE INDEX IF NOT EXISTS shot_totals_by_last ON shot_totals (last_position)',
    ],
    postgres: [
      `CREATE TABLE IF NOT EXISTS shot_totals (stream TEXT PRIMARY KEY, n ${dialectBig} NOT NULL, last_position ${dialectBig} NOT NULL)`,
      'CREATE INDEX IF NOT EXISTS shot_totals_by_n ON shot_totals (n)',
      'CREATE INDEX IF NOT EXISTS shot_totals_by_last ON shot_totals (last_position)',
    ],
  },
  handles: ['Shot'],
  evolve: (e) => [
    {
      sql: 'INSERT INTO shot_totals (stream, n, last_position) VALUES (?, 1, ?) ON CONFLICT (stream) DO UPDATE SET n = shot_totals.n + 1, last_position = excluded.last_position',
      params: [e.streamId, e.position],
    },
  ],
  evolveBatch: (events) =>
    [...perStream(events)].map(([stream, { n, last }]) => ({
      sql: 'INSERT INTO shot_totals (stream, n, last_position) VALUES (?, ?, ?) ON CONFLICT (stream) DO UPDATE SET n = shot_totals.n + excluded.n, last_position = excluded.last_position',
      params: [stream, n, last],
    })),
});

type Engines = ProjectionEngines;

const STREAMS = 10;
const EVENTS = 20_000;

async function fill(store: EventStore, events: number, tag = 'a'): Promise<void> {
  for (let i = 0; i < events / 100; i++) {
    await store.append(`shots-${tag}-${i % STREAMS}`, Array.from({ length: 100 }, () => ({ type: 'Shot', data: {} })));
  }
}

type Row = { stream: string; n: number; last_position?: number };
const rowsOf = async (rm: ReadModelStore): Promise<Row[]> =>
  (await rm.query<Row>('SELECT * FROM shot_totals ORDER BY stream')).map((r) => ({ ...r, n: Number(r.n), ...(r.last_position !== undefined ? { last_position: Number(r.last_position) } : {}) }));

async function tablesLike(rm: ReadModelStore, pattern: string): Promise<string[]> {
  const rows =
    rm.dialect === 'sqlite'
      ? await rm.query<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE ? ESCAPE '!' ORDER BY name", [pattern])
      : await rm.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relname LIKE ? ESCAPE '!' AND relkind IN ('r', 'i') ORDER BY relname", [pattern]);
  return rows.map((r) => r.name);
}

/** v2 built from nothing, into tables of its own (a shadow under another version), for comparison. */
async function fromScratch(e: Engines, v2: Projection): Promise<Row[]> {
  const scratch = planShadow({ ...v2, version: 99 }, e.rm.dialect).shadow;
  await replayInPlace(e.store, e.rm, scratch, 4000);
  const rows = await e.rm.query<Row>('SELECT * FROM shot_totals__v99 ORDER BY stream');
  await e.rm.reset(scratch.name, scratch.tables);
  return rows.map((r) => ({ ...r, n: Number(r.n), last_position: Number(r.last_position) }));
}

async function buildV1(e: Engines): Promise<Row[]> {
  await fill(e.store, EVENTS);
  const v1 = new ProjectionRunner(e.store, e.rm, [shotsV1(big(e.rm))], undefined, 5000);
  await v1.start();
  await eventually(async () => v1.caughtUpWith(await e.store.headPosition()), 60_000, 'v1 built');
  await v1.stop();
  const rows = await rowsOf(e.rm);
  expect(rows).toHaveLength(STREAMS);
  expect(rows.reduce((s, r) => s + r.n, 0)).toBe(EVENTS);
  return rows;
}

function versionContract(name: string, open: () => Promise<Engines>): void {
  describe(`a projection whose version changed: ${name}`, () => {
    let e: Engines;
    beforeEach(async () => {
      e = await open();
    });
    afterEach(async () => {
      await e.cleanup();
    });

    it('is rebuilt beside the live one: reads answer the old rows throughout, then the new ones once it has caught up and switched', async () => {
      const v1Rows = await buildV1(e);
      const v2 = shotsV2(big(e.rm));
      // Small shadow batches: the build takes many turns, and reads run between them.
      const runner = new ProjectionRunner(e.store, e.rm, [v2], undefined, 1000, undefined, 250);
      let resyncs = 0;
      runner.onResync(() => resyncs++);
      const reader = await e.second();
      let readsDuringBuild = 0;
      let readsAfterSwitch = 0;
      let appendedDuringBuild = false;
      const failures: string[] = [];
      let done = false;
      const readLoop = (async () => {
        while (!done) {
          const shadowBefore = (await reader.getCheckpoint('shots@v2')).position;
          let rows: Row[] = [];
          try {
            rows = await rowsOf(reader);
          } catch (err) {
            failures.push(`read failed: ${(err as Error).message}`);
          }
          const switched = rows.length > 0 && rows[0]!.last_position !== undefined;
          if (!switched) {
            // The old rows, exactly: never empty, never half-built.
            if (JSON.stringify(rows) !== JSON.stringify(v1Rows)) failures.push(`read ${rows.length} rows that are not the v1 rows`);
            if (shadowBefore > 0) readsDuringBuild++;
            if (readsAfterSwitch > 0) failures.push('read the old rows after having read the new ones');
          } else {
            readsAfterSwitch++;
          }
          if (!appendedDuringBuild && shadowBefore > 0) {
            appendedDuringBuild = true; // events arriving mid-build end up in the v2 tables too
            await fill(e.store, 500, 'b');
          }
          await new Promise((r) => setImmediate(r));
        }
      })();
      await runner.start();
      try {
        expect(runner.rebuilding()).toEqual(['shots']);
        // Read-your-writes does not wait on a projection rebuilding beside: its rows are stale anyway.
        expect(runner.caughtUpWith(await e.store.headPosition())).toBe(true);
        await eventually(async () => runner.rebuilding().length === 0 && readsAfterSwitch > 5, 60_000, 'the switch');
        done = true;
        await readLoop;
        expect(failures).toEqual([]);
        expect(readsDuringBuild).toBeGreaterThan(0); // reads really were made during the build
        expect(appendedDuringBuild).toBe(true);
        expect(resyncs).toBeGreaterThan(0); // caches of rows heard of the switch
        const head = await e.store.headPosition();
        await runner.waitFor(head, undefined, 10_000);
        await eventually(async () => (await rowsOf(e.rm)).reduce((s, r) => s + r.n, 0) === EVENTS + 500, 20_000, 'events appended during the build in v2');
        expect(await e.rm.getCheckpoint('shots')).toEqual({ position: expect.any(Number), version: 2 });
        expect(await e.rm.getCheckpoint('shots@v2')).toEqual({ position: 0, version: 0 });
        expect(await tablesLike(e.rm, 'shot!_totals!_!_v%')).toEqual([]);
        expect((await tablesLike(e.rm, 'shot!_totals%')).sort()).toEqual(['shot_totals', 'shot_totals_by_last', 'shot_totals_by_n', ...(e.rm.dialect === 'postgres' ? ['shot_totals_pkey'] : [])].sort());
        await runner.stop();
        expect(await rowsOf(e.rm)).toEqual(await fromScratch(e, v2));
      } finally {
        done = true;
        await readLoop;
        await runner.stop();
        await reader.close();
      }
    }, 120_000);

    it('a restart mid-build resumes it (leftovers of a build that never committed are dropped) and converges', async () => {
      await buildV1(e);
      const v2 = shotsV2(big(e.rm));
      // A build that crashed before its first commit left a shadow table with no checkpoint.
      await e.rm.migrate(planShadow(v2, e.rm.dialect).shadow.ddl[e.rm.dialect]);
      await e.rm.execute('INSERT INTO shot_totals__v2 (stream, n, last_position) VALUES (?, ?, ?)', ['junk', 1, 1]);

      // The build's reads of the log can be held, so the runner is stopped with it surely mid-way.
      let reads = 0;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const slowStore = new Proxy(e.store, {
        get(target, key) {
          if (key === 'readAll') return async (o: Parameters<EventStore['readAll']>[0]) => (++reads === 4 ? held.then(() => target.readAll(o)) : target.readAll(o));
          const v = (target as unknown as Record<PropertyKey, unknown>)[key];
          return typeof v === 'function' ? v.bind(target) : v;
        },
      }) as EventStore;
      const first = new ProjectionRunner(slowStore, e.rm, [v2], undefined, 1000, undefined, 1000);
      await first.start();
      await eventually(() => reads >= 4, 30_000, 'the build to be under way');
      const stopping = first.stop();
      release();
      await stopping;
      const resumedFrom = (await e.rm.getCheckpoint('shots@v2')).position;
      expect(resumedFrom).toBe(3000); // three batches committed, the fourth never read
      expect((await e.rm.getCheckpoint('shots')).version).toBe(1);
      expect((await rowsOf(e.rm)).reduce((s, r) => s + r.n, 0)).toBe(EVENTS); // still the old rows

      await fill(e.store, 300, 'c');
      const second = new ProjectionRunner(e.store, e.rm, [v2], undefined, 1000, undefined, 1000);
      await second.start();
      try {
        await eventually(async () => second.rebuilding().length === 0 && (await e.rm.getCheckpoint('shots')).version === 2, 60_000, 'the switch');
        await second.waitFor(await e.store.headPosition(), undefined, 10_000);
      } finally {
        await second.stop();
      }
      const rows = await rowsOf(e.rm);
      expect(rows.find((r) => r.stream === 'junk')).toBeUndefined();
      expect(rows.reduce((s, r) => s + r.n, 0)).toBe(EVENTS + 300);
      expect(rows).toEqual(await fromScratch(e, v2));
      expect(await tablesLike(e.rm, 'shot!_totals!_!_v%')).toEqual([]);
    }, 120_000);

    it('`projections rebuild` builds beside an unchanged projection while a server applies it: never empty, never back in time, then followed', async () => {
      await buildV1(e);
      const v1 = shotsV1(big(e.rm));
      const server = new ProjectionRunner(e.store, e.rm, [v1], undefined, 1000);
      await server.start();
      const reader = await e.second();
      const total = (rows: Row[]) => rows.reduce((s, r) => s + r.n, 0);
      let readsDuringBuild = 0;
      let lastTotal = EVENTS;
      const failures: string[] = [];
      let done = false;
      let appended = 0;
      const readLoop = (async () => {
        while (!done) {
          const building = (await reader.getCheckpoint('shots@v1')).position > 0;
          try {
            const rows = await rowsOf(reader);
            if (total(rows) < lastTotal) failures.push(`read ${total(rows)} shots after ${lastTotal}`);
            lastTotal = total(rows);
            if (building) readsDuringBuild++;
          } catch (err) {
            failures.push(`read failed: ${(err as Error).message}`);
          }
          if (building && appended < 1000) {
            appended += 100; // the server applies these to the old tables while the build runs
            await e.store.append('shots-d-0', Array.from({ length: 100 }, () => ({ type: 'Shot', data: {} })));
          }
          await new Promise((r) => setImmediate(r));
        }
      })();
      try {
        const result = await rebuildBeside(e.store, e.rm, v1, undefined, 250);
        expect(result.position).toBeGreaterThanOrEqual(EVENTS);
        await server.waitFor(await e.store.headPosition(), undefined, 10_000);
        await eventually(async () => total(await rowsOf(e.rm)) === EVENTS + appended, 20_000, 'every shot, once');
        done = true;
        await readLoop;
        expect(failures).toEqual([]);
        expect(readsDuringBuild).toBeGreaterThan(0);
        expect(appended).toBeGreaterThan(0);
        expect(await e.rm.getCheckpoint('shots@v1')).toEqual({ position: 0, version: 0 });
        expect(await tablesLike(e.rm, 'shot!_totals!_!_v%')).toEqual([]);
      } finally {
        done = true;
        await readLoop;
        await server.stop();
        await reader.close();
      }
    }, 120_000);

    it('a switch is refused, changing nothing, when the build is not where it says or the live rows are further on', async () => {
      const v2 = shotsV2(big(e.rm));
      const v1 = shotsV1(big(e.rm));
      await e.rm.migrate(v1.ddl[e.rm.dialect]);
      await e.rm.applyBatch('shots', 0, 10, [{ sql: 'INSERT INTO shot_totals (stream, n) VALUES (?, ?)', params: ['old', 10] }], 1);
      const { shadow, tables, indexes } = planShadow(v2, e.rm.dialect);
      await e.rm.migrate(shadow.ddl[e.rm.dialect]);
      await e.rm.applyBatch(shadow.name, 0, 8, [{ sql: 'INSERT INTO shot_totals__v2 (stream, n, last_position) VALUES (?, ?, ?)', params: ['new', 8, 8] }], 2);
      const swap = (position: number) => ({ name: 'shots', shadowCheckpoint: shadow.name, version: 2, position, tables, indexes, ddl: v2.ddl[e.rm.dialect] });
      await expect(e.rm.applyBatches([], [swap(7)])).rejects.toThrow(CheckpointMovedError); // the build is at 8
      await expect(e.rm.applyBatches([], [swap(8)])).rejects.toThrow(CheckpointMovedError); // the live rows are at 10
      expect(await rowsOf(e.rm)).toEqual([{ stream: 'old', n: 10 }]);
      expect(await e.rm.getCheckpoint(shadow.name)).toEqual({ position: 8, version: 2 });
      await e.rm.applyBatches([{ name: shadow.name, from: 8, to: 10, statements: [{ sql: 'UPDATE shot_totals__v2 SET n = n + 2, last_position = 10', params: [] }], version: 2 }], [swap(10)]);
      expect(await rowsOf(e.rm)).toEqual([{ stream: 'new', n: 10, last_position: 10 }]);
      expect(await e.rm.getCheckpoint('shots')).toEqual({ position: 10, version: 2 });
      expect(await e.rm.getCheckpoint(shadow.name)).toEqual({ position: 0, version: 0 });
    });

    it('several instances: only the applier builds; when it stops mid-build the next applier resumes, and a follower notices the switch', async () => {
      await buildV1(e);
      const v2 = shotsV2(big(e.rm));
      let reads = 0;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const slowStore = new Proxy(e.store, {
        get(target, key) {
          if (key === 'readAll') return async (o: Parameters<EventStore['readAll']>[0]) => (++reads === 3 ? held.then(() => target.readAll(o)) : target.readAll(o));
          const v = (target as unknown as Record<PropertyKey, unknown>)[key];
          return typeof v === 'function' ? v.bind(target) : v;
        },
      }) as EventStore;
      const rmB = await e.second();
      const rmC = await e.second();
      const lease = async (rm: ReadModelStore, holder: string) => ({ leases: await Leases.open(rm, holder), ttlMs: 300 });
      const a = new ProjectionRunner(slowStore, e.rm, [v2], undefined, 1000, await lease(e.rm, 'a'), 1000);
      const b = new ProjectionRunner(e.store, rmB, [v2], undefined, 1000, await lease(rmB, 'b'), 1000);
      const c = new ProjectionRunner(e.store, rmC, [v2], undefined, 1000, await lease(rmC, 'c'), 1000);
      const resyncs = { b: 0, c: 0 };
      b.onResync(() => resyncs.b++);
      c.onResync(() => resyncs.c++);
      await a.start();
      await b.start();
      await c.start();
      try {
        await eventually(() => reads >= 3, 30_000, 'the applier to be building');
        expect((await e.rm.getCheckpoint('shots@v2')).position).toBe(2000);
        // Followers build nothing and skip the rebuilding projection in their read-your-writes waits.
        expect(b.rebuilding()).toEqual(['shots']);
        expect(c.rebuilding()).toEqual(['shots']);
        const pos = (await e.store.append('shots-x', [{ type: 'Shot', data: {} }])).position;
        await b.waitFor(pos, undefined, 10_000);
        expect(b.caughtUpWith(pos)).toBe(true);
        const stopping = a.stop();
        release();
        await stopping;
        expect((await e.rm.getCheckpoint('shots@v2')).position).toBe(2000); // a stopped mid-build
        await eventually(() => b.rebuilding().length === 0 && c.rebuilding().length === 0, 60_000, 'the switch, on both instances');
        expect(resyncs.b).toBeGreaterThan(0);
        expect(resyncs.c).toBeGreaterThan(0);
        const last = (await e.store.append('shots-x', [{ type: 'Shot', data: {} }])).position;
        // `applied` (consumers acting on rows) resolves for the switched projection on both.
        await b.applied(last, ['shots'], 10_000);
        await c.applied(last, ['shots'], 10_000);
      } finally {
        release();
        await a.stop();
        await b.stop();
        await c.stop();
      }
      const rows = await rowsOf(e.rm);
      expect(rows.reduce((s, r) => s + r.n, 0)).toBe(EVENTS + 2);
      expect(rows).toEqual(await fromScratch(e, v2));
      await rmB.close();
      await rmC.close();
    }, 120_000);
  });
}

versionContract('sqlite', sqliteProjectionEngines);

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'postgres projection versions', () => {
  versionContract('postgres', postgresProjectionEngines);
});
