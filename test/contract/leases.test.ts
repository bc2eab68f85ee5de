import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LeaseKeeper, Leases } from '../../src/readmodel/leases';
import type { ReadModelStore } from '../../src/readmodel/port';
import { PostgresReadModelStore } from '../../src/readmodel/postgres';
import { SqliteReadModelStore } from '../../src/readmodel/sqlite';
import { PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';

interface Instances {
  /** Two lease tables' views on one database: two gateway instances. */
  a: Leases;
  b: Leases;
  cleanup: () => Promise<void>;
}

async function twoInstances(a: ReadModelStore, b: ReadModelStore, cleanup: () => Promise<void>): Promise<Instances> {
  return { a: await Leases.open(a), b: await Leases.open(b), cleanup };
}

/** The lease table: written once, run against every read-model store. */
function leaseContract(name: string, open: () => Promise<Instances>): void {
  describe(`leases: ${name}`, () => {
    let l: Instances;
    beforeEach(async () => {
      l = await open();
    });
    afterEach(() => l.cleanup());

    it('one holder at a time: renewals hold it, the other instance gets it only once it expires', async () => {
      const t = 1_000_000;
      expect(await l.a.claim('relay', 3000, t)).toBe(true);
      expect(await l.b.claim('relay', 3000, t + 1000)).toBe(false);
      expect(await l.a.claim('relay', 3000, t + 2000)).toBe(true); // renewed until t + 5000
      expect(await l.b.claim('relay', 3000, t + 4000)).toBe(false);
      expect(await l.b.claim('relay', 3000, t + 5001)).toBe(true);
      expect(await l.a.claim('relay', 3000, t + 5002)).toBe(false);
      expect((await l.a.holderOf('relay'))?.holder).toBe(l.b.holder);
    });

    it('of many concurrent claims from two instances on a free lease, one instance wins', async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? l.a : l.b).claim('race', 3000).then((won) => (won ? i % 2 : -1))));
      expect(new Set(answers.filter((w) => w >= 0)).size).toBe(1);
    });

    it('a released lease is free at once; a release by a non-holder changes nothing', async () => {
      expect(await l.a.claim('relay', 60_000)).toBe(true);
      await l.b.release('relay');
      expect(await l.b.claim('relay', 60_000)).toBe(false);
      await l.a.release('relay');
      expect(await l.b.claim('relay', 60_000)).toBe(true);
    });

    it('a keeper runs the work while it holds the lease; another takes over when the holder stops renewing', async () => {
      const running = { a: 0, b: 0 };
      const work = (who: 'a' | 'b') => ({ start: async () => void running[who]++, stop: async () => void running[who]-- });
      const errors: unknown[] = [];
      const ka = new LeaseKeeper(l.a, 'relay', work('a'), { ttlMs: 300, onError: (e) => errors.push(e) });
      const kb = new LeaseKeeper(l.b, 'relay', work('b'), { ttlMs: 300, onError: (e) => errors.push(e) });
      await ka.start();
      await kb.start();
      expect([ka.held, kb.held, running.a, running.b]).toEqual([true, false, 1, 0]);
      // The holder goes away (close releases; a crash would leave the lease to expire).
      await ka.close();
      await eventually(() => kb.held, 5000, 'the other keeper takes the lease over');
      expect([running.a, running.b]).toEqual([0, 1]);
      await kb.close();
      expect(running.b).toBe(0);
      expect(errors).toEqual([]);
    });
  });
}

leaseContract('sqlite', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-leases-'));
  const file = path.join(dir, 'rm.sqlite');
  const [a, b] = [new SqliteReadModelStore(file), new SqliteReadModelStore(file)];
  return twoInstances(a, b, async () => {
    await a.close();
    await b.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'leases in PostgreSQL', () => {
  leaseContract('postgres', async () => {
    const db = await createTestDatabase('adcp_lease');
    const [a, b] = [await PostgresReadModelStore.connect(db.url), await PostgresReadModelStore.connect(db.url)];
    return twoInstances(a, b, async () => {
      await a.close();
      await b.close();
      await db.drop();
    });
  });
});
