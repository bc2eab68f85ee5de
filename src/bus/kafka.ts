import { Kafka, logLevel, type Admin, type Consumer as KafkaConsumer, type IHeaders, type Message, type Producer, type TopicMessages } from 'kafkajs';
import type { EventStore, StoredEvent, Subscription } from '../eventstore/port';
import { publicTopic, toCloudEventMessage } from '../public-events/cloudevents';
import { storeAttribution, toPublicEvent, type Attribution } from '../public-events/mapping';
import type { TenantKeyer } from '../public-events/tenants';
import { PUBLIC_DOMAINS } from '../public-events/types';
import { LeaseKeeper, Leases } from '../readmodel/leases';
import { moveSharedCheckpoint, type ReadModelStore } from '../readmodel/port';
import { sideEffectCheckpoint } from '../readmodel/side-effects-watermark';
import type { Bus, BusHandler, Consumer, ConsumerLag } from './port';

/** Consumer fetches: how much a fetch waits to gather, in bytes and at most in time (see KafkaConsumer.start). */
const FETCH_MIN_BYTES = 64 * 1024;
const FETCH_MAX_WAIT_MS = 100;

export interface KafkaBusOptions {
  brokers: string[];
  topic: string;
  /** Change-feed entries (FeedEntryRecorded) are also published here, as the entry itself. */
  feedTopic?: string;
  /**
   * The subscriber's interface: public events (src/public-events) as CloudEvents on
   * `<prefix><domain>` topics, in the same send as the raw log. Unset: the raw log only.
   */
  publicTopicPrefix?: string;
  /** The operator's tenant keys (public-events/tenants.ts): required with `publicTopicPrefix`. */
  publicTenantKey?: TenantKeyer;
  clientId: string;
  partitions?: number;
  /** Run the relay (store → topic). Off for processes that only consume. */
  relay?: boolean;
  /** How long the relay's lease lasts unrenewed: how soon another instance takes over from a dead one. */
  relayLeaseMs?: number;
  onError?: (err: unknown, where: string) => void;
}

/** Log events per relay send (one sendBatch each): the bench's floor row sends in the same steps. */
export const RELAY_BATCH_SIZE = 500;

/**
 * Kafka behind the Bus port (kafkajs is in maintenance mode; keep it replaceable). A relay reads
 * the event store from its checkpoint and publishes every event to the topic, key = stream id
 * (per-stream order), headers = type, position, event id — and change-feed entries to the feed
 * topic, key = entity id, in the same send; the checkpoint moves only after the
 * broker acknowledged, so a crash republishes rather than loses. Consumer groups read the topic.
 *
 * Instances sharing a database and a topic run one relay between them: the holder of the topic's
 * lease (readmodel/leases.ts), taken over by another instance within `relayLeaseMs` of the
 * holder's death. Each event is then published once, except around a hand-over (what the old
 * holder sent after its last checkpoint is sent again), and consumers dedupe those.
 */
export class KafkaBus implements Bus {
  readonly kind = 'kafka';
  private kafka: Kafka;
  private producer?: Producer;
  private relaySub?: Subscription;
  private relayLease?: LeaseKeeper;
  private consumers = new Set<KafkaBusConsumer>();
  private published = 0;
  /** For /metrics' consumer lag, connected at the first look. */
  private admin?: Promise<Admin>;

