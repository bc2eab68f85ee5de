import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MemoryEventStore } from '../../src/eventstore/memory';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import type { Subscription } from '../../src/eventstore/port';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import pg from 'pg';
import { KURRENTDB_URL, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { eventStoreContract } from './event-store.contract';

const run = promisify(execFile);

eventStoreContract('memory', { create: async () => new MemoryEventStore() });

let dir = '';
let file = '';
eventStoreContract('sqlite', {
  create: async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-es-'));
    file = path.join(dir, 'events.sqlite');
    return new SqliteEventStore({ file, pollIntervalMs: 20 });
  },
  second: async () => new SqliteEventStore({ file, pollIntervalMs: 20 }),
  cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
  concurrentProcesses: async (stream, perProcess) => {
    const child = path.join(__dirname, '..', 'support', 'sqlite-appender.js');
    const outs = await Promise.all(
      [0, 1].map(() => run(process.execPath, [child, file, stream, String(perProcess)], { timeout: 60_000 })),
    );
    return outs.map((o) => Number(o.stdout));
  },
});

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'postgres adapter', () => {
  let db: { url: string; drop: () => Promise<void> } | undefined;
  eventStoreContract('postgres', {
    create: async () => {
      db = await createTestDatabase();
      return PostgresEventStore.connect({ connectionString: db.url, pollIntervalMs: 20 });
    },
    second: async () => PostgresEventStore.connect({ connectionString: db!.url, pollIntervalMs: 20 }),
    cleanup: async () => {
      await db?.drop();
      db = undefined;
    },
  });

  it('shows no event past an older append still open, so a reader never skips it when it commits later', async () => {
    const pgdb = await createTestDatabase();
    const store = await PostgresEventStore.connect({ connectionString: pgdb.url, pollIntervalMs: 20 });
    const slow = new pg.Client({ connectionString: pgdb.url });
    await slow.connect();
    let sub: Subscription | undefined;
    try {
      await store.append('before', [{ type: 'Before', data: {} }]);
      // An append that takes its position first and commits last.
      await slow.query('BEGIN');
      const held = await slow.query<{ last_position: string }>(
        `SELECT last_position FROM adcp_append('slow', -1, ARRAY[gen_random_uuid()], ARRAY['Slow'], ARRAY['{}'::jsonb], ARRAY['{}'::jsonb])`,
      );
      const fast = await store.append('fast', [{ type: 'Fast', data: {} }]);
      expect(fast.position).toBeGreaterThan(Number(held.rows[0]!.last_position));
      const seen: string[] = [];
      sub = store.subscribe(async (batch) => void seen.push(...batch.map((e) => e.type)));
      await sub.caughtUp;
      // Committed, but behind an open transaction with a lower position: not shown yet, to anyone.
      expect((await store.readAll()).map((e) => e.type)).toEqual(['Before']);
      expect(seen).toEqual(['Before']);
      await slow.query('COMMIT');
      await eventually(() => seen.length === 3, 10_000, 'both appends delivered');
      expect(seen).toEqual(['Before', 'Slow', 'Fast']);
    } finally {
      await sub?.stop();
      await slow.end();
      await store.close();
      await pgdb.drop();
    }
  }, 60_000);
});

// KurrentDB has no package on this machine: the suite runs only where KURRENTDB_URL points at one.
if (KURRENTDB_URL) {
  eventStoreContract('kurrentdb', {
    create: async () => {
      const { KurrentEventStore } = await import('../../src/eventstore/kurrentdb');
      return KurrentEventStore.connect(KURRENTDB_URL!);
    },
  });
}

describe('sqlite background checkpoints', () => {
  let tmp = '';
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-ckpt-'));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('folds committed pages into the database file off the event loop, well before the writer would', async () => {
    const db = path.join(tmp, 'events.sqlite');
    const store = new SqliteEventStore({ file: db });
    try {
      const before = fs.statSync(db).size;
      // ~2 MB of events: far below the writer's own checkpoint threshold (~40 MB of WAL), so
      // without the background checkpointer every page stays in the WAL and the file keeps its size.
      const data = { note: 'x'.repeat(1000) };
      for (let i = 0; i < 50; i++) await Promise.all(Array.from({ length: 40 }, (_, j) => store.append(`ckpt-${i}-${j}`, [{ type: 'Noted', data }], { expectedVersion: 'no_stream' })));
      expect(fs.statSync(`${db}-wal`).size).toBeGreaterThan(2_000_000);
      await eventually(() => fs.statSync(db).size > before + 2_000_000, 10_000, 'the database file to receive the WAL pages');
      expect(await store.readStream('ckpt-49-39')).toHaveLength(1);
    } finally {
      await store.close();
    }
    // The checkpointer closed its connection first: the store's, the last, folded the WAL in and removed it.
    expect(fs.existsSync(`${db}-wal`)).toBe(false);
  });
});
