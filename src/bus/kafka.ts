import { Kafka, logLevel, type Consumer as KafkaConsumer, type Producer } from 'kafkajs';
import type { EventStore, StoredEvent, Subscription } from '../eventstore/port';
import type { ReadModelStore } from '../readmodel/port';
import type { Bus, BusHandler, Consumer } from './port';

export interface KafkaBusOptions {
  brokers: string[];
  topic: string;
  /** Change-feed entries (FeedEntryRecorded) are also published here, as the entry itself. */
  feedTopic?: string;
  clientId: string;
  partitions?: number;
  /** Run the relay (store → topic). Off for processes that only consume. */
  relay?: boolean;
  onError?: (err: unknown, where: string) => void;
}

/**
 * Kafka behind the Bus port (kafkajs is in maintenance mode; keep it replaceable). A relay reads
 * the event store from its checkpoint and publishes every event to the topic, key = stream id
 * (per-stream order), headers = type, position, event id — and change-feed entries to the feed
 * topic, key = entity id, in the same send; the checkpoint moves only after the
 * broker acknowledged, so a crash republishes rather than loses. Consumer groups read the topic.
 */
export class KafkaBus implements Bus {
  readonly kind = 'kafka';
  private kafka: Kafka;
  private producer?: Producer;
  private relaySub?: Subscription;
  private consumers = new Set<KafkaBusConsumer>();
  private published = 0;

  constructor(
    private store: EventStore,
    private checkpoints: ReadModelStore,
    private options: KafkaBusOptions,
  ) {
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: logLevel.NOTHING,
      retry: { retries: 8, initialRetryTime: 200 },
    });
  }

  async start(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [this.options.topic, ...(this.options.feedTopic ? [this.options.feedTopic] : [])].map((topic) => ({ topic, numPartitions: this.options.partitions ?? 3 })),
      });
    } finally {
      await admin.disconnect();
    }
    if (this.options.relay === false) return;
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await this.producer.connect();
    const name = `kafka-relay:${this.options.topic}`;
    let from = (await this.checkpoints.getCheckpoint(name)).position;
    this.published = from;
    this.relaySub = this.store.subscribe(
      async (events) => {
        const topicMessages = [
          {
            topic: this.options.topic,
            messages: events.map((e) => ({ key: e.streamId, value: JSON.stringify(e), headers: { type: e.type, position: String(e.position), 'event-id': e.id } })),
          },
        ];
        // Feed subscribers get the entries in the feed's own shape, keyed by entity (per-entity order).
        const entries = this.options.feedTopic ? events.filter((e) => e.type === 'FeedEntryRecorded') : [];
        if (entries.length > 0) {
          topicMessages.push({
            topic: this.options.feedTopic!,
            messages: entries.map((e) => {
              const entry = e.data as { event_id: string; event_type: string; entity_id: string };
              return { key: entry.entity_id, value: JSON.stringify(entry), headers: { type: entry.event_type, position: String(e.position), 'event-id': entry.event_id } };
            }),
          });
        }
        await this.producer!.sendBatch({ acks: -1, topicMessages });
        const to = events[events.length - 1]!.position;
        await this.checkpoints.applyBatch(name, from, to, []);
        from = to;
        this.published = to;
      },
      { fromPosition: from + 1, batchSize: 500, onError: (err) => this.options.onError?.(err, 'kafka-relay') },
    );
  }

  consumer(group: string): Consumer {
    const c = new KafkaBusConsumer(group, this.kafka, this.options);
    this.consumers.add(c);
    return c;
  }

  publishedPosition(): number {
    return this.published;
  }

  async close(): Promise<void> {
    await this.relaySub?.stop();
    await Promise.all([...this.consumers].map((c) => c.stop()));
    await this.producer?.disconnect().catch(() => {});
  }
}

/** A message the relay published: a stored event as JSON; anything else is undefined. */
function decodeEvent(value: Buffer | null): StoredEvent | undefined {
  if (!value) return undefined;
  let e: Partial<StoredEvent> | null;
  try {
    e = JSON.parse(value.toString('utf8')) as Partial<StoredEvent> | null;
  } catch {
    return undefined;
  }
  const ok =
    e !== null &&
    typeof e === 'object' &&
    typeof e.id === 'string' &&
    typeof e.streamId === 'string' &&
    typeof e.type === 'string' &&
    Number.isSafeInteger(e.position) &&
    Number.isSafeInteger(e.streamVersion) &&
    e.metadata !== null &&
    typeof e.metadata === 'object' &&
    'data' in e;
  return ok ? (e as StoredEvent) : undefined;
}

class KafkaBusConsumer implements Consumer {
  private consumer?: KafkaConsumer;

  constructor(
    readonly group: string,
    private kafka: Kafka,
    private options: KafkaBusOptions,
  ) {}

  async start(handler: BusHandler): Promise<void> {
    // Groups are named after the topic they read: deployments (or tests) sharing a broker with
    // different topics must never share a group, or the coordinator hands one member partitions
    // of a topic it does not read and those events wait until the group rebalances.
    const consumer = this.kafka.consumer({ groupId: `${this.options.topic}.${this.group}`, retry: { retries: 8 } });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topic: this.options.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        const events: StoredEvent[] = [];
        for (const m of batch.messages) {
          const event = decodeEvent(m.value);
          if (event) events.push(event);
          // Only the relay should write here. Anything else is reported and passed over: retrying
          // it forever would stall every event behind it on this partition.
          else this.options.onError?.(new Error(`skipped a message that is not an event (topic ${batch.topic}, partition ${batch.partition}, offset ${m.offset})`), `kafka-consumer:${this.group}`);
        }
        // A throw here makes kafkajs redeliver from the last committed offset (at-least-once).
        if (events.length > 0) await handler(events);
        resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
        await commitOffsetsIfNecessary({
          topics: [
            {
              topic: batch.topic,
              partitions: [
                {
                  partition: batch.partition,
                  offset: String(Number(batch.messages[batch.messages.length - 1]!.offset) + 1),
                },
              ],
            },
          ],
        });
        await heartbeat();
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => {});
    this.consumer = undefined;
  }
}
