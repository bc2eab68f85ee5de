import type { StoredEvent } from '../eventstore/port';

/** Handles one batch; resolve to acknowledge it. A rejection redelivers the batch (at-least-once). */
export type BusHandler = (events: StoredEvent[]) => Promise<void>;

/**
 * A named consumer group over the global event log. Delivery is at-least-once and ordered per
 * stream; handlers must be idempotent (dedupe by event id or position when it matters).
 */
export interface Consumer {
  readonly group: string;
  start(handler: BusHandler): Promise<void>;
  stop(): Promise<void>;
}

export interface ConsumerLag {
  events: number;
  position?: number;
}

/**
 * Carries appended events to downstream consumers (webhook dispatcher, change feed…).
 * Embedded: consumers read the event store directly. Kafka: a relay publishes the log to a topic
 * and consumers are Kafka consumer groups.
 */
export interface Bus {
  readonly kind: 'embedded' | 'kafka';
  start(): Promise<void>;
  consumer(group: string): Consumer;
  /**
   * How far the group is behind (for /metrics): `events` it has yet to acknowledge, and the log
   * `position` it has acknowledged up to where the bus knows one. Embedded: the log head minus the
   * group's checkpoint, and that checkpoint; Kafka: the messages past the group's committed offsets
   * (offsets are per partition, so no single position).
   */
  lag(group: string): Promise<ConsumerLag>;
  /** Position of the last event the relay has published (embedded: the log head). */
  publishedPosition(): number;
  close(): Promise<void>;
}
