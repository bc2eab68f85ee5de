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
  /**
   * When a command that appended events it handles may answer (Marten's lifecycles, plus ours):
   * - 'inline': its rows are written in the append's own transaction where the store can
   *   (PostgreSQL with the read models in the same database), so the command answers after one
   *   commit and waits for nothing. The runner applies it after commit too, as any other, which
   *   keeps rebuilds, imports and crash recovery as they are: so its statements must be
   *   idempotent per event (each row guarded by the position of the last event it applied;
   *   within a row, events come from one stream, so their positions rise in commit order).
   *   Its statements may use an event's `position` and `streamVersion` only as parameters, as
   *   they are (no arithmetic, not in the SQL text): on PostgreSQL they are stand-ins the append
   *   function replaces with the values it assigns (src/eventstore/postgres.ts).
   *   Where the store cannot write inline (SQLite), it is 'waited'.
   * - 'waited' (the default): applied by the runner after commit; a command waits until its
   *   events are applied (read-your-writes).
   * - 'eventual': applied by the runner; no command waits for it (counters, health signals).
   */
  readonly consistency?: 'inline' | 'waited' | 'eventual';
}

/** The statements a projection writes for `events` (already filtered to those it handles). */
export function statementsFor(p: Projection, events: readonly StoredEvent[]): Sql[] {
  if (events.length === 0) return [];
  return p.evolveBatch ? p.evolveBatch(events) : events.flatMap((e) => p.evolve(e));
}

export function handlesEvent(p: Projection, type: string): boolean {
  return p.handles === '*' || p.handles.includes(type);
}
