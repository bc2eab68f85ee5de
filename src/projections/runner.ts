import type { EventStore, StoredEvent, Subscription } from '../eventstore/port';
import { CheckpointMovedError, type CheckpointMove, type ReadModelStore } from '../readmodel/port';
import { LeaseKeeper, type Leases } from '../readmodel/leases';
import { handlesEvent, statementsFor, type Projection } from './projection';
import { inBatchSpan } from '../shared/tracing';

/** Where `projections rebuild` records that it rewrote read models (event `ProjectionsRebuilt`). */
export const PROJECTIONS_STREAM = 'projections';

export interface ProjectionStatus {
  name: string;
  position: number;
}

interface Logger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

interface Cursor {
  /** Checkpoint as stored (the CAS value for the next write). */
  persisted: number;
  /** Last position this instance has applied (>= persisted: empty batches are stored lazily). */
  seen: number;
  persistedAt: number;
}

/**
 * Keeps every projection caught up with the log. One subscription reads each batch once; the
 * rows of every projection that handles something in it, and their checkpoints, commit in one
 * transaction (exactly-once effect). A batch that gives a projection nothing to write moves its
 * checkpoint lazily (every 1,000 events or second, and at stop): replaying such events after a
 * crash writes nothing either. If another instance or a rebuild moved a checkpoint, the whole
 * batch rolls back and the runner resumes from what is stored.
 *
 * Instances sharing the read models (one PostgreSQL database) elect one applier with a lease;
 * the others follow: they read the same batches, wait until the stored checkpoints show the
 * applier wrote what the batch changes, then drop their cached rows and release their
 * read-your-writes waits as if they had written it themselves. Without that, every instance
 * applied every batch, and the losers of each checkpoint race restarted (three instances made
 * fewer commands per second than one).
 */
export class ProjectionRunner {
  private sub?: Subscription;
  private cursors = new Map<string, Cursor>();
  private stopped = false;
  private restarting?: Promise<void>;
  private waiters = new Set<{ position: number; resolve: () => void }>();
  private appliedListeners: ((events: readonly StoredEvent[]) => void)[] = [];
  private writtenListeners: ((events: readonly StoredEvent[]) => void)[] = [];
  private resyncListeners: (() => void)[] = [];
  /**
   * Listeners have heard of every event up to here, or a checkpoint this runner read shows the
   * events were applied before (by an earlier run, or another instance it then jumped past):
   * replays are never announced as news.
   */
  private notifiedUpTo = 0;
  /** Applier: writes the read models. Follower: waits for the applier's writes (see above). */
  private mode: 'applier' | 'follower' = 'applier';
  /** Bumped at each restart: a follower still waiting on a batch of an older subscription gives up. */
  private generation = 0;
  private keeper?: LeaseKeeper;

  constructor(
    private store: EventStore,
    private readModels: ReadModelStore,
    readonly projections: readonly Projection[],
    private log?: Logger,
    private batchSize = 1000,
    /** One applier among the instances sharing the read models; absent: this runner applies. */
    private readonly applierLease?: { leases: Leases; ttlMs: number },
  ) {}

  /** Creates tables, rebuilds projections whose version changed, and starts following the log. */
  async start(): Promise<void> {
    for (const p of this.projections) await this.readModels.migrate(p.ddl[this.readModels.dialect]);
    if (!this.applierLease) {
      await this.resetChangedVersions();
      await this.follow();
      return;
    }
    this.keeper = new LeaseKeeper(this.applierLease.leases, 'projections-applier', { start: () => this.become('applier'), stop: () => this.become('follower') }, {
      ttlMs: this.applierLease.ttlMs,
      onError: (err) => this.log?.warn({ err }, 'projection applier lease: could not renew'),
    });
    this.mode = 'follower';
    await this.keeper.start(); // becomes the applier at once when the lease is free
    if (!this.sub) await this.follow();
  }

  private async become(mode: 'applier' | 'follower'): Promise<void> {
    if (this.stopped) return;
    this.mode = mode;
    if (mode === 'applier') await this.resetChangedVersions();
    if (this.sub) await this.restart();
    else await this.follow();
  }

  /** A projection whose code changed since its rows were written is rebuilt from position 0. */
  private async resetChangedVersions(): Promise<void> {
    for (const p of this.projections) {
      const cp = await this.readModels.getCheckpoint(p.name);
      if (cp.position > 0 && cp.version !== p.version) {
        await this.readModels.reset(p.name, p.tables);
        await this.readModels.migrate(p.ddl[this.readModels.dialect]);
      }
    }
  }

