import type { StoredEvent } from '../eventstore/port';
import { inTraceRuns } from '../shared/tracing';
import type { Bus, BusHandler, Consumer, ConsumerLag } from './port';

/** What this instance knows of a consumer group's progress, for its lag in seconds. */
export interface GroupProgress {
  group: string;
  /** When this instance started the group (ms since the epoch). */
  startedAt: number;
  /** The last event the group handled on this instance (log position, time in ms since the epoch). */
  lastHandled?: { position: number; time: number };
}

export interface InstrumentedBus extends Bus {
  /** Every group started on this instance, with its progress and its lag as the bus counts it. */
  groups(): { progress: GroupProgress; lag: () => Promise<ConsumerLag> }[];
}

/**
 * The bus with every consumer handler seen: the progress each group makes (for /metrics' lag in
 * seconds), and, with tracing on, a span per handled run of one trace's events, continuing the
 * trace their append recorded (shared/tracing.ts inTraceRuns). One seam for every consumer,
 * whichever adapter carries the events.
 */
export function instrumentBus(bus: Bus): InstrumentedBus {
  const started: GroupProgress[] = [];
  const instrumented: InstrumentedBus = {
    kind: bus.kind,
    start: () => bus.start(),
    publishedPosition: () => bus.publishedPosition(),
    close: () => bus.close(),
    lag: (group) => bus.lag(group),
    consumer(group: string): Consumer {
      const inner = bus.consumer(group);
      return {
        group,
        stop: () => inner.stop(),
        start(handler: BusHandler): Promise<void> {
          const progress: GroupProgress = { group, startedAt: Date.now() };
          started.push(progress);
          return inner.start(async (events: StoredEvent[]) => {
            await inTraceRuns(`consumer ${group}`, events, { 'messaging.consumer.group.name': group, 'messaging.system': bus.kind }, handler);
            const last = events[events.length - 1]!;
            const time = Date.parse(last.metadata.time);
            if (!progress.lastHandled || last.position > progress.lastHandled.position) progress.lastHandled = { position: last.position, time: Number.isNaN(time) ? Date.now() : time };
          });
        },
      };
    },
    groups: () => started.map((progress) => ({ progress, lag: () => bus.lag(progress.group) })),
  };
  return instrumented;
}
