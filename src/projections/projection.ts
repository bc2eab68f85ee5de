import type { StoredEvent } from '../eventstore/port';
import type { Sql } from '../readmodel/port';

/**
 * A read model: its tables, the events it handles, and a pure `evolve` that turns one event into
 * SQL. Each lives in its own folder under `projections/`. Statements must be idempotent only
 * across rebuilds; the runner guarantees each event is applied once per build.
 */
export interface Projection {
  readonly name: string;
  /**
   * Bump when the tables or `evolve` change: the runner rebuilds a projection whose version differs
   * beside the live one and switches to it when caught up (projections/shadow.ts).
   */
  readonly version: number;
  /**
   * Tables this projection owns; dropped on rebuild. Its DDL and statements name them (and its
   * indexes) literally, and no column or other identifier shares their names: a build beside the
   * live one renames every such identifier outside string literals.
   */
  readonly tables: readonly string[];
  readonly ddl: { readonly sqlite: readonly string[]; readonly postgres: readonly string[] };
  /** Event types it reads; '*' for all. */
  readonly handles: readonly string[] | '*';
  evolve(event: StoredEvent): Sql[];
  /**
   * For projections whose statements fold (counters): the statements for a whole batch of the
   * events it handles, in order. The runner prefers it to one `evolve` per event.
   */
  evolveBatch?(events: readonly StoredEvent[]): Sql[];
}

/** The statements a projection writes for `events` (already filtered to those it handles). */
export function statementsFor(p: Projection, events: readonly StoredEvent[]): Sql[] {
  if (events.length === 0) return [];
  return p.evolveBatch ? p.evolveBatch(events) : events.flatMap((e) => p.evolve(e));
}

export function handlesEvent(p: Projection, type: string): boolean {
  return p.handles === '*' || p.handles.includes(type);
}
