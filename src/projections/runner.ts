import type { EventStore, Subscription } from '../eventstore/port';
import { CheckpointMovedError, type ReadModelStore, type Sql } from '../readmodel/port';
import { handlesEvent, type Projection } from './projection';

export interface ProjectionStatus {
  name: string;
  position: number;
}

interface Logger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Keeps every projection caught up with the log. Each projection follows the log on its own
 * subscription and commits its rows with its checkpoint; if another instance (or a rebuild)
 * moved the checkpoint, the batch is rolled back and the projection resumes from the stored one.
 */
export class ProjectionRunner {
  private subs = new Map<string, Subscription>();
  private positions = new Map<string, number>();
  private stopped = false;
  private restarts = new Set<Promise<void>>();

  constructor(
    private store: EventStore,
    private readModels: ReadModelStore,
    readonly projections: readonly Projection[],
    private log?: Logger,
    private batchSize = 1000,
  ) {}

  /** Creates tables, rebuilds projections whose version changed, and starts following the log. */
  async start(): Promise<void> {
    for (const p of this.projections) {
      const cp = await this.readModels.getCheckpoint(p.name);
      if (cp.position > 0 && cp.version !== p.version) await this.readModels.reset(p.name, p.tables);
      await this.readModels.migrate(p.ddl[this.readModels.dialect]);
      await this.follow(p);
    }
  }

  private async follow(p: Projection): Promise<void> {
    if (this.stopped) return;
    let from = (await this.readModels.getCheckpoint(p.name)).position;
    this.positions.set(p.name, from);
    const sub = this.store.subscribe(
      async (events) => {
        const statements: Sql[] = [];
        for (const e of events) if (handlesEvent(p, e.type)) statements.push(...p.evolve(e));
        const to = events[events.length - 1]!.position;
        await this.readModels.applyBatch(p.name, from, to, statements, p.version);
        from = to;
        this.positions.set(p.name, to);
      },
      {
        fromPosition: from + 1,
        batchSize: this.batchSize,
        onError: (err) => {
          if (err instanceof CheckpointMovedError) {
            // Someone else advanced (or reset) this projection: restart from what is stored.
            const r = this.restart(p).catch((e) => this.log?.error({ err: e, projection: p.name }, 'restart failed'));
            this.restarts.add(r);
            void r.finally(() => this.restarts.delete(r));
          } else {
            this.log?.error({ err, projection: p.name }, 'projection batch failed; retrying');
          }
        },
      },
    );
    this.subs.set(p.name, sub);
  }

  private async restart(p: Projection): Promise<void> {
    const sub = this.subs.get(p.name);
    this.subs.delete(p.name);
    await sub?.stop();
    if (this.stopped) return;
    await this.readModels.migrate(p.ddl[this.readModels.dialect]);
    await this.follow(p);
  }

  /** Position each projection has applied up to (in memory: what this instance has seen). */
  status(): ProjectionStatus[] {
    return this.projections.map((p) => ({ name: p.name, position: this.positions.get(p.name) ?? 0 }));
  }

  /** True when every projection has applied everything up to `head`. */
  caughtUpWith(head: number): boolean {
    return this.projections.every((p) => (this.positions.get(p.name) ?? 0) >= head);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.restarts]);
    await Promise.all([...this.subs.values()].map((s) => s.stop()));
    this.subs.clear();
  }
}

/**
 * Replays one projection from position 0 (the `projections rebuild` command). Runs against a
 * stopped or running server alike: the running runner notices the reset and follows along.
 */
export async function rebuildProjection(
  store: EventStore,
  readModels: ReadModelStore,
  p: Projection,
  onProgress?: (position: number, head: number, applied: number) => void,
  batchSize = 5000,
): Promise<{ events: number; position: number }> {
  await readModels.reset(p.name, p.tables);
  await readModels.migrate(p.ddl[readModels.dialect]);
  const head = await store.headPosition();
  let from = 0;
  let count = 0;
  for (;;) {
    const events = await store.readAll({ fromPosition: from + 1, limit: batchSize });
    if (events.length === 0) break;
    const statements: Sql[] = [];
    for (const e of events) if (handlesEvent(p, e.type)) statements.push(...p.evolve(e));
    const to = events[events.length - 1]!.position;
    await readModels.applyBatch(p.name, from, to, statements, p.version);
    from = to;
    count += events.length;
    onProgress?.(to, head, count);
    if (to >= head && events.length < batchSize) break;
  }
  return { events: count, position: from };
}
