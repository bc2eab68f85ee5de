import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LeaseKeeper, Leases } from '../../src/readmodel/leases';
import type { ReadModelStore } from '../../src/readmodel/port';
import { PostgresReadModelStore } from '../../src/readmodel/postgres';
import { SqliteReadModelStore } from '../../src/readmodel/sqlite';
import { AttemptClaims } from '../../src/webhooks/attempt-claims';
import { PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';

/** Two read-model stores on one database: two gateway instances. */
interface TwoStores {
  a: ReadModelStore;
  b: ReadModelStore;
  cleanup: () => Promise<void>;
}

/** The lease table: written once, run against every read-model store. */
function leaseContract(name: string, open: () => Promise<TwoStores>): void {
  describe(`leases: ${name}`, () => {
    let dbs: TwoStores;
    let l: { a: Leases; b: Leases };
    beforeEach(async () => {
      dbs = await open();
      l = { a: await Leases.open(dbs.a, 'instance-a'), b: await Leases.open(dbs.b, 'instance-b') };
    });
    afterEach(() => dbs.cleanup());

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

/** Webhook attempt claims (the same shared tables, the same two instances). */
function attemptClaimsContract(name: string, open: () => Promise<TwoStores>): void {
  describe(`webhook attempt claims: ${name}`, () => {
    let dbs: TwoStores;
    let a: AttemptClaims;
    let b: AttemptClaims;
    beforeEach(async () => {
      dbs = await open();
      a = await AttemptClaims.open(dbs.a, 30_000, 'instance-a');
      b = await AttemptClaims.open(dbs.b, 30_000, 'instance-b');
    });
    afterEach(() => dbs.cleanup());

    it('one instance per attempt; another only once the claim expired; a later attempt supersedes at once', async () => {
      const t = 1_000_000;
      expect(await a.claim('wh-1', 1, t)).toBe(true);
      expect(await b.claim('wh-1', 1, t + 1000)).toBe(false);
      expect(await a.claim('wh-1', 1, t + 1000)).toBe(true); // its own, again: until t + 31 s
      expect(await b.claim('wh-1', 1, t + 30_001)).toBe(false);
      expect(await b.claim('wh-1', 1, t + 31_001)).toBe(true); // a died mid-attempt
      expect(await a.claim('wh-1', 1, t + 31_002)).toBe(false);
      // The next attempt (after b recorded this one) is anyone's, whatever the clock says.
      expect(await a.claim('wh-1', 2, t + 31_003)).toBe(true);
      expect(await b.claim('wh-1', 1, t + 90_000)).toBe(false); // an attempt already superseded
    });

    it('of concurrent claims on one attempt from two instances, one instance wins; a finished delivery leaves nothing behind', async () => {
      const wins = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).claim('wh-race', 3).then((won) => (won ? i % 2 : -1))));
      expect(new Set(wins.filter((w) => w >= 0)).size).toBe(1);
      await a.finished('wh-race');
      expect(await dbs.a.query('SELECT * FROM webhook_attempt_claims WHERE stream_id = ?', ['wh-race'])).toEqual([]);
    });
  });
}

async function twoSqliteStores(): Promise<TwoStores> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-coordination-'));
  const file = path.join(dir, 'rm.sqlite');
  const [a, b] = [new SqliteReadModelStore(file), new SqliteReadModelStore(file)];
  return {
    a,
    b,
    cleanup: async () => {
      await a.close();
      await b.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function twoPostgresStores(): Promise<TwoStores> {
  const db = await createTestDatabase('adcp_coordination');
  const [a, b] = [await PostgresReadModelStore.connect(db.url), await PostgresReadModelStore.connect(db.url)];
  return {
    a,
    b,
    cleanup: async () => {
      await a.close();
      await b.close();
      await db.drop();
    },
  };
}

leaseContract('sqlite', twoSqliteStores);
attemptClaimsContract('sqlite', twoSqliteStores);

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'leases and webhook attempt claims in PostgreSQL', () => {
  leaseContract('postgres', twoPostgresStores);
  attemptClaimsContract('postgres', twoPostgresStores);
});
