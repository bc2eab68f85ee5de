import type { BuyerCatalogEvent, BuyerCatalogTerms, ItemIssue } from '../../src/domain/buyer-catalog/buyer-catalog';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const ddl = (collate: string) => [
  `CREATE TABLE IF NOT EXISTS buyer_catalogs (
  account_id TEXT NOT NULL, catalog_id TEXT${collate} NOT NULL, owner TEXT NOT NULL, doc TEXT NOT NULL, synced_at TEXT NOT NULL,
  PRIMARY KEY (account_id, catalog_id))`,
];

export interface BuyerCatalogRow {
  catalog_id: string;
  platform_id: string;
  terms: BuyerCatalogTerms;
  item_count: number;
  items_rejected: number;
  issues: readonly ItemIssue[];
  synced_at: string;
}

/** The catalogs on each account (sync_catalogs' discovery and delete_missing read them). */
export const buyerCatalogs: Projection = {
  name: 'buyer-catalogs',
  version: 1,
  tables: ['buyer_catalogs'],
  ddl: { sqlite: ddl(''), postgres: ddl(' COLLATE "C"') },
  handles: ['BuyerCatalogSynced', 'BuyerCatalogDeleted'],
  evolve(stored) {
    const e = stored as unknown as BuyerCatalogEvent;
    switch (e.type) {
      case 'BuyerCatalogSynced': {
        const d = e.data;
        const doc: BuyerCatalogRow = { catalog_id: d.catalog_id, platform_id: d.platform_id, terms: d.terms, item_count: d.items.length + d.issues.length, items_rejected: d.issues.length, issues: d.issues, synced_at: d.at };
        return [
          {
            sql: `INSERT INTO buyer_catalogs (account_id, catalog_id, owner, doc, synced_at) VALUES (?, ?, ?, ?, ?)
                  ON CONFLICT (account_id, catalog_id) DO UPDATE SET doc = excluded.doc, synced_at = excluded.synced_at`,
            params: [d.account_id, d.catalog_id, d.owner, JSON.stringify(doc), d.at],
          },
        ];
      }
      case 'BuyerCatalogDeleted':
        return [{ sql: 'DELETE FROM buyer_catalogs WHERE account_id = ? AND catalog_id = ?', params: [e.data.account_id, e.data.catalog_id] }];
      default:
        return [];
    }
  },
};

export const buyerCatalogQueries = {
  list: async (rm: ReadModelStore, owner: string, accountId: string) =>
    (await rm.query<{ doc: string }>('SELECT doc FROM buyer_catalogs WHERE owner = ? AND account_id = ? ORDER BY catalog_id', [owner, accountId])).map((r) => JSON.parse(r.doc) as BuyerCatalogRow),
};