  private async follow(): Promise<void> {
    if (this.stopped || this.projections.length === 0) return;
    for (const p of this.projections) {
      const stored = (await this.readModels.getCheckpoint(p.name)).position;
      this.cursors.set(p.name, { persisted: stored, seen: stored, persistedAt: Date.now() });
      this.notifiedUpTo = Math.max(this.notifiedUpTo, stored);
    }
    const from = Math.min(...[...this.cursors.values()].map((c) => c.seen));
    const generation = this.generation;
    this.sub = this.store.subscribe((events) => inBatchSpan('projections.batch', events, { 'adcp.projections.mode': this.mode }, () => this.apply(events, generation)), {
      fromPosition: from + 1,
      batchSize: this.batchSize,
      onError: (err) => {
        if (err instanceof CheckpointMovedError) {
          // Someone else advanced (or reset) a projection: restart from what is stored.
          this.restarting ??= this.restart()
            .catch((e: unknown) => this.log?.error({ err: e }, 'projection restart failed'))
            .finally(() => (this.restarting = undefined));
        } else {
          this.log?.error({ err }, 'projection batch failed; retrying');
        }
      },
    });
  }

  private async apply(events: StoredEvent[], generation: number): Promise<void> {
    const to = events[events.length - 1]!.position;
    const now = Date.now();
    const moves: CheckpointMove[] = [];
    for (const p of this.projections) {
      const c = this.cursors.get(p.name)!;
      if (c.seen >= to) continue;
      const statements = statementsFor(p, events.filter((e) => e.position > c.seen && handlesEvent(p, e.type)));
      const lazy = statements.length === 0 && to - c.persisted < 1000 && now - c.persistedAt < 1000;
      if (!lazy) moves.push({ name: p.name, from: c.persisted, to, statements, version: p.version });
    }
    const writes = moves.filter((m) => m.statements.length > 0);
    if (this.mode === 'applier') {
      if (moves.length > 0) await this.readModels.applyBatches(moves);
    } else if (!(await this.appliedByApplier(events, writes, generation))) {
      return; // this subscription was replaced meanwhile (a restart, or this instance became the applier)
    }
    if (writes.length > 0) for (const listener of this.writtenListeners) listener(events);
    if (events.some((e) => e.type === 'ProjectionsRebuilt' && e.position > this.notifiedUpTo)) for (const listener of this.resyncListeners) listener();
    for (const p of this.projections) {
      const c = this.cursors.get(p.name)!;
      if (this.mode === 'follower' || moves.some((m) => m.name === p.name)) {
        c.persisted = Math.max(c.persisted, to);
        c.persistedAt = now;
      }
      c.seen = Math.max(c.seen, to);
    }
    const fresh = events.filter((e) => e.position > this.notifiedUpTo);
    this.notifiedUpTo = Math.max(this.notifiedUpTo, to);
    if (fresh.length > 0) for (const listener of this.appliedListeners) listener(fresh);
    for (const w of this.waiters) if (this.caughtUpWith(w.position)) w.resolve();
  }

