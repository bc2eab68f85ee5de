import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { allProjections } from '../projections';
import { EmbeddedBus } from './bus/embedded';
import { KafkaBus } from './bus/kafka';
import { loadTenantSecret, tenantKeyer } from './public-events/tenants';
import { instrumentBus } from './bus/instrumented';
import { LiveLog } from './bus/live-log';
import { GatewayClock } from './adserver/clock';
import { DeliverySimulator } from './adserver/simulator';
import { DEMO_CATALOG, publishCatalog } from './application/catalog';
import { importComplianceBundles, sdkComplianceDirs } from './application/storyboards';
import { BrandCrawler } from './application/brands';
import { openRateLimiter } from './limits/rate-limit';
import type { Config } from './config';
import { MemoryEventStore } from './eventstore/memory';
import type { EventStore, WatermarkedStore } from './eventstore/port';
import { withAppendWatermark } from './eventstore/watermark';
import { withUpcasting } from './eventstore/upcasting';
import { instrumentAppends } from './eventstore/instrumented';
import { registerPipelineMetrics } from './pipeline-metrics';
import { PostgresEventStore } from './eventstore/postgres';
import { SqliteEventStore } from './eventstore/sqlite';
import type { Projection } from './projections/projection';
import { ProjectionRunner } from './projections/runner';
import { MediaBuyCache } from './caches/media-buy-cache';
import { QueryCache } from './caches/query-cache';
import type { ReadModelStore } from './readmodel/port';
import { PostgresReadModelStore } from './readmodel/postgres';
import { SqliteReadModelStore } from './readmodel/sqlite';
import { OAuthService } from './oauth/service';
import { SigningKeystore } from './signing/keystore';
import { AttemptClaims } from './webhooks/attempt-claims';
import { Leases } from './readmodel/leases';
import { WebhookDeliveryWorker } from './webhooks/delivery-worker';
import { WebhookPoster } from './webhooks/http-poster';
import { WebhookReceiver } from './webhooks/receiver/receiver';
import * as dispatcher from '../consumers/webhook-dispatcher';
import * as reporter from '../consumers/delivery-reporter';
import * as impairmentMonitor from '../consumers/impairment-monitor';
import * as governanceMonitor from '../consumers/governance-monitor';
import * as changeFeed from '../consumers/change-feed';
import * as sandboxApprover from '../consumers/sandbox-approver';
import { approveTask } from './application/approvals';
import type { BindingPorts, RevalidationPorts } from './application/ports';
import type { App, BoundedSize, Metrics } from './services';
import { AppError } from './shared/errors';
import { SharedBudgets } from './limits/shared-budgets';
import { RequestSigning } from './http/request-signing';
import { DatabaseReplayStore } from './webhooks/receiver/replay-store';
import { AuthFailureThrottle } from './limits/client-budgets';
import { STALL_THRESHOLD_MS } from './http/loop-stalls';
import { untilProjected } from './application/projected';

/**
 * The event store as every reader and writer of events uses it: the configured adapter with event
 * versions (appends record them, reads upcast old shapes to the current one).
 */
export async function openEventStore(config: Config): Promise<EventStore> {
  return withUpcasting(await openStoreAdapter(config));
}

/**
 * The configured adapter as it is, events stored as written: for moving the log byte for byte
 * (`log copy`, export, import), where versions travel in the metadata and nothing is reshaped.
 */
export async function openStoreAdapter(config: Config): Promise<EventStore> {
  switch (config.eventStore.kind) {
    case 'sqlite':
      return new SqliteEventStore({ file: config.eventStore.sqliteFile!, synchronous: config.sqliteSynchronous });
    case 'postgres':
      return PostgresEventStore.connect({ connectionString: config.eventStore.url });
    case 'memory':
      return new MemoryEventStore();
    case 'kurrentdb': {
      const { KurrentEventStore } = await import('./eventstore/kurrentdb');
      return KurrentEventStore.connect(config.eventStore.url);
    }
  }
}

export async function openReadModels(config: Config): Promise<ReadModelStore> {
  return config.readModel.kind === 'sqlite'
    ? new SqliteReadModelStore(config.readModel.sqliteFile!, config.sqliteSynchronous)
    : PostgresReadModelStore.connect(config.readModel.url);
}

