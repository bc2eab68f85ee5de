import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const DDL = 'CREATE TABLE IF NOT EXISTS creative_previews (preview_id TEXT PRIMARY KEY, owner TEXT NOT NULL, doc TEXT NOT NULL, expires_at TEXT NOT NULL)';

/** What preview_creative rendered, served at its preview URL until it expires. */
export interface CreativePreview {
  preview_id: string;
  owner: string;
  creative_id?: string;
  name: string;
  format_id: { agent_url: string; id: string };
  format_name?: string;
  dimensions?: { width: number; height: number };
  assets: Record<string, unknown>;
  expires_at: string;
}

export const previews: Projection = {
  name: 'creative-previews',
  version: 1,
  tables: ['creative_previews'],
  ddl: { sqlite: [DDL], postgres: [DDL] },
  handles: ['CreativePreviewRendered'],
  evolve(stored) {
    const p = (stored.data as { preview: CreativePreview }).preview;
    return [{ sql: 'INSERT INTO creative_previews (preview_id, owner, doc, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (preview_id) DO NOTHING', params: [p.preview_id, p.owner, JSON.stringify(p), p.expires_at] }];
  },
};

export const previewQueries = {
  byId: async (rm: ReadModelStore, id: string): Promise<CreativePreview | undefined> => {
    const [row] = await rm.query<{ doc: string }>('SELECT doc FROM creative_previews WHERE preview_id = ?', [id]);
    return row ? (JSON.parse(row.doc) as CreativePreview) : undefined;
  },
};
