import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqlRateLimiter } from '../../../src/limits/rate-limit';
import { SharedBudgets, type BudgetVerdict } from '../../../src/limits/shared-budgets';
import { SqliteReadModelStore } from '../../../src/readmodel/sqlite';

/** Two instances' budgets over one SQLite store, on a clock the test moves. */
async function twoInstances() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-budgets-'));
  const file = path.join(dir, 'db.sqlite');
  const stores = [new SqliteReadModelStore(file), new SqliteReadModelStore(file)];
  const clock = { now: Date.UTC(2026, 10, 25, 12, 0, 5) };
  const errors: unknown[] = [];
  const options = { syncMs: 100, onError: (err: unknown) => errors.push(err), now: () => clock.now };
  const [a, b] = [new SharedBudgets(await SqlRateLimiter.open(stores[0]!), options), new SharedBudgets(await SqlRateLimiter.open(stores[1]!), options)];
  return {
    a,
    b,
    clock,
    errors,
    stores,
    close: async () => {
      await a.close().catch(() => {});
      await b.close().catch(() => {});
      for (const s of stores) await s.close().catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const settle = async (v: BudgetVerdict | Promise<BudgetVerdict>) => v;

describe('SharedBudgets: per-client budgets shared by instances through the rate-limit store', () => {
  it('the first take of a window waits for the store; later ones answer at once', async () => {
    const t = await twoInstances();
    try {
      const first = t.a.take('k', 1, 10, 60);
      expect(first).toBeInstanceOf(Promise);
      expect(await first).toMatchObject({ allowed: true, limit: 10, remaining: 9, windowSeconds: 60, resetSeconds: 55 });
      const second = t.a.take('k', 3, 10, 60);
      expect(second).not.toBeInstanceOf(Promise);
      expect(second).toMatchObject({ allowed: true, remaining: 6 });
      // More than is left: refused, nothing spent.
      expect(t.a.take('k', 7, 10, 60)).toMatchObject({ allowed: false, remaining: 6 });
      expect(t.a.peek('k', 10, 60)).toMatchObject({ allowed: true, remaining: 6 });
    } finally {
      await t.close();
    }
  });

  it('an instance knows what another spent: at its first take, and again once its view is two intervals old', async () => {
    const t = await twoInstances();
    try {
      for (let i = 0; i < 4; i++) await settle(t.a.take('k', 5, 100, 60)); // each 5 ≥ 100/20: handed to the store at once
      await t.a.flush();
      expect(await settle(t.b.take('k', 1, 100, 60))).toMatchObject({ allowed: true, remaining: 79 });
      await settle(t.a.take('k', 30, 100, 60));
      await t.a.flush();
      // B decided from a view 0 ms old: it does not see A's 30 yet...
      expect(t.b.peek('k', 100, 60)).toMatchObject({ remaining: 79 });
      // ...and once its view is older than two sync intervals, it looks again before deciding.
      t.clock.now += 250;
      const refreshed = t.b.take('k', 1, 100, 60);
      expect(refreshed).toBeInstanceOf(Promise);
      expect(await refreshed).toMatchObject({ allowed: true, remaining: 48 });
    } finally {
      await t.close();
    }
  });

  it('a new window starts whole', async () => {
    const t = await twoInstances();
    try {
      await settle(t.a.take('k', 10, 10, 60));
      expect(await settle(t.a.take('k', 1, 10, 60))).toMatchObject({ allowed: false, remaining: 0 });
      t.clock.now += 60_000;
      expect(await settle(t.a.take('k', 1, 10, 60))).toMatchObject({ allowed: true, remaining: 9 });
    } finally {
      await t.close();
    }
  });

  it('fails open when the store is down: counted on this instance, and the error reported', async () => {
    const t = await twoInstances();
    try {
      for (const s of t.stores) await s.close(); // both: they share one connection
      expect(await settle(t.a.take('k', 4, 10, 60))).toMatchObject({ allowed: true, remaining: 6 });
      expect(await settle(t.a.take('k', 7, 10, 60))).toMatchObject({ allowed: false, remaining: 6 });
      expect(t.errors.length).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });
});
