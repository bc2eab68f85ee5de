import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MemoryEventStore } from '../../src/eventstore/memory';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import { KURRENTDB_URL, PG_ADMIN_URL, createTestDatabase, describeWith } from '../support/infra';
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
