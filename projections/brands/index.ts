import type { BrandEvent } from '../../src/domain/brands/events';
import type { ResolvedBrand } from '../../src/domain/brands/resolve';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const DDL = [
  `CREATE TABLE IF NOT EXISTS brands (
     domain TEXT PRIMARY KEY, registered TEXT, crawled TEXT, crawl_error TEXT, crawled_at TEXT, updated_at TEXT NOT NULL)`,
];

/**
 * Brand identities by domain: an operator's registration (source `hosted`) outranks what the
 * last brand.json crawl found (`brand_json`), which a later crawl replaces, null included.
 */
export const brands: Projection = {
  name: 'brands',
  version: 1,
  tables: ['brands'],
  ddl: { sqlite: DDL, postgres: DDL },
  handles: ['BrandCrawled', 'BrandRegistered'],
  evolve(stored) {
    const e = stored as unknown as BrandEvent;
    switch (e.type) {
      case 'BrandCrawled':
        return [
          {
            sql: `INSERT INTO brands (domain, crawled, crawl_error, crawled_at, updated_at) VALUES (?, ?, ?, ?, ?)
                  ON CONFLICT (domain) DO UPDATE SET crawled = excluded.crawled, crawl_error = excluded.crawl_error, crawled_at = excluded.crawled_at, updated_at = excluded.updated_at`,
            params: [e.data.domain, e.data.identity ? JSON.stringify(e.data.identity) : null, e.data.error ?? null, e.data.at, e.data.at],
          },
        ];
      case 'BrandRegistered':
        return [
          {
            sql: `INSERT INTO brands (domain, registered, updated_at) VALUES (?, ?, ?)
                  ON CONFLICT (domain) DO UPDATE SET registered = excluded.registered, updated_at = excluded.updated_at`,
            params: [e.data.domain, JSON.stringify(e.data.identity), e.data.at],
          },
        ];
      default:
        return [];
    }
  },
};

export const brandQueries = {
  /** Identities for these domains; a domain never crawled nor registered is absent from the map. */
  resolve: async (rm: ReadModelStore, domains: readonly string[]) => {
    const out = new Map<string, { identity: ResolvedBrand | null; crawled_at: string | null }>();
    if (domains.length === 0) return out;
    const rows = await rm.query<{ domain: string; registered: string | null; crawled: string | null; crawled_at: string | null }>(
      `SELECT domain, registered, crawled, crawled_at FROM brands WHERE domain IN (${domains.map(() => '?').join(', ')})`,
      domains,
    );
    for (const r of rows) out.set(r.domain, { identity: JSON.parse(r.registered ?? r.crawled ?? 'null') as ResolvedBrand | null, crawled_at: r.crawled_at });
    return out;
  },
};
