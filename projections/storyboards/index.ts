import type { StoryboardEvent } from '../../src/domain/storyboards/events';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore, Sql } from '../../src/readmodel/port';

const ddl = (big: string) => [
  `CREATE TABLE IF NOT EXISTS storyboard_bundles (adcp_version TEXT PRIMARY KEY, source TEXT NOT NULL, state TEXT NOT NULL, error TEXT, imported_at TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS storyboards (adcp_version TEXT NOT NULL, id TEXT NOT NULL, ord ${big} NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (adcp_version, id))`,
  'CREATE TABLE IF NOT EXISTS test_kits (adcp_version TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (adcp_version, id))',
];

/** Storyboards and test kits per compliance version; a re-import replaces that version's rows. */
export const storyboards: Projection = {
  name: 'storyboards',
  version: 1,
  tables: ['storyboard_bundles', 'storyboards', 'test_kits'],
  ddl: { sqlite: ddl('INTEGER'), postgres: ddl('BIGINT') },
  handles: ['StoryboardImported', 'TestKitImported', 'StoryboardBundleImported', 'StoryboardBundleFailed'],
  evolve(stored): Sql[] {
    const e = stored as unknown as StoryboardEvent;
    switch (e.type) {
      case 'StoryboardImported': {
        const d = e.data;
        const out: Sql[] = [];
        // The first storyboard of a (re-)import clears what an earlier import of the version left.
        if (d.ord === 0) out.push({ sql: 'DELETE FROM storyboards WHERE adcp_version = ?', params: [d.adcp_version] }, { sql: 'DELETE FROM test_kits WHERE adcp_version = ?', params: [d.adcp_version] });
        out.push({ sql: 'INSERT INTO storyboards (adcp_version, id, ord, doc) VALUES (?, ?, ?, ?) ON CONFLICT (adcp_version, id) DO NOTHING', params: [d.adcp_version, d.storyboard.id, d.ord, JSON.stringify(d.storyboard)] });
        return out;
      }
      case 'TestKitImported':
        return [{ sql: 'INSERT INTO test_kits (adcp_version, id, doc) VALUES (?, ?, ?) ON CONFLICT (adcp_version, id) DO NOTHING', params: [e.data.adcp_version, e.data.kit.id, JSON.stringify(e.data.kit)] }];
      case 'StoryboardBundleImported':
      case 'StoryboardBundleFailed': {
        const d = e.data;
        const failed = e.type === 'StoryboardBundleFailed';
        return [
          {
            sql: `INSERT INTO storyboard_bundles (adcp_version, source, state, error, imported_at) VALUES (?, ?, ?, ?, ?)
                  ON CONFLICT (adcp_version) DO UPDATE SET source = excluded.source, state = excluded.state, error = excluded.error, imported_at = excluded.imported_at`,
            params: [d.adcp_version, d.source, failed ? 'failed' : 'ready', failed ? (d as { error: string }).error : null, d.at],
          },
        ];
      }
      default:
        return [];
    }
  },
};

export const storyboardQueries = {
  bundles: (rm: ReadModelStore) => rm.query<{ adcp_version: string; state: string }>('SELECT adcp_version, state FROM storyboard_bundles'),
  storyboard: async (rm: ReadModelStore, version: string, id: string) => {
    const row = (await rm.query<{ doc: string }>('SELECT doc FROM storyboards WHERE adcp_version = ? AND id = ?', [version, id]))[0];
    return row ? (JSON.parse(row.doc) as Record<string, unknown>) : undefined;
  },
  /** A version's storyboards in bundle order, as a list names them. */
  list: async (rm: ReadModelStore, version: string) =>
    (await rm.query<{ id: string; doc: string }>('SELECT id, doc FROM storyboards WHERE adcp_version = ? ORDER BY ord', [version])).map((r) => {
      const doc = JSON.parse(r.doc) as Record<string, unknown>;
      const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
      return { id: r.id, title: text(doc.title), category: text(doc.category) };
    }),
  testKit: async (rm: ReadModelStore, version: string, id: string) => {
    const row = (await rm.query<{ doc: string }>('SELECT doc FROM test_kits WHERE adcp_version = ? AND id = ?', [version, id]))[0];
    return row ? (JSON.parse(row.doc) as Record<string, unknown>) : undefined;
  },
};
