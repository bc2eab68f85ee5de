import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EventStore } from '../../src/eventstore/port';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import { handlesEvent, statementsFor, type Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';
import { PostgresReadModelStore } from '../../src/readmodel/postgres';
import { SqliteReadModelStore } from '../../src/readmodel/sqlite';
import { createTestDatabase } from './infra';

/** An event store and read models on one engine, as the projection suites use them. */
export interface ProjectionEngines {
  store: EventStore;
  rm: ReadModelStore;
  /** A second connection to the same read models (another instance). */
  second: () => Promise<ReadModelStore>;
  cleanup: () => Promise<void>;
}

/** Both in one SQLite file of a fresh temporary folder. */
export async function sqliteProjectionEngines(): Promise<ProjectionEngines> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-rm-'));
  const file = path.join(dir, 'db.sqlite');
  const store = new SqliteEventStore({ file, pollIntervalMs: 20 });
  const rm = new SqliteReadModelStore(file);
  return {
    store,
    rm,
    second: async () => new SqliteReadModelStore(file),
    cleanup: async () => {
      await rm.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Both in a scratch PostgreSQL database (dropped at cleanup). */
export async function postgresProjectionEngines(): Promise<ProjectionEngines> {
  const db = await createTestDatabase();
  const store = await PostgresEventStore.connect({ connectionString: db.url, pollIntervalMs: 20 });
  const rm = await PostgresReadModelStore.connect(db.url);
  return {
    store,
    rm,
    second: () => PostgresReadModelStore.connect(db.url),
    cleanup: async () => {
      await rm.close();
      await store.close();
      await db.drop();
    },
  };
}

/**
 * The tests' oracle of a from-scratch build: `p` replayed from position 0 into its own tables, in
 * place, the plainest way there is. The product rebuilds beside the live tables (rebuildBeside);
 * the suites compare what it and the runner build with this.
 */
export async function replayInPlace(store: EventStore, readModels: ReadModelStore, p: Projection, batchSize = 5000): Promise<void> {
  await readModels.reset(p.name, p.tables);
  await readModels.migrate(p.ddl[readModels.dialect]);
  for (let from = 0; ; ) {
    const events = await store.readAll({ fromPosition: from + 1, limit: batchSize });
    if (events.length === 0) return;
    const to = events[events.length - 1]!.position;
    await readModels.applyBatch(p.name, from, to, statementsFor(p, events.filter((e) => handlesEvent(p, e.type))), p.version);
    from = to;
  }
}
