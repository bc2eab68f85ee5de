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

/**
 * `event_type` matching any of the LIKE patterns, as one condition over one parameter (the
 * patterns as a JSON array): the statement is the same size however many patterns there are (an
 * OR per pattern made SQLite refuse a long list as "Expression tree is too large").
 */
function matchesAnyPattern(rm: ReadModelStore, patterns: readonly string[]): { sql: string; param: string } {
  const param = JSON.stringify(patterns);
  return rm.dialect === 'postgres'
    ? { sql: "EXISTS (SELECT 1 FROM json_array_elements_text(?::json) AS p(pattern) WHERE event_type LIKE p.pattern ESCAPE '\\')", param }
    : { sql: "EXISTS (SELECT 1 FROM json_each(?) AS p WHERE event_type LIKE p.value ESCAPE '\\')", param };
}

export const feedQueries = {
  /** The position of a cursor still inside retention; undefined when unknown or too old. */
  cursorPosition: async (rm: ReadModelStore, cursor: string, oldest: string) =>
    (await rm.query<{ position: number }>('SELECT position FROM feed_entries WHERE event_id = ? AND created_at >= ?', [cursor, oldest]))[0]?.position,
  page: async (rm: ReadModelStore, opts: { after: number; oldest: string; patterns: string[]; limit: number; newest?: boolean }) => {
    const where = ['position > ?', 'created_at >= ?'];
    const params: unknown[] = [opts.after, opts.oldest];
    if (opts.patterns.length > 0) {
      const match = matchesAnyPattern(rm, opts.patterns);
      where.push(match.sql);
      params.push(match.param);
    }
    params.push(opts.limit + 1);
    // Newest: the last entries (read backwards, answered oldest first), for a reader that starts at the end.
    const rows = await rm.query<Row>(`SELECT * FROM feed_entries WHERE ${where.join(' AND ')} ORDER BY position ${opts.newest ? 'DESC' : ''} LIMIT ?`, params);
    if (opts.newest) rows.reverse();
    return rows.map(({ payload, ...r }) => ({ ...r, position: Number(r.position), payload: JSON.parse(payload) as Record<string, unknown> }));
  },
  latest: async (rm: ReadModelStore, patterns: string[]) => {
    const match = patterns.length > 0 ? matchesAnyPattern(rm, patterns) : undefined;
    return (await rm.query<{ at: string | null }>(`SELECT MAX(created_at) AS at FROM feed_entries ${match ? `WHERE ${match.sql}` : ''}`, match ? [match.param] : []))[0]?.at ?? null;
  },
};
