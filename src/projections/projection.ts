import type { StoredEvent } from '../eventstore/port';
import type { Sql } from '../readmodel/port';

/**
 * A read model: its tables, the events it handles, and a pure `evolve` that turns one event into
 * SQL. Each lives in its own folder under `projections/`. Statements must be idempotent only
 * across rebuilds; the runner guarantees each event is applied once per build.
 */
export interface Projection {
  readonly name: string;
  /** Bump when the tables or `evolve` change: the runner rebuilds a projection whose version differs. */
  readonly version: number;
  /** Tables this projection owns; dropped on rebuild. */
  readonly tables: readonly string[];
  readonly ddl: { readonly sqlite: readonly string[]; readonly postgres: readonly string[] };
  /** Event types it reads; '*' for all. */
  readonly handles: readonly string[] | '*';
  evolve(event: StoredEvent): Sql[];
}

export function handlesEvent(p: Projection, type: string): boolean {
  return p.handles === '*' || p.handles.includes(type);
}
