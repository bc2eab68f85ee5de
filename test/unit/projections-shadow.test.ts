import Database from 'better-sqlite3';
import { allProjections } from '../../projections';
import { indexNames, planShadow, renameIdentifiers } from '../../src/projections/shadow';
import type { Projection } from '../../src/projections/projection';
import type { StoredEvent } from '../../src/eventstore/port';

const renames = new Map([
  ['media_buys', 'media_buys__v9'],
  ['tasks', 'tasks__v9'],
  ['media_buys_owner', 'media_buys_owner__v9'],
]);

describe('renameIdentifiers (shadow builds of a changed projection)', () => {
  it('renames whole identifiers, qualified column references included', () => {
    expect(renameIdentifiers('UPDATE media_buys SET n = media_buys.n + 1 WHERE id = ?', renames)).toBe('UPDATE media_buys__v9 SET n = media_buys__v9.n + 1 WHERE id = ?');
    expect(renameIdentifiers('INSERT INTO tasks(a) SELECT a FROM media_buys JOIN tasks ON 1=1', renames)).toBe('INSERT INTO tasks__v9(a) SELECT a FROM media_buys__v9 JOIN tasks__v9 ON 1=1');
    expect(renameIdentifiers('CREATE INDEX IF NOT EXISTS media_buys_owner ON media_buys (owner)', renames)).toBe('CREATE INDEX IF NOT EXISTS media_buys_owner__v9 ON media_buys__v9 (owner)');
  });

  it('leaves other identifiers that merely contain a table name, and string literals, alone', () => {
    expect(renameIdentifiers('SELECT my_tasks, tasks_count, xtasks FROM other', renames)).toBe('SELECT my_tasks, tasks_count, xtasks FROM other');
    expect(renameIdentifiers("UPDATE tasks SET status = 'tasks', note = 'it''s media_buys' WHERE j = '$.tasks'", renames)).toBe(
      "UPDATE tasks__v9 SET status = 'tasks', note = 'it''s media_buys' WHERE j = '$.tasks'",
    );
    expect(renameIdentifiers("SELECT 'unterminated tasks", renames)).toBe("SELECT 'unterminated tasks");
  });

  it('finds the index names a DDL creates', () => {
    expect(indexNames(['CREATE UNIQUE INDEX IF NOT EXISTS a_b ON a (b)', 'create index c_d on c (d)', 'CREATE TABLE IF NOT EXISTS x (y INT)'])).toEqual(['a_b', 'c_d']);
  });
});

describe('every real projection can be built beside itself', () => {
  it.each(allProjections.map((p) => [p.name, p] as const))('%s: its shadow DDL makes its own tables and indexes next to the live ones (SQLite)', (_name, p: Projection) => {
    const db = new Database(':memory:');
    try {
      for (const s of p.ddl.sqlite) db.exec(s);
      const live = db.prepare("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all() as { type: string; name: string }[];
      const { shadow, tables, indexes } = planShadow(p, 'sqlite');
      for (const s of shadow.ddl.sqlite) db.exec(s);
      const all = db.prepare("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all() as { type: string; name: string }[];
      // Every live table and index got a renamed twin, and nothing else changed.
      expect(all.length).toBe(live.length * 2);
      for (const t of tables) expect(all).toContainEqual({ type: 'table', name: t.shadow });
      for (const i of indexes) expect(all).toContainEqual({ type: 'index', name: i.shadow });
      // Columns keep their names (no column is named like one of the projection's tables).
      for (const t of tables) {
        const cols = (name: string) => (db.prepare(`PRAGMA table_info(${name})`).all() as { name: string }[]).map((c) => c.name);
        expect(cols(t.shadow)).toEqual(cols(t.live));
      }
      expect(shadow.name).toBe(`${p.name}@v${p.version}`);
    } finally {
      db.close();
    }
  });

  it('statements of the shadow write the shadow tables', () => {
    const p: Projection = {
      name: 'counts',
      version: 3,
      tables: ['counts'],
      ddl: { sqlite: ['CREATE TABLE IF NOT EXISTS counts (k TEXT PRIMARY KEY, n INTEGER)'], postgres: [] },
      handles: '*',
      evolve: (e) => [{ sql: "INSERT INTO counts (k, n) VALUES (?, 1) ON CONFLICT (k) DO UPDATE SET n = counts.n + 1 WHERE counts.k <> 'counts'", params: [e.type] }],
    };
    const { shadow } = planShadow(p, 'sqlite');
    expect(shadow.evolve({ type: 'X' } as StoredEvent)).toEqual([
      { sql: "INSERT INTO counts__v3 (k, n) VALUES (?, 1) ON CONFLICT (k) DO UPDATE SET n = counts__v3.n + 1 WHERE counts__v3.k <> 'counts'", params: ['X'] },
    ]);
  });
});