function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const bounded = new Map<string, () => BoundedSize>();
  new Gauge({
    name: 'adcp_bounded_entries',
    help: 'Entries held by each bounded cache and buffer of this process',
    labelNames: ['structure'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [structure, measure] of bounded) this.set({ structure }, measure().entries);
    },
  });
  new Gauge({
    name: 'adcp_bounded_bytes',
    help: 'Estimated bytes held by each bounded cache and buffer that is bounded by its bytes',
    labelNames: ['structure'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [structure, measure] of bounded) {
        const { bytes } = measure();
        if (bytes !== undefined) this.set({ structure }, bytes);
      }
    },
  });
  return {
    bounded: (structure, measure) => void bounded.set(structure, measure),
    registry,
    httpRequests: new Counter({
      name: 'adcp_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'adcp_http_request_duration_seconds',
      help: 'HTTP request duration',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
    projectionLag: new Gauge({
      name: 'adcp_projection_lag_events',
      help: 'Log head minus the position each projection has applied',
      labelNames: ['projection'],
      registers: [registry],
    }),
    appends: new Counter({
      name: 'adcp_appends_total',
      help: 'Appends to the event store by outcome (ok, conflict: the stream moved and the command is re-decided or refused, failed)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    appendedEvents: new Counter({ name: 'adcp_appended_events_total', help: 'Events written by successful appends', registers: [registry] }),
    webhookAttempts: new Counter({
      name: 'adcp_webhook_attempts_total',
      help: 'Webhook POSTs made by this instance, by outcome (success, failed, timeout, connection_error)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    loopStalls: new Histogram({
      name: 'adcp_event_loop_stall_seconds',
      help: `Times the event loop was blocked for more than ${STALL_THRESHOLD_MS} ms, by how long (see also nodejs_eventloop_lag_*)`,
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}

/**
 * The gateway as the composition root holds it: the App its bindings are handed, and the adapters
 * behind the ports, which only the composition (src/main.ts, src/cli.ts, stopApp, the tests that
 * start a gateway) reaches for.
 */
export interface ComposedApp extends App {
  store: WatermarkedStore;
  readModels: ReadModelStore;
  /** API keys and catalog rows, cached per instance (see QueryCache). */
  cache: QueryCache;
  /** Media buys by id for get_media_buys, cached per instance until an event changes them. */
  mediaBuyCache: MediaBuyCache;
  /** The log as it grows, for this instance's live readers (GraphQL subscriptions, A2A streams). */
  live: LiveLog;
  projections: ProjectionRunner;
}

/** Events that change rows QueryCache holds. */
const CACHED_EVENT_TYPES = new Set(['ApiKeyIssued', 'ApiKeyRevoked', 'CatalogPublished', 'OAuthTokenFamilyRevoked']);

/** Opens the stores and the bus, starts projections. The caller owns `stopApp`. */
export async function startApp(
  config: Config,
  log: Logger,
  options: { projections?: readonly Projection[]; clock?: () => Date } = {},
): Promise<ComposedApp> {
  // Checked before anything opens: a bad file stops the gateway with its reason, leaving nothing running.
  const signers = config.requestSignersFile ? RequestSigning.read(config.requestSignersFile) : undefined;
  const publicTenantKey = tenantKeyer(loadTenantSecret(config.publicEventsTenantSecretFile));
  const signingKeys = new SigningKeystore(
    { file: config.webhookSigning.keysFile, inline: config.webhookSigning.inlineKeys },
    config.webhookSigning.purpose,
  );
  const metrics = createMetrics();
  const opened = await openStoreAdapter(config);
  if (opened instanceof SqliteEventStore) metrics.bounded('event_store_recent_events', () => opened.recentHeld());
  const store = withAppendWatermark(
    instrumentAppends(withUpcasting(opened), (outcome, events) => {
      metrics.appends.inc({ outcome });
      if (events > 0) metrics.appendedEvents.inc(events);
    }),
  );
  const readModels = await openReadModels(config);
  const bus = instrumentBus(config.kafka
    ? new KafkaBus(store, readModels, {
        ...config.kafka,
        publicTenantKey,
        onError: (err, where) => log.error({ err, where }, 'kafka bus error (relay errors are retried; foreign messages skipped)'),
      })
    : new EmbeddedBus(store, readModels, (err, group) => log.error({ err, group }, 'consumer failed; retrying')));
  await publishCatalog(store, config.catalogFile ?? DEMO_CATALOG, { now: new Date().toISOString(), principal: 'system' });
  await importComplianceBundles(store, [...sdkComplianceDirs(), ...config.complianceDirs], log);
  // Instances sharing the read models take turns applying: one applier, the others follow.
  const projections = new ProjectionRunner(store, readModels, options.projections ?? allProjections, log, undefined, { leases: await Leases.open(readModels), ttlMs: 3000 });
  const cache = new QueryCache();
  const mediaBuyCache = new MediaBuyCache();
  metrics.bounded('query_cache', () => ({ entries: cache.size }));
  metrics.bounded('media_buy_cache', () => ({ entries: mediaBuyCache.size }));
  // Rows this instance writes drop their cached copies at once; rows another instance (or a
  // rebuild) writes, when the runner notices the read models moved under it.
  projections.onWritten((events) => {
    if (events.some((e) => CACHED_EVENT_TYPES.has(e.type))) cache.invalidate();
    mediaBuyCache.written(events);
  });
  projections.onResync(() => {
    cache.invalidate();
    mediaBuyCache.clear();
  });
  await projections.start();
  // Inline projections commit with the append when the events and the read models share one
  // PostgreSQL database (Projection.consistency); elsewhere the runner applies them after commit.
  if (opened instanceof PostgresEventStore && config.readModel.kind === 'postgres' && config.readModel.url === config.eventStore.url) opened.writeInline(projections.inlineWrites());
  await bus.start();
  await bus.consumer(dispatcher.group).start(dispatcher.webhookDispatcher(store));
  await bus.consumer(reporter.group).start(reporter.deliveryReporter({ store, readModels, projections }));
  await bus.consumer(impairmentMonitor.group).start(impairmentMonitor.impairmentMonitor({ store, readModels, projections }));
  await bus.consumer(changeFeed.group).start(changeFeed.changeFeed(store));
  const webhooks = new WebhookDeliveryWorker({
    store,
    readModels,
    projections,
    keys: signingKeys,
    poster: new WebhookPoster({ allowPrivate: config.allowPrivateWebhookUrls, onOutcome: (o) => metrics.webhookAttempts.inc({ outcome: o.status }) }),
    // An attempt is the POST (10 s at most) and its append: a claim outlasts it comfortably.
    claims: await AttemptClaims.open(readModels, 30_000),
    log,
  });
  await webhooks.start();
  registerPipelineMetrics(metrics.registry, { store, readModels, projections, bus });
  const receiver = await WebhookReceiver.open(store, readModels, { overrides: config.originOverrides, noncesPerKey: config.webhookNoncesPerKey, maxPerScopePerDay: config.webhookAcceptedPerDay });
  metrics.bounded('webhook_cpu_lane', () => ({ entries: receiver.laneWaiting }));
  const brandCrawler = new BrandCrawler(store, config.originOverrides, log);
  metrics.bounded('brand_crawl_queue', () => ({ entries: brandCrawler.waiting }));
  const rateLimiter = await openRateLimiter(readModels, config.redis, (err) => log.warn({ err }, 'redis error (rate limits)'));
  const budgets = config.limits && new SharedBudgets(rateLimiter, { syncMs: 100, onError: (err) => log.warn({ err }, 'rate-limit store unreachable: limits counted per instance meanwhile') });
  const authFailures = config.limits && budgets ? new AuthFailureThrottle(budgets, config.limits.authFailuresPerMinute) : undefined;
  const oauth = new OAuthService({ config, store, readModels, cache, log, settled: () => untilProjected({ store, projections }), ...(authFailures ? { authFailures } : {}) });
  const gatewayClock = new GatewayClock(store);
  await gatewayClock.load();
  const clock = options.clock ?? gatewayClock.now;
  const adServer = new DeliverySimulator(store, readModels, clock, log);
  await adServer.start();
  // The nonces of signed requests live beside the receiver's, in the shared database: every instance refuses a replay.
  const requestSigning = signers ? new RequestSigning(signers, await DatabaseReplayStore.open(readModels)) : undefined;
  const live = new LiveLog(store, (err) => log.warn({ err }, 'live log: reading the event store failed (retried)'));
  if (budgets) metrics.bounded('rate_limit_budgets', () => ({ entries: budgets.size }));
  const ports: BindingPorts = {
    store,
    readModels,
    projections,
    clock,
    cache,
    mediaBuyCache,
    settings: { publicUrl: config.publicUrl, approvalPolicy: config.approvalPolicy, allowPrivateWebhookUrls: config.allowPrivateWebhookUrls, originOverrides: config.originOverrides },
    signer: signingKeys,
    log,
    live,
    publicTenantKey,
    projectionHealth: projections,
  };
  const revalidation: RevalidationPorts = { store, projections, settings: ports.settings, counters: rateLimiter };
  const app: ComposedApp = { config, ports, revalidation, store, readModels, cache, mediaBuyCache, bus, live, projections, metrics, log, clock, gatewayClock, adServer, signingKeys, oauth, webhooks, receiver, brandCrawler, rateLimiter, ...(budgets ? { budgets } : {}), ...(authFailures ? { authFailures } : {}), ...(requestSigning ? { requestSigning } : {}) };
  // Delivery of governed buys, reported to the buyers' governance agents (it asks them as this seller).
  await bus.consumer(governanceMonitor.group).start(governanceMonitor.governanceMonitor(ports));
  await bus.consumer(sandboxApprover.group).start(
    sandboxApprover.sandboxApprover({
      store,
      delayMs: config.sandboxApprovalDelayMs,
      now: clock,
      approve: async (taskId) => {
        const now = clock().toISOString();
        await approveTask(ports, taskId, 'Approved by the simulated seller of this sandbox account', { now, principal: 'sandbox-seller' }).catch((err: unknown) => {
          // Decided meanwhile (the operator, the controller, a cancel): nothing left to approve.
          if (!(err instanceof AppError && (err.code === 'INVALID_STATE' || err.code === 'TASK_NOT_FOUND'))) throw err;
        });
      },
    }),
  );
  return app;
}

/** Stops consumers before closing the stores they read. */
export async function stopApp(app: ComposedApp): Promise<void> {
  await app.adServer.stop();
  await app.webhooks.stop();
  await app.brandCrawler.stop();
  await app.live.stop();
  await app.bus.close();
  await app.budgets?.close(); // hands what this instance counted to the store
  await app.rateLimiter.close();
  await app.projections.stop();
  await app.readModels.close();
  await app.store.close();
}
