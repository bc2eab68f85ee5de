import { impairments } from '../../projections/impairments';
import { mediaBuys } from '../../projections/media-buys';
import { CHANGES_CACHED_BUY } from '../../src/caches/media-buy-cache';

describe('MediaBuyCache invalidation', () => {
  const handled = (h: readonly string[] | '*') => (h === '*' ? [] : [...h]);
  it('hears every event that writes a media_buys or impairments row (task events write only tasks)', () => {
    const rowWriters = [...handled(mediaBuys.handles).filter((t) => !t.startsWith('Task')), ...handled(impairments.handles)].sort();
    expect([...CHANGES_CACHED_BUY].sort()).toEqual(rowWriters);
    // And the task events really do not touch media_buys: if one starts to, it belongs in the set.
    for (const type of handled(mediaBuys.handles).filter((t) => t.startsWith('Task'))) {
      const data = { task_id: 't', owner: 'o', task_type: 'create_media_buy', resource_id: 'mb', message: 'm', at: 'now', status: 'working', actor: 'system' };
      const sql = mediaBuys.evolve({ type, data, position: 1, streamId: 's', streamVersion: 1, eventId: 'e', metadata: {} } as never);
      expect(sql.map((s) => s.sql).join(' ')).not.toMatch(/media_buys/);
    }
  });
});

describe('live buys', () => {
  it('are read a page at a time, every live buy once, in id order, whatever the page size', async () => {
    const { SqliteReadModelStore } = await import('../../src/readmodel/sqlite');
    const { mediaBuyQueries } = await import('../../projections/media-buys');
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const rm = new SqliteReadModelStore(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'live-')), 'rm.sqlite'));
    await rm.migrate(mediaBuys.ddl.sqlite);
    const statuses = ['active', 'paused', 'pending', 'active', 'canceled', 'active', 'paused'];
    for (const [i, status] of statuses.entries()) {
      await rm.execute('INSERT INTO media_buys (media_buy_id, owner, buyer_ref, status, task_id, revision, terms, created_at, updated_at, position, last_position) VALUES (?, ?, ?, ?, NULL, 1, ?, ?, ?, ?, ?)', [`mb_${i}`, 'o', `r${i}`, status, '{}', 'now', 'now', i + 1, i + 1]);
    }
    const wanted = statuses.flatMap((s, i) => (s === 'active' || s === 'paused' ? [`mb_${i}`] : []));
    try {
      for (const pageSize of [1, 2, 3, 500]) {
        const seen: string[] = [];
        for await (const buy of mediaBuyQueries.live(rm, pageSize)) seen.push(buy.media_buy_id);
        expect({ pageSize, seen }).toEqual({ pageSize, seen: wanted });
      }
    } finally {
      await rm.close();
    }
  });
});
