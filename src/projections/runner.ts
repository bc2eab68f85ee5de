import type { EventStore, StoredEvent, Subscription } from '../eventstore/port';
import { CheckpointMovedError, type CheckpointMove, type ReadModelStore, type Sql } from '../readmodel/port';
import { LeaseKeeper, type Leases } from '../readmodel/leases';
import { handlesEvent, statementsFor, type Projection } from './projection';
import { planShadow, shadowIdentifier, type ShadowPlan } from './shadow';
import { inBatchSpan } from '../shared/tracing';

/** Where `projections rebuild` records that it rewrote read models (event `ProjectionsRebuilt`). */
export const PROJECTIONS_STREAM = 'projections';

export interface ProjectionStatus {
  name: string;
  position: number;
  /** Set when an event stopped this projection (see ProjectionRunner.isolate). */
  failed?: ProjectionFailure;
}

/** The event a projection's code could not apply: the projection stops there, the others go on. */
export interface ProjectionFailure {
  position: number;
  type: string;
  error: string;
}

/**
 * The checkpoint row that records, for `projections status` in another process, where a
 * projection was stopped: its position is the event's. Stale once the projection is past it.
 */
export const failureCheckpoint = (projection: string): string => `failed:${projection}`;

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
  private waiters = new Set<{ ready: () => boolean; resolve: () => void }>();
  /**
   * Set once the event store writes the 'inline' projections in each append's transaction
   * (inlineWrites): commands then never wait for them.
   */
  private inline = false;
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
  /**
   * Projections whose code changed since their rows were written (stored version differs): they
   * are rebuilt beside the live tables (see projections/shadow.ts) while reads go on from the old
   * rows, which stop moving. Not in `cursors` until switched in, so read-your-writes waits skip
   * them; `applied()` (consumers acting on rows) waits for the switch.
   */
  private shadows = new Map<string, { plan: ShadowPlan; frozenAt: number }>();
  /** The applier's background build of the shadows (one reader for all of them). */
  private building?: Promise<void>;
  /**
   * Projections stopped by an event their code throws on (data of a shape it does not expect, in
   * a log appended to past the gateway): each stays where it was, skipped by batches, waits and
   * readiness, until the runner restarts (and tries it again); every other projection goes on.
   */
  private failed = new Map<string, ProjectionFailure>();

  constructor(
    private store: EventStore,
    private readModels: ReadModelStore,
    readonly projections: readonly Projection[],
    private log?: Logger,
    private batchSize = 1000,
    /** One applier among the instances sharing the read models; absent: this runner applies. */
    private readonly applierLease?: { leases: Leases; ttlMs: number },
    /** Events per transaction of a shadow build (between them live batches and requests go on). */
    private readonly shadowBatchSize = 5000,
  ) {}

  /** Creates tables, starts shadow builds of projections whose version changed, and follows the log. */
  async start(): Promise<void> {
    if (!this.applierLease) {
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
    if (this.sub) await this.restart();
    else await this.follow();
  }

  /**
   * Which projections are live and which are rebuilt beside (their stored version differs from
   * the code's); creates the live tables, and, on the applier, the shadow tables. Leftovers of a
   * shadow build that never committed a batch (or of another version) are dropped first; one that
   * did is resumed from its checkpoint (its rows and checkpoint committed together).
   */
  private async sortOut(): Promise<void> {
    const dialect = this.readModels.dialect;
    this.shadows = new Map();
    for (const p of this.projections) {
      const cp = await this.readModels.getCheckpoint(p.name);
      if (cp.position > 0 && cp.version !== p.version) this.shadows.set(p.name, { plan: planShadow(p, dialect), frozenAt: cp.position });
      else await this.readModels.migrate(p.ddl[dialect]);
    }
    if (this.mode !== 'applier') return;
    // Shadows of a version no longer wanted (a build the code moved past, or rolled back from).
    const stale = await this.readModels.query<{ name: string }>('SELECT name FROM checkpoints');
    for (const { name } of stale) {
      const m = /^(.*)@v(\d+)$/.exec(name);
      const p = m && this.projections.find((x) => x.name === m[1]);
      // (A build at the live version is `projections rebuild`'s, under way in another process.)
      if (p && Number(m[2]) !== p.version && this.shadows.get(p.name)?.plan.shadow.name !== name) await this.readModels.reset(name, p.tables.map((t) => shadowIdentifier(t, Number(m[2]))));
    }
    for (const { plan } of this.shadows.values()) {
      const cp = await this.readModels.getCheckpoint(plan.shadow.name);
      if (cp.position === 0 || cp.version !== plan.shadow.version) await this.readModels.reset(plan.shadow.name, plan.shadow.tables);
      await this.readModels.migrate(plan.shadow.ddl[dialect]);
    }
  }

  /** Projections applied from the log now: neither rebuilt beside nor stopped by an event. */
  private liveProjections(): Projection[] {
    return this.projections.filter((p) => !this.shadows.has(p.name) && !this.failed.has(p.name));
  }

  /**
   * A projection's statements for a batch, or undefined when its code throws on an event in it:
   * then that projection is stopped at the first event it throws on (logged, named in status()
   * and, through a checkpoint row, in `projections status`), and the batch goes on for the rest.
   * Without this one malformed event stopped every read model (API keys included) for good.
   */
  private statementsOrIsolate(p: Projection, events: readonly StoredEvent[]): Sql[] | undefined {
    try {
      return statementsFor(p, events);
    } catch (err) {
      this.isolate(p, events, err);
      return undefined;
    }
  }

  private isolate(p: Projection, events: readonly StoredEvent[], batchError: unknown): void {
    let culprit = events[0]!;
    let error = batchError;
    for (const e of events) {
      try {
        statementsFor(p, [e]);
      } catch (err) {
        culprit = e;
        error = err;
        break;
      }
    }
    const failure: ProjectionFailure = { position: culprit.position, type: culprit.type, error: error instanceof Error ? error.message : String(error) };
    this.failed.set(p.name, failure);
    this.log?.error({ projection: p.name, ...failure }, 'projection stopped: its code cannot apply this event; the other projections go on (fix the event or the code, then restart)');
    if (this.mode === 'applier') void this.recordFailure(p.name, failure.position).catch((err: unknown) => this.log?.warn({ err }, 'could not record the projection failure'));
    this.releaseWaiters(); // readiness and waits no longer count it
  }

  private async recordFailure(name: string, position: number): Promise<void> {
    const row = failureCheckpoint(name);
    if ((await this.readModels.getCheckpoint(row)).position === position) return;
    await this.readModels.reset(row, []);
    await this.readModels.applyBatch(row, 0, position, []);
  }

  private async follow(): Promise<void> {
    if (this.stopped || this.projections.length === 0) return;
    await this.building; // the previous subscription's shadow build has stopped
    if (this.stopped) return;
    await this.sortOut();
    const cursors = new Map<string, Cursor>();
    for (const p of this.projections) {
      const stored = (await this.readModels.getCheckpoint(p.name)).position;
      if (!this.shadows.has(p.name)) cursors.set(p.name, { persisted: stored, seen: stored, persistedAt: Date.now() });
      this.notifiedUpTo = Math.max(this.notifiedUpTo, stored);
    }
    this.cursors = cursors;
    this.failed = new Map(); // tried again from their checkpoints
    // With every projection rebuilding, the log is still followed: for announcements, and for a
    // follower to notice the switch.
    const from = cursors.size > 0 ? Math.min(...[...cursors.values()].map((c) => c.seen)) : this.notifiedUpTo;
    const generation = this.generation;
    this.sub = this.store.subscribe((events) => inBatchSpan('projections.batch', events, { 'adcp.projections.mode': this.mode }, () => this.apply(events, generation)), {
      fromPosition: from + 1,
      batchSize: this.batchSize,
      onError: (err) => {
        if (err instanceof CheckpointMovedError) {
          // Someone else advanced (or reset, or switched) a projection: restart from what is stored.
          this.requestRestart();
        } else {
          this.log?.error({ err }, 'projection batch failed; retrying');
        }
      },
    });
    if (this.mode === 'applier' && this.shadows.size > 0) {
      this.building = this.buildShadows(generation).catch((err: unknown) => this.log?.error({ err }, 'projection shadow build failed'));
    } else if (this.shadows.size > 0) {
      void this.watchForSwitch(generation);
    }
  }

  /**
   * A follower's check, twice a second, for the applier's switch of what it rebuilds beside
   * (batches check it too, but a quiet log brings none): then it restarts, drops cached rows and
   * waits for that projection again.
   */
  private async watchForSwitch(generation: number): Promise<void> {
    while (!this.stopped && this.mode === 'follower' && generation === this.generation) {
      await new Promise((r) => setTimeout(r, 500).unref());
      if (this.stopped || this.mode !== 'follower' || generation !== this.generation) return;
      try {
        if (await this.switchedElsewhere()) return this.requestRestart();
      } catch (err) {
        this.log?.warn({ err }, 'projection switch check failed');
      }
    }
  }

  private requestRestart(): void {
    this.restarting ??= this.restart()
      .catch((e: unknown) => this.log?.error({ err: e }, 'projection restart failed'))
      .finally(() => (this.restarting = undefined));
  }

  /**
   * Replays the log into the shadow tables in batches of their own, beside the live runner,
   * and when a read finds nothing more to read, writes the last batch and switches every shadow
   * in within one transaction; then restarts the runner, which finds them live at the switch
   * position (and drops every cached row through its resync listeners). Stops, to be resumed from
   * the shadow checkpoints, when this runner stops, restarts or stops being the applier.
   */
  private async buildShadows(generation: number): Promise<void> {
    const dialect = this.readModels.dialect;
    const plans = [...this.shadows].map(([name, s]) => ({ p: this.projections.find((x) => x.name === name)!, plan: s.plan }));
    const current = () => !this.stopped && this.mode === 'applier' && generation === this.generation;
    const positions = new Map<string, number>();
    for (const { plan } of plans) positions.set(plan.shadow.name, (await this.readModels.getCheckpoint(plan.shadow.name)).position);
    while (current()) {
      try {
        const from = Math.min(...positions.values());
        const events = await this.store.readAll({ fromPosition: from + 1, limit: this.shadowBatchSize });
        if (!current()) return;
        const caughtUp = events.length < this.shadowBatchSize;
        const to = events.at(-1)?.position ?? from;
        const moves: CheckpointMove[] = [];
        for (const { plan } of plans) {
          const at = positions.get(plan.shadow.name)!;
          if (to <= at) continue;
          const statements = statementsFor(plan.shadow, events.filter((e) => e.position > at && handlesEvent(plan.shadow, e.type)));
          moves.push({ name: plan.shadow.name, from: at, to, statements, version: plan.shadow.version });
        }
        const swaps = caughtUp
          ? plans.map(({ p, plan }) => ({
              name: p.name,
              shadowCheckpoint: plan.shadow.name,
              version: p.version,
              position: Math.max(to, positions.get(plan.shadow.name)!),
              tables: plan.tables,
              indexes: plan.indexes,
              ddl: p.ddl[dialect],
            }))
          : [];
        await this.readModels.applyBatches(moves, swaps);
        for (const m of moves) positions.set(m.name, m.to);
        if (caughtUp) {
          this.log?.warn({ projections: plans.map(({ p }) => `${p.name}@v${p.version}`), position: to }, 'projections rebuilt beside the live ones and switched in');
          this.requestRestart();
          return;
        }
      } catch (err) {
        if (!(err instanceof CheckpointMovedError)) this.log?.error({ err }, 'projection shadow batch failed; retrying');
        // (A CheckpointMovedError for the live name: something still applies the old version past
        // this build, an instance on the old code, say; the switch waits until the build is past it.)
        await new Promise((r) => setTimeout(r, err instanceof CheckpointMovedError ? 100 : 1000));
        // Another applier moved a shadow (a lease handover): go on from what is stored, or, if it
        // switched them in, restart to find them live.
        for (const { plan } of plans) positions.set(plan.shadow.name, (await this.readModels.getCheckpoint(plan.shadow.name)).position);
        if (await this.switchedElsewhere()) {
          this.requestRestart();
          return;
        }
      }
      // Live batches, appends and reads go on between two batches of the build.
      await new Promise((r) => setImmediate(r));
    }
  }

  /** True when a projection this runner rebuilds beside has been switched in (by another instance). */
  private async switchedElsewhere(): Promise<boolean> {
    for (const name of this.shadows.keys()) {
      const p = this.projections.find((x) => x.name === name)!;
      if ((await this.readModels.getCheckpoint(name)).version === p.version) return true;
    }
    return false;
  }

  private async apply(events: StoredEvent[], generation: number): Promise<void> {
    const to = events[events.length - 1]!.position;
    const now = Date.now();
    const moves: CheckpointMove[] = [];
    // A follower finds out that the applier switched a shadow in from the stored versions.
    if (this.mode === 'follower' && this.shadows.size > 0 && (await this.switchedElsewhere())) throw new CheckpointMovedError([...this.shadows.keys()].join(', '), 0);
    const live = this.liveProjections();
    for (const p of live) {
      const c = this.cursors.get(p.name)!;
      if (c.seen >= to) continue;
      const statements = this.statementsOrIsolate(p, events.filter((e) => e.position > c.seen && handlesEvent(p, e.type)));
      if (!statements) continue;
      const lazy = statements.length === 0 && to - c.persisted < 1000 && now - c.persistedAt < 1000;
      if (!lazy) moves.push({ name: p.name, from: c.persisted, to, statements, version: p.version });
    }
    const writes = moves.filter((m) => m.statements.length > 0);
    if (this.mode === 'applier') {
      if (moves.length > 0) await this.readModels.applyBatches(moves);
    } else if (!(await this.appliedByApplier(events, writes.filter((m) => this.awaitedFromApplier(m.name)), generation))) {
      return; // this subscription was replaced meanwhile (a restart, or this instance became the applier)
    }
    if (writes.length > 0) for (const listener of this.writtenListeners) listener(events);
    if (events.some((e) => e.type === 'ProjectionsRebuilt' && e.position > this.notifiedUpTo)) for (const listener of this.resyncListeners) listener();
    for (const p of live) {
      if (this.failed.has(p.name)) continue;
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
    this.releaseWaiters();
  }

  private releaseWaiters(): void {
    for (const w of this.waiters) if (w.ready()) w.resolve();
  }

  /**
   * What the event store writes in each append's own transaction: the statements of every live
   * 'inline' projection for the events appended (none for one being rebuilt beside, whose live
   * tables are of the old version), and, once they commit, the same announcement as a batch this
   * runner wrote (cached rows dropped before the command answers). The runner applies them after
   * commit as well (their statements are idempotent per event): rebuilds, imports, recovery and
   * other instances' caches go on as for any projection.
   */
  inlineWrites(): { handles(type: string): boolean; statements(events: readonly StoredEvent[]): Sql[]; committed(events: readonly StoredEvent[]): void } {
    this.inline = true;
    const inline = this.projections.filter((p) => p.consistency === 'inline');
    return {
      handles: (type) => inline.some((p) => handlesEvent(p, type)),
      statements: (events) => inline.filter((p) => !this.shadows.has(p.name)).flatMap((p) => statementsFor(p, events.filter((e) => handlesEvent(p, e.type)))),
      committed: (events) => {
        for (const listener of this.writtenListeners) listener(events);
      },
    };
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

  /**
   * Whether a follower waits for the applier to write this projection's rows of a batch. Not for
   * one the store writes with each append (its rows for any event in the log committed with the
   * event, on whichever instance appended it: they all run this code), nor for an 'eventual' one
   * (no command waits for it). Each wait polls the stored checkpoints: with every batch holding
   * events that event-stats counts, followers spent more on that than on anything else.
   */
  private awaitedFromApplier(name: string): boolean {
    const p = this.projections.find((x) => x.name === name);
    return !p || this.waitedFor(p);
  }

  /**
   * Whether a command waits for this projection to show what it appended: not for an 'eventual'
   * one, nor for an 'inline' one the store writes with the append (see inlineWrites).
   */
  private waitedFor(p: Projection): boolean {
    return !(p.consistency === 'eventual' || (p.consistency === 'inline' && this.inline));
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
    // Only the read models the caller uses: a rebuilding or stuck projection elsewhere holds no one up.
    const ready = () => names.every((n) => (this.cursors.get(n)?.seen ?? 0) >= position);
    await this.until(ready, timeoutMs);
    if (!ready() && !this.stopped) throw new Error(`read models ${names.join(', ')} have not reached log position ${position} yet`);
  }

  /**
   * Read-your-writes: resolves once the projections show what this process appended up to
   * `position`, or after `timeoutMs` regardless, so a command never hangs on a slow projection.
   * With `appendedTypes` (the highest position this process appended of each event type), a
   * projection is waited for only up to the last event it handles, and 'eventual' projections,
   * and 'inline' ones the store writes with the append, not at all: a create of a media buy
   * waits for nothing on PostgreSQL. A projection being rebuilt beside is not waited for: its
   * rows are stale until the switch anyway, and waiting would cost every command the timeout.
   */
  waitFor(position: number, appendedTypes?: ReadonlyMap<string, number>, timeoutMs = 2000): Promise<void> {
    if (!appendedTypes) return this.until(() => this.caughtUpWith(position), timeoutMs);
    const targets: { name: string; upTo: number }[] = [];
    for (const p of this.liveProjections()) {
      if (!this.waitedFor(p)) continue;
      let upTo = 0;
      if (p.handles === '*') upTo = position;
      else for (const type of p.handles) upTo = Math.max(upTo, Math.min(position, appendedTypes.get(type) ?? 0));
      if (upTo > 0) targets.push({ name: p.name, upTo });
    }
    // (A projection switched out meanwhile has no cursor: rebuilding, it is not waited for.)
    return this.until(() => targets.every((t) => (this.cursors.get(t.name)?.seen ?? Infinity) >= t.upTo), timeoutMs);
  }

  /** Resolves once `ready()` holds after a batch (or a restart), or after `timeoutMs` regardless. */
  private until(ready: () => boolean, timeoutMs: number): Promise<void> {
    if (this.stopped || ready()) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        ready,
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
    await this.follow();
    // Again once the stored checkpoints are read: rows cached in between may predate events the
    // runner has now jumped past without applying (and so without announcing or dropping them).
    for (const listener of this.resyncListeners) listener();
    this.releaseWaiters();
  }

  /**
   * Position each projection has applied up to (in memory: what this instance has seen); for one
   * being rebuilt beside, where its live (old) rows stopped.
   */
  status(): ProjectionStatus[] {
    return this.projections.map((p) => {
      const failed = this.failed.get(p.name);
      return { name: p.name, position: this.cursors.get(p.name)?.seen ?? this.shadows.get(p.name)?.frozenAt ?? 0, ...(failed ? { failed } : {}) };
    });
  }

  /** Projections being rebuilt beside their live tables (their reads are stale until the switch). */
  rebuilding(): string[] {
    return [...this.shadows.keys()];
  }

  /**
   * True when every live projection has applied everything up to `head` (see waitFor); one stopped
   * by an event does not count (status() names it): the gateway serves from the others.
   */
  caughtUpWith(head: number): boolean {
    return this.liveProjections().every((p) => (this.cursors.get(p.name)?.seen ?? 0) >= head);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiters) w.resolve();
    await this.restarting;
    await this.building;
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
 * Replays one projection from position 0 beside its live tables and switches to the result in
 * one transaction with its last batch (the `projections rebuild` command): readers never see the
 * tables empty. A running server's runner finds its checkpoint moved by the switch and re-applies
 * what came after from the new tables. A build left by an earlier run is started again.
 */
export async function rebuildBeside(
  store: EventStore,
  readModels: ReadModelStore,
  p: Projection,
  onProgress?: (position: number, head: number, applied: number) => void,
  batchSize = 5000,
): Promise<{ events: number; position: number }> {
  const dialect = readModels.dialect;
  const { shadow, tables, indexes } = planShadow(p, dialect);
  await readModels.reset(shadow.name, shadow.tables);
  await readModels.migrate(shadow.ddl[dialect]);
  const head = await store.headPosition();
  let from = 0;
  let count = 0;
  for (;;) {
    const events = await store.readAll({ fromPosition: from + 1, limit: batchSize });
    const to = events.at(-1)?.position ?? from;
    const done = events.length < batchSize;
    const moves = to > from ? [{ name: shadow.name, from, to, statements: statementsFor(shadow, events.filter((e) => handlesEvent(shadow, e.type))), version: p.version }] : [];
    const swaps = done ? [{ name: p.name, shadowCheckpoint: shadow.name, version: p.version, position: to, tables, indexes, ddl: p.ddl[dialect] }] : [];
    // An empty log leaves no shadow checkpoint to switch from: the live tables are as empty.
    if (done && to === 0) {
      await readModels.reset(shadow.name, shadow.tables);
      await readModels.migrate(p.ddl[dialect]);
      return { events: 0, position: 0 };
    }
    try {
      await readModels.applyBatches(moves, swaps);
    } catch (err) {
      // A running server applied the live projection past this build: read on, then switch.
      if (done && err instanceof CheckpointMovedError && err.checkpoint === p.name) continue;
      throw err;
    }
    from = to;
    count += events.length;
    if (events.length > 0) onProgress?.(to, head, count);
    if (done) return { events: count, position: from };
    await new Promise((r) => setImmediate(r)); // whatever shares this process goes on between batches
  }
}
