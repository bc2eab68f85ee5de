import type { AudienceEvent, AudienceSummary, AudienceTerms } from '../../src/domain/audience/audience';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const ddl = (collate: string) => [
  `CREATE TABLE IF NOT EXISTS audiences (
  account_id TEXT NOT NULL, audience_id TEXT${collate} NOT NULL, owner TEXT NOT NULL, doc TEXT NOT NULL, synced_at TEXT NOT NULL,
  PRIMARY KEY (account_id, audience_id))`,
];

/** The audiences on each account, as sync_audiences' discovery and delete_missing read them. */
export const audiences: Projection = {
  name: 'audiences',
  version: 1,
  tables: ['audiences'],
  ddl: { sqlite: ddl(''), postgres: ddl(' COLLATE "C"') },
  handles: ['AudienceSynced', 'AudienceDeleted'],
  evolve(stored) {
    const e = stored as unknown as AudienceEvent;
    switch (e.type) {
      case 'AudienceSynced': {
        const d = e.data;
        const doc: AudienceRow = { audience_id: d.audience_id, seller_id: d.seller_id, terms: d.terms, summary: d.summary, synced_at: d.at };
        return [
          {
            sql: `INSERT INTO audiences (account_id, audience_id, owner, doc, synced_at) VALUES (?, ?, ?, ?, ?)
                  ON CONFLICT (account_id, audience_id) DO UPDATE SET doc = excluded.doc, synced_at = excluded.synced_at`,
            params: [d.account_id, d.audience_id, d.owner, JSON.stringify(doc), d.at],
          },
        ];
      }
      case 'AudienceDeleted':
        return [{ sql: 'DELETE FROM audiences WHERE account_id = ? AND audience_id = ?', params: [e.data.account_id, e.data.audience_id] }];
      default:
        return [];
    }
  },
};

export interface AudienceRow {
  audience_id: string;
  seller_id: string;
  terms: AudienceTerms;
  summary: AudienceSummary;
  synced_at: string;
}

export const audienceQueries = {
  /** The account's audiences, in audience_id order. */
  list: async (rm: ReadModelStore, owner: string, accountId: string) =>
    (await rm.query<{ doc: string }>('SELECT doc FROM audiences WHERE owner = ? AND account_id = ? ORDER BY audience_id', [owner, accountId])).map((r) => JSON.parse(r.doc) as AudienceRow),
};
