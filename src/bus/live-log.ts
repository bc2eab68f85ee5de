import type { EventStore, StoredEvent, Subscription } from '../eventstore/port';

/** What a follower is handed: events in position order, each once. */
export type LiveHandler = (events: readonly StoredEvent[]) => void;

/** A follower of the live log; stop() detaches it. */
export interface LiveFollow {
  /** Settles once the follower is live: the past it asked for handed over, the store followed. */
  readonly ready: Promise<void>;
  stop(): void;
}

interface Follower {
  deliver: LiveHandler;
  /** Position of the last event handed over. */
  last: number;
  /** Live events that arrived while the follower was still reading the past, handed over after it. */
  queued: StoredEvent[] | undefined;
  stopped: boolean;
}

const CATCH_UP_BATCH = 500;

/**
 * The log as it grows, for the live readers of this instance (GraphQL subscriptions, A2A
 * streams): one subscription to the event store while anyone follows, fanned out in process, so
 * a thousand subscribers cost one read per append, not a thousand. A follower may start from a position it
 * saw before (a client resuming after a reconnect): the events since are read from the store
 * first, then it follows live, with nothing missed or repeated in between.
 *
 * It follows the event store rather than a Kafka topic: the store is what every instance can
 * read by position, which is what resuming needs; with PostgreSQL every instance sees every
 * append (ordered as the store orders them), whichever instance wrote it.
 */
export class LiveLog {
  private readonly followers = new Set<Follower>();
  private readonly origins = new Map<string, StreamOrigin>();
  private sub?: Subscription;
  private starting?: Promise<void>;
  private idleTimer?: NodeJS.Timeout;
  private head = 0;

  constructor(
    private readonly store: EventStore,
    private readonly onError: (err: unknown) => void,
    /** How long the store subscription outlives its last follower (a reconnect rarely waits longer). */
    private readonly idleMs = 30_000,
  ) {}

  async stop(): Promise<void> {
    for (const f of this.followers) f.stopped = true;
    this.followers.clear();
    clearTimeout(this.idleTimer);
    await this.starting;
    await this.sub?.stop();
    this.sub = undefined;
  }

  /**
   * Reads the store only while someone follows (and a little after): with no subscriber, the log
   * costs the command path nothing.
   */
  private running(): Promise<void> {
    clearTimeout(this.idleTimer);
    if (this.sub) return Promise.resolve();
    this.starting ??= (async () => {
      this.head = await this.store.headPosition();
      this.sub = this.store.subscribe((events) => this.publish(events), { fromPosition: this.head + 1, onError: this.onError });
    })().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private idleWhenAlone(): void {
    if (this.followers.size > 0 || !this.sub) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.followers.size > 0) return;
      const sub = this.sub;
      this.sub = undefined;
      void sub?.stop().catch(this.onError);
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /**
   * Hands `deliver` every event after `after` (default: from now on), in order. Reading the past
   * and going live overlap by design: live events that arrive meanwhile are queued and handed
   * over after the past, each once (by position).
   */
  follow(after: number | undefined, deliver: LiveHandler, onError: (err: unknown) => void): LiveFollow {
    const live = this.sub !== undefined && after === undefined;
    const follower: Follower = { deliver, last: after ?? this.head, queued: live ? undefined : [], stopped: false };
    this.followers.add(follower);
    const ready = live
      ? Promise.resolve()
      : this.running()
          .then(() => {
            if (after === undefined) follower.last = this.head; // from the moment the store subscription began
            return this.catchUp(follower);
          })
          .catch((err: unknown) => {
            this.followers.delete(follower);
            follower.stopped = true;
            onError(err);
          });
    return {
      ready,
      stop: () => {
        follower.stopped = true;
        this.followers.delete(follower);
        this.idleWhenAlone();
      },
    };
  }

  private async catchUp(follower: Follower): Promise<void> {
    for (;;) {
      const past = await this.store.readAll({ fromPosition: follower.last + 1, limit: CATCH_UP_BATCH });
      if (follower.stopped) return;
      hand(follower, past);
      if (past.length < CATCH_UP_BATCH) break;
    }
    const queued = follower.queued!;
    follower.queued = undefined;
    hand(follower, queued);
  }

  private publish(events: StoredEvent[]): void {
    if (events.length === 0) return;
    this.head = events[events.length - 1]!.position;
    for (const follower of this.followers) {
      if (follower.queued) follower.queued.push(...events);
      else hand(follower, events);
    }
  }

  /**
   * The org an event belongs to: its own `owner`, else its stream's (the owner its first event
   * names: a buy's approval belongs to whoever created the buy). Undefined: nobody's (a registry
   * or system event).
   */
  async ownerOf(event: StoredEvent): Promise<string | undefined> {
    const owner = (event.data as { owner?: unknown }).owner;
    if (typeof owner === 'string') return owner;
    return (await this.streamOrigin(event.streamId)).owner;
  }

  /**
   * What a stream's first event says of the stream (its owner; a task's type and subject; a
   * webhook's notification), which later events do not repeat. A first event never changes, so
   * these are kept, for a bounded number of streams, and only these few fields of it.
   */
  async streamOrigin(streamId: string): Promise<StreamOrigin> {
    const known = this.origins.get(streamId);
    if (known) return known;
    const [first] = await this.store.readStream(streamId, { limit: 1 });
    const data = (first?.data ?? {}) as Record<string, unknown>;
    const origin: StreamOrigin = {};
    for (const field of ORIGIN_FIELDS) if (typeof data[field] === 'string') origin[field] = data[field] as string;
    if (this.origins.size >= 10_000) this.origins.clear();
    this.origins.set(streamId, origin);
    return origin;
  }
}

const ORIGIN_FIELDS = ['owner', 'task_type', 'resource_id', 'notification_type', 'task_id', 'media_buy_id'] as const;

/** The fields of a stream's first event that later events are read with. */
export type StreamOrigin = Partial<Record<(typeof ORIGIN_FIELDS)[number], string>>;

/** Hands the follower what it has not had yet. */
function hand(follower: Follower, events: readonly StoredEvent[]): void {
  if (follower.stopped || events.length === 0) return;
  const fresh = events[0]!.position > follower.last ? events : events.filter((e) => e.position > follower.last);
  if (fresh.length === 0) return;
  follower.last = fresh[fresh.length - 1]!.position;
  follower.deliver(fresh);
}
