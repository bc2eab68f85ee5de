import type { Format, Product } from '../../src/domain/catalog/catalog';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';
import { formatKey } from '../catalog';

const ddl = (big: string) => [
  `CREATE TABLE IF NOT EXISTS sandbox_products (owner TEXT NOT NULL, product_id TEXT NOT NULL, ord ${big} NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (owner, product_id))`,
  `CREATE TABLE IF NOT EXISTS sandbox_formats (owner TEXT NOT NULL, format_key TEXT NOT NULL, ord ${big} NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (owner, format_key))`,
];

/**
 * Fixtures a buyer seeded through the compliance controller (from any of its sandbox accounts):
 * products (with their pricing options) and creative formats that its sandbox accounts see beside
 * the operator's catalog, and nobody else does. Each seed event carries the whole fixture as it
 * now stands.
 */
export const sandboxCatalog: Projection = {
  name: 'sandbox-catalog',
  version: 1,
  tables: ['sandbox_products', 'sandbox_formats'],
  ddl: { sqlite: ddl('INTEGER'), postgres: ddl('BIGINT') },
  handles: ['SandboxProductSeeded', 'SandboxFormatSeeded'],
  evolve(stored) {
    const d = stored.data as { owner: string; product?: Product; format?: Format };
    if (stored.type === 'SandboxProductSeeded' && d.product) {
      return [
        {
          sql: `INSERT INTO sandbox_products (owner, product_id, ord, doc) VALUES (?, ?, ?, ?)
                ON CONFLICT (owner, product_id) DO UPDATE SET doc = excluded.doc`,
          params: [d.owner, d.product.product_id, stored.position, JSON.stringify(d.product)],
        },
      ];
    }
    if (stored.type === 'SandboxFormatSeeded' && d.format) {
      return [
        {
          sql: `INSERT INTO sandbox_formats (owner, format_key, ord, doc) VALUES (?, ?, ?, ?)
                ON CONFLICT (owner, format_key) DO UPDATE SET doc = excluded.doc`,
          params: [d.owner, formatKey(d.format.format_id), stored.position, JSON.stringify(d.format)],
        },
      ];
    }
    return [];
  },
};

const docs = async <T>(rm: ReadModelStore, sql: string, params: unknown[]) => (await rm.query<{ doc: string }>(sql, params)).map((r) => JSON.parse(r.doc) as T);

export const sandboxCatalogQueries = {
  products: (rm: ReadModelStore, owner: string) => docs<Product>(rm, 'SELECT doc FROM sandbox_products WHERE owner = ? ORDER BY ord', [owner]),
  product: async (rm: ReadModelStore, owner: string, productId: string) =>
    (await docs<Product>(rm, 'SELECT doc FROM sandbox_products WHERE owner = ? AND product_id = ?', [owner, productId]))[0],
  formats: (rm: ReadModelStore, owner: string) => docs<Format>(rm, 'SELECT doc FROM sandbox_formats WHERE owner = ? ORDER BY ord', [owner]),
};
