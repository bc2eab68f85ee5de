import type { Catalog, CatalogEvent, Format, Plan, Product } from '../../src/domain/catalog/catalog';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore, Sql } from '../../src/readmodel/port';

const ddl = (big: string) => [
  `CREATE TABLE IF NOT EXISTS catalog_products (product_id TEXT PRIMARY KEY, ord ${big} NOT NULL, doc TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS catalog_formats (format_key TEXT PRIMARY KEY, ord ${big} NOT NULL, type TEXT NOT NULL, doc TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS catalog_properties (publisher_domain TEXT PRIMARY KEY, ord ${big} NOT NULL, doc TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS catalog_plans (proposal_id TEXT PRIMARY KEY, ord ${big} NOT NULL, doc TEXT NOT NULL)`,
  'CREATE TABLE IF NOT EXISTS catalog_meta (id INTEGER PRIMARY KEY, hash TEXT NOT NULL, approval TEXT NOT NULL, published_at TEXT NOT NULL)',
];

export const formatKey = (f: { agent_url: string; id: string }) => `${f.agent_url}#${f.id}`;

/** The current catalog: each publish replaces the previous one wholesale. */
export const catalog: Projection = {
  name: 'catalog',
  version: 2,
  tables: ['catalog_products', 'catalog_formats', 'catalog_properties', 'catalog_plans', 'catalog_meta'],
  ddl: { sqlite: ddl('INTEGER'), postgres: ddl('BIGINT') },
  handles: ['CatalogPublished'],
  evolve(stored) {
    const e = stored as unknown as CatalogEvent;
    const c = e.data.catalog;
    const out: Sql[] = ['catalog_products', 'catalog_formats', 'catalog_properties', 'catalog_plans', 'catalog_meta'].map((t) => ({ sql: `DELETE FROM ${t}` }));
    c.products.forEach((p, i) => out.push({ sql: 'INSERT INTO catalog_products (product_id, ord, doc) VALUES (?, ?, ?)', params: [p.product_id, i, JSON.stringify(p)] }));
    c.formats.forEach((f, i) =>
      out.push({ sql: 'INSERT INTO catalog_formats (format_key, ord, type, doc) VALUES (?, ?, ?, ?)', params: [formatKey(f.format_id), i, f.type, JSON.stringify(f)] }),
    );
    c.publisher_properties.forEach((p, i) =>
      out.push({ sql: 'INSERT INTO catalog_properties (publisher_domain, ord, doc) VALUES (?, ?, ?)', params: [p.publisher_domain, i, JSON.stringify(p)] }),
    );
    // Catalogs published before plans existed have none.
    (c.proposals ?? []).forEach((p, i) => out.push({ sql: 'INSERT INTO catalog_plans (proposal_id, ord, doc) VALUES (?, ?, ?)', params: [p.proposal_id, i, JSON.stringify(p)] }));
    out.push({ sql: 'INSERT INTO catalog_meta (id, hash, approval, published_at) VALUES (1, ?, ?, ?)', params: [e.data.hash, JSON.stringify(c.approval), e.data.publishedAt] });
    return out;
  },
};

const docs = async <T>(rm: ReadModelStore, sql: string, params: unknown[] = []) =>
  (await rm.query<{ doc: string }>(sql, params)).map((r) => JSON.parse(r.doc) as T);

export const catalogQueries = {
  products: (rm: ReadModelStore) => docs<Product>(rm, 'SELECT doc FROM catalog_products ORDER BY ord'),
  product: async (rm: ReadModelStore, id: string) => (await docs<Product>(rm, 'SELECT doc FROM catalog_products WHERE product_id = ?', [id]))[0],
  formats: (rm: ReadModelStore) => docs<Format>(rm, 'SELECT doc FROM catalog_formats ORDER BY ord'),
  properties: (rm: ReadModelStore) => docs<Catalog['publisher_properties'][number]>(rm, 'SELECT doc FROM catalog_properties ORDER BY ord'),
  plans: (rm: ReadModelStore) => docs<Plan>(rm, 'SELECT doc FROM catalog_plans ORDER BY ord'),
  approval: async (rm: ReadModelStore) => {
    const row = (await rm.query<{ approval: string }>('SELECT approval FROM catalog_meta WHERE id = 1'))[0];
    return row ? (JSON.parse(row.approval) as Catalog['approval']) : {};
  },
};