  constructor(
    private store: EventStore,
    private checkpoints: ReadModelStore,
    private options: KafkaBusOptions,
  ) {
    if (options.publicTopicPrefix !== undefined && !options.publicTenantKey) throw new Error('KafkaBus: publicTopicPrefix needs publicTenantKey (every public event says whose it is)');
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
        topics: [this.options.topic, ...(this.options.feedTopic ? [this.options.feedTopic] : []), ...this.publicTopics()].map((topic) => ({
          topic,
          numPartitions: this.options.partitions ?? 3,
        })),
      });
    } finally {
      await admin.disconnect();
    }
    if (this.options.relay === false) return;
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await this.producer.connect();
    // One relay per topic across every instance sharing the database: the lease holder's.
    this.relayLease = new LeaseKeeper(await Leases.open(this.checkpoints), this.checkpointName, { start: () => this.startRelay(), stop: () => this.stopRelay() }, {
      ttlMs: this.options.relayLeaseMs ?? 3000,
      onError: (err) => this.options.onError?.(err, 'kafka-relay-lease'),
    });
    await this.relayLease.start();
  }

  private publicTopics(): string[] {
    const prefix = this.options.publicTopicPrefix;
    return prefix === undefined ? [] : PUBLIC_DOMAINS.map((d) => publicTopic(prefix, d));
  }

  private get checkpointName(): string {
    return `kafka-relay:${this.options.topic}`;
  }

  /** Publishes the log from the shared checkpoint on: run only while this instance holds the lease. */
  private async startRelay(): Promise<void> {
    const name = this.checkpointName;
    // Not before a moved log's side-effects mark: the source published those events to its own
    // cluster, so this cluster's topics start at the move.
    let from = await sideEffectCheckpoint(this.checkpoints, name);
    const attribution = this.options.publicTenantKey ? storeAttribution(this.store, this.options.publicTenantKey) : undefined;
    this.published = Math.max(this.published, from);
    this.relaySub = this.store.subscribe(
      async (batch) => {
        // Past what the checkpoint says was published (it may have moved on under a lease overlap).
        const events = batch.filter((e) => e.position > from);
        if (events.length === 0) return;
        // An event whose data its public mapping cannot read goes on the raw topic only, reported.
        const topicMessages = await relayMessages(events, { ...this.options, attribution }, (reason) => this.options.onError?.(new Error(reason), 'kafka-relay'));
        await this.producer!.sendBatch({ acks: -1, topicMessages });
        const to = events[events.length - 1]!.position;
        // Another relay (the lease's previous or next holder) may have moved it meanwhile.
        from = await moveSharedCheckpoint(this.checkpoints, name, from, to);
        this.published = Math.max(this.published, from);
      },
      { fromPosition: from + 1, batchSize: RELAY_BATCH_SIZE, onError: (err) => this.options.onError?.(err, 'kafka-relay') },
    );
  }

  private async stopRelay(): Promise<void> {
    const sub = this.relaySub;
    this.relaySub = undefined;
    await sub?.stop();
  }

  consumer(group: string): Consumer {
    const c = new KafkaBusConsumer(group, this.kafka, this.options);
    this.consumers.add(c);
    return c;
  }

  publishedPosition(): number {
    return this.published;
  }

  async lag(group: string): Promise<ConsumerLag> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((err: unknown) => {
      this.admin = undefined; // the next look connects again
      throw err;
    });
    const admin = await this.admin;
    const topic = this.options.topic;
    const [ends, committed] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId: `${topic}.${group}`, topics: [topic] })]);
    const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    // A partition the group never committed on is pending from its first message.
    return { events: ends.reduce((sum, p) => sum + Math.max(0, Number(p.high) - Math.max(at.get(p.partition) ?? -1, Number(p.low))), 0) };
  }

  async close(): Promise<void> {
    await (await this.admin?.catch(() => undefined))?.disconnect().catch(() => {});
    await this.relayLease?.close();
    await Promise.all([...this.consumers].map((c) => c.stop()));
    await this.producer?.disconnect().catch(() => {});
  }
}

/**
 * Where the relay publishes: the raw log's topic, and optionally the feed's and the public events'
 * prefix, with the attribution that says whose each public event is.
 */
export type RelayTopics = Pick<KafkaBusOptions, 'topic' | 'feedTopic' | 'publicTopicPrefix'> & { attribution?: Attribution };

/**
 * Everything the relay sends for one batch of the log, for one `sendBatch`: the raw log, the feed
 * entries, the public events. Exported for the bench's floor row, which sends these same records
 * with kafkajs alone.
 */
