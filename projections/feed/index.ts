import type { FeedEvent, FeedEntry } from '../../src/domain/feed/events';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const ddl = (big: string) => [
  `CREATE TABLE IF NOT EXISTS feed_entries (
     position ${big} PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, event_type TEXT NOT NULL, entity_type TEXT NOT NULL, entity_id TEXT NOT NULL,
     payload TEXT NOT NULL, actor TEXT NOT NULL, created_at TEXT NOT NULL)`,
  'CREATE INDEX IF NOT EXISTS feed_entries_created ON feed_entries (created_at)',
];

/** The registry change feed, in log order (the order every reader sees). */
export const feed: Projection = {
  name: 'feed',
  version: 1,
  tables: ['feed_entries'],
  ddl: { sqlite: ddl('INTEGER'), postgres: ddl('BIGINT') },
  handles: ['FeedEntryRecorded'],
  evolve(stored) {
    const d = (stored as unknown as FeedEvent).data;
    return [
      {
        sql: 'INSERT INTO feed_entries (position, event_id, event_type, entity_type, entity_id, payload, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        params: [stored.position, d.event_id, d.event_type, d.entity_type, d.entity_id, JSON.stringify(d.payload), d.actor, d.created_at],
      },
    ];
  },
};

type Row = Omit<FeedEntry, 'payload'> & { payload: string; position: number };

export const feedQueries = {
  /** The position of a cursor still inside retention; undefined when unknown or too old. */
  cursorPosition: async (rm: ReadModelStore, cursor: string, oldest: string) =>
    (await rm.query<{ position: number }>('SELECT position FROM feed_entries WHERE event_id = ? AND created_at >= ?', [cursor, oldest]))[0]?.position,
  page: async (rm: ReadModelStore, opts: { after: number; oldest: string; patterns: string[]; limit: number; newest?: boolean }) => {
    const where = ['position > ?', 'created_at >= ?'];
    const params: unknown[] = [opts.after, opts.oldest];
    if (opts.patterns.length > 0) {
      where.push(`(${opts.patterns.map(() => "event_type LIKE ? ESCAPE '\\'").join(' OR ')})`);
      params.push(...opts.patterns);
    }
    params.push(opts.limit + 1);
    // Newest: the last entries (read backwards, answered oldest first), for a reader that starts at the end.
    const rows = await rm.query<Row>(`SELECT * FROM feed_entries WHERE ${where.join(' AND ')} ORDER BY position ${opts.newest ? 'DESC' : ''} LIMIT ?`, params);
    if (opts.newest) rows.reverse();
    return rows.map(({ payload, ...r }) => ({ ...r, position: Number(r.position), payload: JSON.parse(payload) as Record<string, unknown> }));
  },
  latest: async (rm: ReadModelStore, patterns: string[]) => {
    const where = patterns.length > 0 ? `WHERE ${patterns.map(() => "event_type LIKE ? ESCAPE '\\'").join(' OR ')}` : '';
    return (await rm.query<{ at: string | null }>(`SELECT MAX(created_at) AS at FROM feed_entries ${where}`, patterns))[0]?.at ?? null;
  },
};