  /**
   * A follower's wait: until the stored checkpoint of every projection with rows to write in this
   * batch has reached the last event it writes for (the applier stores those at once; only
   * checkpoints with nothing to write move lazily). False when the subscription was replaced.
   */
  private async appliedByApplier(events: readonly StoredEvent[], writes: readonly CheckpointMove[], generation: number): Promise<boolean> {
    const needed = writes.map((m) => {
      const p = this.projections.find((x) => x.name === m.name)!;
      return { name: m.name, upTo: events.reduce((last, e) => (handlesEvent(p, e.type) ? e.position : last), 0) };
    });
    for (let pause = 1; ; pause = Math.min(100, pause * 2)) {
      if (this.stopped || generation !== this.generation) return false;
      if (needed.length === 0) return true;
      const stored = new Map((await this.readModels.query<{ name: string; position: number | string }>('SELECT name, position FROM checkpoints')).map((r) => [r.name, Number(r.position)]));
      if (needed.every((n) => (stored.get(n.name) ?? 0) >= n.upTo)) return true;
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /** Calls `listener` with each batch once the read models show it (e.g. to drop cached rows). */
  onApplied(listener: (events: readonly StoredEvent[]) => void): void {
    this.appliedListeners.push(listener);
  }

  /**
   * Calls `listener` with each batch whose rows this runner has just written, replays included
   * (what a cache of rows must hear; onApplied announces each event once and never a replay).
   * Runs before any waitFor() resolves, so a command's own effect is never read from a cache.
   */
  onWritten(listener: (events: readonly StoredEvent[]) => void): void {
    this.writtenListeners.push(listener);
  }

  /**
   * Calls `listener` when the runner finds the read models moved under it (another instance
   * applied events, a rebuild reset a projection) and resumes from what is stored, and when the
   * log says `projections rebuild` rewrote them: rows changed without this instance applying, or
   * announcing, the events (e.g. to drop every cached row).
   */
  onResync(listener: () => void): void {
    this.resyncListeners.push(listener);
  }

  /**
   * For consumers that build from read models: resolves once the named projections have applied
   * `position`, and rejects if they have not within `timeoutMs`, so the consumer's batch is
   * redelivered later instead of acting on rows that do not show the event yet.
   */
  async applied(position: number, names: readonly string[], timeoutMs = 10_000): Promise<void> {
    const ready = () => names.every((n) => (this.cursors.get(n)?.seen ?? 0) >= position);
    const deadline = Date.now() + timeoutMs;
    // Only the read models the caller uses: a rebuilding or stuck projection elsewhere holds no one up.
    while (!ready() && !this.stopped && Date.now() < deadline) await this.waitFor(position, Math.max(1, Math.min(500, deadline - Date.now())));
    if (!ready() && !this.stopped) throw new Error(`read models ${names.join(', ')} have not reached log position ${position} yet`);
  }

  /**
   * Resolves once every projection has applied `position`, or after `timeoutMs` regardless: a
   * command can answer after its own effect is readable (read-your-writes) without ever hanging
   * on a slow projection.
   */
  waitFor(position: number, timeoutMs = 2000): Promise<void> {
    if (this.caughtUpWith(position) || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        position,
        resolve: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.resolve, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  private async restart(): Promise<void> {
    const sub = this.sub;
    this.sub = undefined;
    this.generation++;
    await sub?.stop();
    if (this.stopped) return;
    for (const listener of this.resyncListeners) listener();
    for (const p of this.projections) await this.readModels.migrate(p.ddl[this.readModels.dialect]);
    await this.follow();
    // Again once the stored checkpoints are read: rows cached in between may predate events the
    // runner has now jumped past without applying (and so without announcing or dropping them).
    for (const listener of this.resyncListeners) listener();
    for (const w of this.waiters) if (this.caughtUpWith(w.position)) w.resolve();
  }

  /** Position each projection has applied up to (in memory: what this instance has seen). */
  status(): ProjectionStatus[] {
    return this.projections.map((p) => ({ name: p.name, position: this.cursors.get(p.name)?.seen ?? 0 }));
  }

  /** True when every projection has applied everything up to `head`. */
  caughtUpWith(head: number): boolean {
    return this.projections.every((p) => (this.cursors.get(p.name)?.seen ?? 0) >= head);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiters) w.resolve();
    await this.restarting;
    await this.sub?.stop();
    this.sub = undefined;
    if (this.mode === 'applier') await this.persistLazyCheckpoints();
    // Then hand the lease over at once: the next applier starts from what is stored.
    await this.keeper?.close();
  }

  /** Persist the lazily kept checkpoints so a restart does not re-read what was seen. */
  private async persistLazyCheckpoints(): Promise<void> {
    const moves: CheckpointMove[] = [];
    for (const p of this.projections) {
      const c = this.cursors.get(p.name);
      if (c && c.seen > c.persisted) moves.push({ name: p.name, from: c.persisted, to: c.seen, statements: [], version: p.version });
    }
    if (moves.length === 0) return;
    await this.readModels.applyBatches(moves).catch((err: unknown) => {
      if (!(err instanceof CheckpointMovedError)) throw err;
    });
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
    const statements = statementsFor(p, events.filter((e) => handlesEvent(p, e.type)));
    const to = events[events.length - 1]!.position;
    await readModels.applyBatch(p.name, from, to, statements, p.version);
    from = to;
    count += events.length;
    onProgress?.(to, head, count);
    if (to >= head && events.length < batchSize) break;
  }
  return { events: count, position: from };
}
