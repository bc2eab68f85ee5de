import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { impairments } from '../../projections/impairments';
import { mediaBuyQueries, mediaBuys } from '../../projections/media-buys';
import type { EventStore } from '../../src/eventstore/port';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import { ProjectionRunner } from '../../src/projections/runner';
import { MediaBuyCache } from '../../src/caches/media-buy-cache';
import type { ReadModelStore } from '../../src/readmodel/port';
import { SqliteReadModelStore } from '../../src/readmodel/sqlite';
import { eventually } from '../support/infra';

/** A deliberate delay injected into runner A's batches (fault injection, not a wait for async work). */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Two runners sharing read models (two instances on one database). B applies first, so A's batch
 * fails its checkpoint check and A restarts from what is stored. A poll that caches a buy inside
 * that restart, while B applies a change to the buy, must not leave A serving the old row.
 */
describe('a projection runner that resyncs under a cache', () => {
  it('drops what was cached while it restarted, so events it jumped past are never hidden behind a cached row', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'resync-')), 'db.sqlite');
    const store = new SqliteEventStore({ file, pollIntervalMs: 20 });
    const rm = new SqliteReadModelStore(file);
    const projections = [mediaBuys, impairments];
    const b = new ProjectionRunner(store, rm, projections);
    await b.start();
    const terms = { media_buy_id: 'mb_X', owner: 'acme', buyer_ref: 'x', brand_manifest: {}, packages: [], start_time: 'asap', end_time: '2099-01-01T00:00:00Z', currency: 'USD', total_budget: 1 };
    await b.waitFor((await store.append('mb-mb_X', [{ type: 'MediaBuyCreated', data: { ...terms, status: 'active', at: 't0' } }])).position);

    // A: its batches arrive late (so B applies first), and its restart can be entered mid-way.
    let inRestart: (() => Promise<void>) | undefined;
    const rmA = new Proxy(rm, {
      get(target, key) {
        if (key === 'migrate')
          return async (ddl: string[]) => {
            const act = inRestart;
            inRestart = undefined;
            if (act) await act();
            return target.migrate(ddl);
          };
        const v = (target as unknown as Record<PropertyKey, unknown>)[key];
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as ReadModelStore;
    const storeA = new Proxy(store, {
      get(target, key) {
        if (key === 'subscribe') return (h: Parameters<EventStore['subscribe']>[0], o: Parameters<EventStore['subscribe']>[1]) => target.subscribe(async (ev) => { await sleep(100); return h(ev); }, o);
        const v = (target as unknown as Record<PropertyKey, unknown>)[key];
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as EventStore;
    const a = new ProjectionRunner(storeA, rmA, projections);
    const cache = new MediaBuyCache();
    let resyncs = 0;
    a.onWritten((events) => cache.written(events));
    a.onResync(() => {
      resyncs++;
      cache.clear();
    });
    await a.start();
    try {
      await a.waitFor(await store.headPosition(), undefined, 10_000);
      expect((await cache.get(rmA, 'acme', ['mb_X'])).get('mb_X')!.row.status).toBe('active');

      let polledInRestart: string | undefined;
      let pausedAt = Number.MAX_SAFE_INTEGER;
      inRestart = async () => {
        polledInRestart = (await cache.get(rmA, 'acme', ['mb_X'])).get('mb_X')!.row.status;
        pausedAt = (await store.append('mb-mb_X', [{ type: 'MediaBuyStatusChanged', data: { media_buy_id: 'mb_X', from: 'active', status: 'paused', at: 't2' } }])).position;
        await b.waitFor(pausedAt);
      };
      // Something for B to apply first, so A's checkpoint check fails and A restarts.
      await b.waitFor((await store.append('mb-mb_Y', [{ type: 'MediaBuyCreated', data: { ...terms, media_buy_id: 'mb_Y', buyer_ref: 'y', status: 'active', at: 't1' } }])).position);
      // A notices (its delayed batch fails the checkpoint check), restarts, and is past the pause it
      // never applied itself.
      await eventually(() => polledInRestart !== undefined && a.caughtUpWith(pausedAt), 10_000, 'runner A to restart past the pause');
      expect(resyncs).toBeGreaterThan(0);
      expect(polledInRestart).toBe('active'); // the window really was entered, with the old row
      expect((await mediaBuyQueries.list(rm, 'acme', { ids: ['mb_X'], limit: 1 }))[0]!.status).toBe('paused');
      expect((await cache.get(rmA, 'acme', ['mb_X'])).get('mb_X')!.row.status).toBe('paused');
    } finally {
      await a.stop();
      await b.stop();
      await store.close();
      await rm.close();
    }
  }, 30_000);
});
