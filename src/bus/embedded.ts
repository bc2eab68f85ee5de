import type { EventStore, Subscription } from '../eventstore/port';
import { moveSharedCheckpoint, type ReadModelStore } from '../readmodel/port';
import { sideEffectCheckpoint } from '../readmodel/side-effects-watermark';
import type { Bus, BusHandler, Consumer, ConsumerLag } from './port';

/** A checkpointed catch-up reader over the event store per consumer group. */
export class EmbeddedBus implements Bus {
  readonly kind = 'embedded';
  private consumers = new Set<EmbeddedConsumer>();

  constructor(
    private store: EventStore,
    private checkpoints: ReadModelStore,
    private onError?: (err: unknown, group: string) => void,
  ) {}

  async start(): Promise<void> {}

  consumer(group: string): Consumer {
    const c = new EmbeddedConsumer(group, this.store, this.checkpoints, this.onError);
    this.consumers.add(c);
    return c;
  }

  async lag(group: string): Promise<ConsumerLag> {
    const [head, checkpoint] = await Promise.all([this.store.headPosition(), this.checkpoints.getCheckpoint(`bus:${group}`)]);
    return { events: Math.max(0, head - checkpoint.position), position: checkpoint.position };
  }

  publishedPosition(): number {
    return Number.MAX_SAFE_INTEGER;
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.stop()));
  }
}

class EmbeddedConsumer implements Consumer {
  private sub?: Subscription;

  constructor(
    readonly group: string,
    private store: EventStore,
    private checkpoints: ReadModelStore,
    private onError?: (err: unknown, group: string) => void,
  ) {}

  async start(handler: BusHandler): Promise<void> {
    const name = `bus:${this.group}`;
    // Not before a moved log's side-effects mark: the source made those effects already.
    let from = await sideEffectCheckpoint(this.checkpoints, name);
    this.sub = this.store.subscribe(
      async (events) => {
        const fresh = events.filter((e) => e.position > from);
        if (fresh.length === 0) return;
        await handler(fresh);
        const to = events[events.length - 1]!.position;
        // Checkpoint after the handler: a crash in between redelivers the batch (at-least-once).
        // Another consumer of the same group may have moved it meanwhile.
        from = await moveSharedCheckpoint(this.checkpoints, name, from, to);
      },
      { fromPosition: from + 1, onError: (err) => this.onError?.(err, this.group) },
    );
  }

  async stop(): Promise<void> {
    await this.sub?.stop();
    this.sub = undefined;
  }
}
