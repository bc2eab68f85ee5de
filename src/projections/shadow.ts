import type { Sql } from '../readmodel/port';
import type { Projection } from './projection';

/**
 * A changed projection is rebuilt beside the live one: the same code writing into tables (and
 * indexes) renamed `<name>__v<version>`, with its own checkpoint `<projection>@v<version>`, until
 * it has caught up and is switched in. Nothing else reads the shadow tables.
 */
export interface ShadowPlan {
  /** The projection as it writes its shadow: renamed DDL, tables and statements, its own checkpoint. */
  readonly shadow: Projection;
  /** Each canonical table and its shadow. */
  readonly tables: readonly { live: string; shadow: string }[];
  /** Each canonical index (of the store's dialect) and its shadow. */
  readonly indexes: readonly { live: string; shadow: string }[];
}

export const shadowCheckpointName = (p: Pick<Projection, 'name' | 'version'>) => `${p.name}@v${p.version}`;
export const shadowIdentifier = (name: string, version: number) => `${name}__v${version}`;

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;

/**
 * Renames whole identifiers found in `renames`, leaving string literals ('…', quotes doubled
 * inside) alone: a table name inside a JSON path or a status text is data, not a reference. A
 * longer identifier that merely starts with a table's name (`media_buys_owner`) is another name.
 */
export function renameIdentifiers(sql: string, renames: ReadonlyMap<string, string>): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (ch === "'") {
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) break;
        if (sql[j] === "'") {
          if (sql[j + 1] === "'") j += 2;
          else break;
        } else j++;
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (/[A-Za-z_]/.test(ch) && (i === 0 || !/[A-Za-z0-9_$]/.test(sql[i - 1]!))) {
      IDENTIFIER.lastIndex = i;
      const word = IDENTIFIER.exec(sql)![0];
      out += renames.get(word) ?? word;
      i += word.length;
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}

/** Index names a projection's DDL creates (dropped with their table; renamed with it on a switch). */
export function indexNames(ddl: readonly string[]): string[] {
  const names: string[] = [];
  for (const s of ddl) for (const m of s.matchAll(/CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi)) names.push(m[1]!);
  return names;
}

/** The projection `p` writing into its own versioned tables (see ShadowPlan). */
export function planShadow(p: Projection, dialect: 'sqlite' | 'postgres'): ShadowPlan {
  const renames = new Map<string, string>();
  const tables = p.tables.map((live) => ({ live, shadow: shadowIdentifier(live, p.version) }));
  const indexes = indexNames(p.ddl[dialect]).map((live) => ({ live, shadow: shadowIdentifier(live, p.version) }));
  for (const { live, shadow } of [...tables, ...indexNames([...p.ddl.sqlite, ...p.ddl.postgres]).map((live) => ({ live, shadow: shadowIdentifier(live, p.version) }))]) renames.set(live, shadow);
  // Projections emit the same few statement texts again and again: rename each text once.
  const renamed = new Map<string, string>();
  const rename = (sql: string) => {
    let r = renamed.get(sql);
    if (r === undefined) {
      if (renamed.size >= 10_000) renamed.clear(); // statement texts built from data stay bounded
      r = renameIdentifiers(sql, renames);
      renamed.set(sql, r);
    }
    return r;
  };
  const statements = (list: Sql[]): Sql[] => list.map((s) => ({ ...s, sql: rename(s.sql) }));
  const shadow: Projection = {
    name: shadowCheckpointName(p),
    version: p.version,
    tables: tables.map((t) => t.shadow),
    ddl: { sqlite: p.ddl.sqlite.map(rename), postgres: p.ddl.postgres.map(rename) },
    handles: p.handles,
    evolve: (e) => statements(p.evolve(e)),
    ...(p.evolveBatch ? { evolveBatch: (events) => statements(p.evolveBatch!(events)) } : {}),
  };
  return { shadow, tables, indexes };
}
