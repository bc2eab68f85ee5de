import { impairments } from '../../projections/impairments';
import { mediaBuys } from '../../projections/media-buys';
import { CHANGES_CACHED_BUY } from '../../src/readmodel/media-buy-cache';

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
