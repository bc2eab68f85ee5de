import type { Projection } from '../../src/projections/projection';

/** How many events of each type the log holds: the first read model, and a cheap health signal. */
export const eventStats: Projection = {
  name: 'event-stats',
  version: 1,
  tables: ['event_type_stats'],
  ddl: {
    sqlite: [
      `CREATE TABLE IF NOT EXISTS event_type_stats (
         type TEXT PRIMARY KEY, count INTEGER NOT NULL, last_position INTEGER NOT NULL, last_at TEXT NOT NULL)`,
    ],
    postgres: [
      `CREATE TABLE IF NOT EXISTS event_type_stats (
         type TEXT PRIMARY KEY, count BIGINT NOT NULL, last_position BIGINT NOT NULL, last_at TEXT NOT NULL)`,
    ],
  },
  handles: '*',
  // A count: no command waits for it (its reader, eventLogStatus, waits for its own instance's appends).
  consistency: 'eventual',
  evolve: (e) => eventStats.evolveBatch!([e]),
  // One upsert per event type per batch: the counts fold, so a batch of 1,000 writes a few rows.
  evolveBatch(events) {
    const byType = new Map<string, { n: number; position: number; at: string }>();
    for (const e of events) {
      const s = byType.get(e.type);
      if (s) {
        s.n++;
        s.position = e.position;
        s.at = e.metadata.time;
      } else byType.set(e.type, { n: 1, position: e.position, at: e.metadata.time });
    }
    return [...byType].map(([type, s]) => ({
      sql: `INSERT INTO event_type_stats (type, count, last_position, last_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (type) DO UPDATE SET count = event_type_stats.count + excluded.count,
              last_position = excluded.last_position, last_at = excluded.last_at`,
      params: [type, s.n, s.position, s.at],
    }));
  },
};

export interface EventTypeStat {
  type: string;
  count: number;
  lastPosition: number;
  lastAt: string;
}

export const eventStatsQueries = {
  sql: 'SELECT type, count, last_position AS "lastPosition", last_at AS "lastAt" FROM event_type_stats ORDER BY type',
};
