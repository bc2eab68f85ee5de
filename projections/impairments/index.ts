import type { Impairment, ImpairmentEvent } from '../../src/domain/impairment/impairment';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const DDL = [
  `CREATE TABLE IF NOT EXISTS impairments (
     impairment_id TEXT PRIMARY KEY, media_buy_id TEXT NOT NULL, owner TEXT NOT NULL, doc TEXT NOT NULL,
     opened_at TEXT NOT NULL, resolved_at TEXT)`,
  'CREATE INDEX IF NOT EXISTS impairments_buy ON impairments (media_buy_id, resolved_at)',
];

/** Impairments per buy: the open ones are `impairments[]` on get_media_buys (health `impaired`). */
export const impairments: Projection = {
  name: 'impairments',
  version: 1,
  tables: ['impairments'],
  ddl: { sqlite: DDL, postgres: DDL },
  handles: ['ImpairmentOpened', 'ImpairmentResolved'],
  evolve(stored) {
    const e = stored as unknown as ImpairmentEvent;
    switch (e.type) {
      case 'ImpairmentOpened':
        return [
          {
            sql: 'INSERT INTO impairments (impairment_id, media_buy_id, owner, doc, opened_at) VALUES (?, ?, ?, ?, ?)',
            params: [e.data.impairment_id, e.data.media_buy_id, e.data.owner, JSON.stringify(e.data), e.data.observed_at],
          },
        ];
      case 'ImpairmentResolved':
        return [{ sql: 'UPDATE impairments SET resolved_at = ? WHERE impairment_id = ?', params: [e.data.resolved_at, e.data.impairment_id] }];
      default:
        return [];
    }
  },
};

export const impairmentQueries = {
  /** Open impairments of these buys, in the AdCP shape (owner and buy id are implied). */
  openFor: async (rm: ReadModelStore, owner: string, mediaBuyIds: string[]) => {
    if (mediaBuyIds.length === 0) return [];
    const rows = await rm.query<{ doc: string }>(
      `SELECT doc FROM impairments WHERE owner = ? AND resolved_at IS NULL AND media_buy_id IN (${mediaBuyIds.map(() => '?').join(', ')}) ORDER BY opened_at`,
      [owner, ...mediaBuyIds],
    );
    return rows.map((r) => JSON.parse(r.doc) as Impairment);
  },
  /** Every impairment of these buys, open or resolved, oldest first (callers checked the buys are readable). */
  ofBuys: async (rm: ReadModelStore, mediaBuyIds: readonly string[]) => {
    if (mediaBuyIds.length === 0) return [];
    return rm.query<{ media_buy_id: string; doc: string; resolved_at: string | null }>(
      `SELECT media_buy_id, doc, resolved_at FROM impairments WHERE media_buy_id IN (${mediaBuyIds.map(() => '?').join(', ')}) ORDER BY opened_at, impairment_id`,
      [...mediaBuyIds],
    );
  },
};