export async function relayMessages(events: readonly StoredEvent[], topics: RelayTopics, unmappable: (reason: string) => void = () => {}): Promise<TopicMessages[]> {
  const topicMessages: TopicMessages[] = [
    {
      topic: topics.topic,
      // traceparent (kept in the event's metadata by the append) as a header too, where Kafka tooling looks for it.
      messages: events.map((e) => ({ key: e.streamId, value: JSON.stringify(e), headers: { type: e.type, position: String(e.position), 'event-id': e.id, ...traceHeadersOf(e) } })),
    },
  ];
  // Feed subscribers get the entries in the feed's own shape, keyed by entity (per-entity order).
  const entries = topics.feedTopic ? events.filter((e) => e.type === 'FeedEntryRecorded' && isFeedEntry(e, unmappable)) : [];
  if (entries.length > 0) {
    topicMessages.push({
      topic: topics.feedTopic!,
      messages: entries.map((e) => {
        const entry = e.data as { event_id: string; event_type: string; entity_id: string };
        return { key: entry.entity_id, value: JSON.stringify(entry), headers: { type: entry.event_type, position: String(e.position), 'event-id': entry.event_id } };
      }),
    });
  }
  if (topics.publicTopicPrefix !== undefined) {
    // Never unattributed: every public event says whose it is.
    if (!topics.attribution) throw new Error('the public topics need the tenant keys (publicTenantKey)');
    topicMessages.push(...(await publicMessages(events, topics.publicTopicPrefix, topics.attribution, unmappable)));
  }
  return topicMessages;
}

/** A feed entry's data has the fields its message is keyed and labelled by; otherwise reported and left off the feed topic. */
function isFeedEntry(e: StoredEvent, unmappable: (reason: string) => void): boolean {
  const d = e.data as Record<string, unknown> | null;
  if (typeof d === 'object' && d !== null && typeof d.entity_id === 'string' && typeof d.event_type === 'string' && typeof d.event_id === 'string') return true;
  unmappable(`position ${e.position}: FeedEntryRecorded without entity_id, event_type and event_id; left off the feed topic`);
  return false;
}

/** The batch's public events, grouped by topic (the log order kept within each). */
async function publicMessages(events: readonly StoredEvent[], prefix: string, attribution: Attribution, unmappable: (reason: string) => void): Promise<TopicMessages[]> {
  const byTopic = new Map<string, Message[]>();
  for (const e of events) {
    const pub = await toPublicEvent(e, attribution, unmappable);
    if (!pub) continue;
    const { topic, key, value, headers } = toCloudEventMessage(pub, prefix);
    let messages = byTopic.get(topic);
    if (!messages) byTopic.set(topic, (messages = []));
    // kafkajs only reads a message's headers: the message's own object goes, not a copy.
    messages.push({ key, value, headers: headers as IHeaders });
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

/** The W3C trace context an event's metadata carries, as message headers. */
function traceHeadersOf(e: StoredEvent): Record<string, string> {
  const { traceparent, tracestate } = e.metadata;
  return typeof traceparent === 'string' ? { traceparent, ...(typeof tracestate === 'string' ? { tracestate } : {}) } : {};
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
    // A fetch answers once it has FETCH_MIN_BYTES or after FETCH_MAX_WAIT_MS: under load each of
    // the instance's consumer groups then takes its events in a few larger batches instead of a
    // fetch, an offset commit and a heartbeat per handful of events (the kafkajs requests were a
    // quarter of the main thread's time at 300 creates/s). Side effects wait that much longer at most.
    // At 20 ms an idle gateway spent 14 % of a core on its groups' empty fetches (3 instances on
    // two cores, 42 %); at 100 ms, 8 % (and 4 % at 500 ms: Kafka's own default, too slow a webhook).
    const consumer = this.kafka.consumer({ groupId: `${this.options.topic}.${this.group}`, retry: { retries: 8 }, minBytes: FETCH_MIN_BYTES, maxWaitTimeInMs: FETCH_MAX_WAIT_MS });
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
