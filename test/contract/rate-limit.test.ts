import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { RedisRateLimiter, SqlRateLimiter, type RateLimiter } from '../../src/limits/rate-limit';
import { PostgresReadModelStore } from '../../src/readmodel/postgres';
import { SqliteReadModelStore } from '../../src/readmodel/sqlite';
import { PG_ADMIN_URL, REDIS_URL, createTestDatabase, describeWith, eventually } from '../support/infra';

interface Limiters {
  /** Two limiters on one backend: two gateway instances. */
  a: RateLimiter;
  b: RateLimiter;
  cleanup: () => Promise<void>;
}

/** The rate-limit store port: written once, run against every adapter. */
function rateLimitContract(name: string, open: () => Promise<Limiters>): void {
  describe(`rate-limit contract: ${name}`, () => {
    let l: Limiters;
    const bucket = () => `contract-${randomBytes(6).toString('hex')}`;
    beforeEach(async () => {
      l = await open();
    });
    afterEach(() => l.cleanup());

    it('a cooldown admits one claim; the next waits the rest of it; release gives it back', async () => {
      const b = bucket();
      expect(await l.a.cooldown(b, 300)).toBeUndefined();
      const wait = await l.b.cooldown(b, 300);
      expect(wait).toBeGreaterThan(295);
      expect(wait).toBeLessThanOrEqual(300);
      await l.a.release(b);
      expect(await l.b.cooldown(b, 300)).toBeUndefined();
    });

    it('of many concurrent claims on two instances, exactly one passes', async () => {
      const b = bucket();
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? l.a : l.b).cooldown(b, 60)));
      expect(answers.filter((w) => w === undefined)).toHaveLength(1);
      expect(answers.filter((w) => typeof w === 'number' && w > 0)).toHaveLength(19);
    });

    it('a cooldown ends when its time is up', async () => {
      const b = bucket();
      expect(await l.a.cooldown(b, 1)).toBeUndefined();
      expect(await l.a.cooldown(b, 1)).toBe(1);
      await eventually(async () => (await l.b.cooldown(b, 1)) === undefined, 5000, 'the cooldown to pass');
    });

    it('a window counts hits from both instances; past the limit it answers the seconds left', async () => {
      const b = bucket();
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? l.a : l.b).hit(b, 20, 3600)));
      expect(answers.filter((w) => w === undefined)).toHaveLength(20);
      const waits = answers.filter((w): w is number => w !== undefined);
      expect(waits).toHaveLength(10);
      for (const w of waits) {
        expect(w).toBeGreaterThan(0);
        expect(w).toBeLessThanOrEqual(3600);
      }
      // Buckets are independent.
      expect(await l.a.hit(bucket(), 1, 3600)).toBeUndefined();
    });

    it('add: points from both instances sum atomically into one window; 0 reads the total', async () => {
      const b = bucket();
      const t = Date.UTC(2026, 10, 23, 10, 0, 30);
      const totals = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? l.a : l.b).add(b, 5, 60, t)));
      // Every add saw a distinct total: none was lost or applied twice.
      expect([...totals].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => 5 * (i + 1)));
      expect(await l.b.add(b, 0, 60, t + 10_000)).toBe(100);
      // The next window, and another bucket, start from zero.
      expect(await l.a.add(b, 0, 60, t + 60_000)).toBe(0);
      expect(await l.a.add(bucket(), 3, 60, t)).toBe(3);
    });

    it('a new window starts from zero', async () => {
      const b = bucket();
      const t = Date.UTC(2026, 10, 23, 10, 0, 30);
      expect(await l.a.hit(b, 1, 60, t)).toBeUndefined();
      expect(await l.a.hit(b, 1, 60, t + 1000)).toBe(29);
      expect(await l.b.hit(b, 1, 60, t + 30_000)).toBeUndefined();
    });
  });
}

rateLimitContract('sqlite', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-rl-'));
  const file = path.join(dir, 'db.sqlite');
  const [ra, rb] = [new SqliteReadModelStore(file), new SqliteReadModelStore(file)];
  return {
    a: await SqlRateLimiter.open(ra),
    b: await SqlRateLimiter.open(rb),
    cleanup: async () => {
      await ra.close();
      await rb.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'rate limits in PostgreSQL', () => {
  rateLimitContract('postgres', async () => {
    const db = await createTestDatabase('adcp_rlc');
    const [ra, rb] = [await PostgresReadModelStore.connect(db.url), await PostgresReadModelStore.connect(db.url)];
    return {
      a: await SqlRateLimiter.open(ra),
      b: await SqlRateLimiter.open(rb),
      cleanup: async () => {
        await ra.close();
        await rb.close();
        await db.drop();
      },
    };
  });
});

describeWith('Redis', Boolean(REDIS_URL), 'rate limits in Redis', () => {
  rateLimitContract('redis', async () => {
    const prefix = `adcp-contract-${randomBytes(4).toString('hex')}:`;
    const [a, b] = [await RedisRateLimiter.open(REDIS_URL!, prefix), await RedisRateLimiter.open(REDIS_URL!, prefix)];
    return {
      a,
      b,
      cleanup: async () => {
        await a.close();
        await b.close();
      },
    };
  });
});
