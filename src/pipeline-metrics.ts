import { Gauge, type Registry } from 'prom-client';
import { webhookQueries } from '../projections/webhooks';
import type { InstrumentedBus } from './bus/instrumented';
import type { EventStore } from './eventstore/port';
import type { ProjectionRunner } from './projections/runner';
import type { ReadModelStore } from './readmodel/port';

/**
 * The gauges an operator alerts on that are read when /metrics is scraped (nothing is polled in
 * between; a scrape is reused for a second): how far each projection and consumer group is behind the log, in events and in seconds,
 * and the webhook queue. The counters (appends, webhook attempts) and the event-loop figures live
 * with the rest in app.ts's createMetrics. Names: docs/operations.md#metrics; the dashboard in
 * deploy/grafana-dashboard.json charts exactly these.
 *
 * Seconds behind = the age of the oldest event not yet handled, read from the log where the
 * position is known (projections, embedded consumers); a Kafka group's offsets name no position,
 * so there it is the age of the last event the group handled on this instance. 0 when caught up.
 */
export function registerPipelineMetrics(registry: Registry, sources: { store: EventStore; readModels: ReadModelStore; projections: ProjectionRunner; bus: InstrumentedBus }): void {
  const { store, projections, bus } = sources;
  /** Milliseconds since the event after `position` was decided (memoized per scrape). */
  const ageAfter = (memo: Map<number, Promise<number>>, position: number, now: number): Promise<number> => {
    let age = memo.get(position);
    if (!age) {
      age = store.readAll({ fromPosition: position + 1, limit: 1 }).then(([next]) => (next ? Math.max(0, now - Date.parse(next.metadata.time)) || 0 : 0));
      memo.set(position, age);
    }
    return age;
  };

  new Gauge({
    name: 'adcp_projection_lag_seconds',
    help: 'Age of the oldest event each projection has not applied yet (0 when caught up)',
    labelNames: ['projection'],
    registers: [registry],
    async collect() {
      const head = await store.headPosition();
      const now = Date.now();
      const memo = new Map<number, Promise<number>>();
      this.reset();
      for (const p of projections.status()) this.set({ projection: p.name }, p.position >= head ? 0 : (await ageAfter(memo, p.position, now)) / 1000);
    },
  });

  // A group whose lag cannot be read now (the broker is away) is left out of this scrape: an absent
  // series is what an alert on it sees, and /metrics still answers.
  const lags = async () => (await Promise.all(bus.groups().map(async (g) => ({ ...g.progress, lag: await g.lag().catch(() => undefined) })))).flatMap((g) => (g.lag ? [{ ...g, lag: g.lag }] : []));
  let inFlight: ReturnType<typeof lags> | undefined;
  /**
   * Both consumer gauges of one scrape from one look (the Kafka admin round trip is not free):
   * prom-client collects every metric of a scrape at once, in the same turn of the loop, so the
   * second gauge joins the look the first began. Once it is answered the next scrape looks again
   * (the route reuses a whole scrape for a second, so a flood of them looks once: http/server.ts).
   */
  const currentLags = () => {
    if (!inFlight) {
      const look = lags();
      inFlight = look;
      const clear = () => {
        if (inFlight === look) inFlight = undefined;
      };
      // Cleared a turn after it settles, so both gauges of one scrape read the same look.
      look.then(() => setImmediate(clear), () => setImmediate(clear));
    }
    return inFlight;
  };
  new Gauge({
    name: 'adcp_consumer_lag_events',
    help: 'Events each consumer group has yet to acknowledge (embedded: log head minus its checkpoint; Kafka: messages past its committed offsets)',
    labelNames: ['consumer'],
    registers: [registry],
    async collect() {
      const groups = await currentLags();
      this.reset();
      for (const g of groups) this.set({ consumer: g.group }, g.lag.events);
    },
  });
  new Gauge({
    name: 'adcp_consumer_lag_seconds',
    help: 'How long each consumer group is behind: the age of its oldest unhandled event (Kafka: of the last event it handled here); 0 when caught up',
    labelNames: ['consumer'],
    registers: [registry],
    async collect() {
      const groups = await currentLags();
      const now = Date.now();
      const memo = new Map<number, Promise<number>>();
      this.reset();
      for (const g of groups) {
        let ms = 0;
        if (g.lag.events > 0) ms = g.lag.position !== undefined ? await ageAfter(memo, g.lag.position, now) : now - (g.lastHandled?.time ?? g.startedAt);
        this.set({ consumer: g.group }, Math.max(0, ms) / 1000);
      }
    },
  });

  new Gauge({
    name: 'adcp_webhook_queue_depth',
    help: 'Webhook attempts waiting in the delivery queue: all pending ones, and those already due',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const depth = await webhookQueries.queueDepth(sources.readModels, new Date().toISOString());
      this.set({ state: 'pending' }, depth.pending);
      this.set({ state: 'due' }, depth.due);
    },
  });
}
