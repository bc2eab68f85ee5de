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
  evolve: (e) => [
    {
      sql: `INSERT INTO event_type_stats (type, count, last_position, last_at) VALUES (?, 1, ?, ?)
            ON CONFLICT (type) DO UPDATE SET count = event_type_stats.count + 1,
              last_position = excluded.last_position, last_at = excluded.last_at`,
      params: [e.type, e.position, e.metadata.time],
    },
  ],
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
