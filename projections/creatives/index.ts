import type { CreativeEvent } from '../../src/domain/creative/creative';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const DDL = `CREATE TABLE IF NOT EXISTS creatives (
  owner TEXT NOT NULL, creative_id TEXT NOT NULL, name TEXT NOT NULL, format_type TEXT NOT NULL, status TEXT NOT NULL,
  doc TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (owner, creative_id))`;

/** The buyer's creative library, as list_creatives reads it. */
export const creatives: Projection = {
  name: 'creatives',
  version: 1,
  tables: ['creatives'],
  ddl: { sqlite: [DDL], postgres: [DDL] },
  handles: ['CreativeSynced', 'CreativeArchived', 'CreativeStatusChanged'],
  evolve(stored) {
    const e = stored as unknown as CreativeEvent;
    switch (e.type) {
      case 'CreativeSynced': {
        const { hash: _h, created: _c, at, status, ...content } = e.data;
        return [
          {
            sql: `INSERT INTO creatives (owner, creative_id, name, format_type, status, doc, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                  ON CONFLICT (owner, creative_id) DO UPDATE SET name = excluded.name, format_type = excluded.format_type,
                  status = excluded.status, doc = excluded.doc, updated_at = excluded.updated_at`,
            params: [content.owner, content.creative_id, content.name, content.format_type, status, JSON.stringify(content), at, at],
          },
        ];
      }
      case 'CreativeArchived':
        return [{ sql: "UPDATE creatives SET status = 'archived', updated_at = ? WHERE owner = ? AND creative_id = ?", params: [e.data.at, e.data.owner, e.data.creative_id] }];
      case 'CreativeStatusChanged':
        return [{ sql: 'UPDATE creatives SET status = ?, updated_at = ? WHERE owner = ? AND creative_id = ?', params: [e.data.status, e.data.at, e.data.owner, e.data.creative_id] }];
      default:
        return [];
    }
  },
};

export interface CreativeRow {
  creative_id: string;
  name: string;
  format_type: string;
  status: string;
  doc: string;
  created_at: string;
  updated_at: string;
}

export const creativeQueries = {
  list: (rm: ReadModelStore, owner: string, f: { statuses?: string[]; formatTypes?: string[]; creativeIds?: string[]; after?: string; limit?: number }) => {
    const where = ['owner = ?'];
    const params: unknown[] = [owner];
    if (f.statuses?.length) {
      where.push(`status IN (${f.statuses.map(() => '?').join(', ')})`);
      params.push(...f.statuses);
    } else {
      where.push("status <> 'archived'");
    }
    if (f.formatTypes?.length) {
      where.push(`format_type IN (${f.formatTypes.map(() => '?').join(', ')})`);
      params.push(...f.formatTypes);
    }
    if (f.creativeIds?.length) {
      where.push(`creative_id IN (${f.creativeIds.map(() => '?').join(', ')})`);
      params.push(...f.creativeIds);
    }
    if (f.after) {
      where.push('creative_id > ?');
      params.push(f.after);
    }
    const limit = f.limit !== undefined ? ` LIMIT ${Math.floor(f.limit)}` : '';
    return rm.query<CreativeRow>(`SELECT * FROM creatives WHERE ${where.join(' AND ')} ORDER BY creative_id${limit}`, params);
  },
  activeIds: async (rm: ReadModelStore, owner: string) =>
    (await rm.query<{ creative_id: string }>("SELECT creative_id FROM creatives WHERE owner = ? AND status <> 'archived'", [owner])).map((r) => r.creative_id),
};
