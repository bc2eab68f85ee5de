import type { Logger } from 'pino';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BindingPorts, RevalidationPorts } from './application/ports';
import type { BrandCrawler } from './application/brands';
import type { AdServer } from './adserver/port';
import type { GatewayClock } from './adserver/clock';
import type { Bus } from './bus/port';
import type { Config } from './config';
import type { AuthFailureThrottle } from './limits/client-budgets';
import type { RateLimiter } from './limits/rate-limit';
import type { RequestSigning } from './http/request-signing';
import type { SharedBudgets } from './limits/shared-budgets';
import type { OAuthService } from './oauth/service';
import type { SigningKeystore } from './signing/keystore';
import type { WebhookDeliveryWorker } from './webhooks/delivery-worker';
import type { WebhookReceiver } from './webhooks/receiver/receiver';

/**
 * The gateway as its bindings (REST, GraphQL, MCP, A2A, the console's routes) are handed it:
 * the application's ports and the services the bindings use, composed once from config by
 * src/app.ts (the composition root), which is the only module that builds one.
 */

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route'>;
  projectionLag: Gauge<'projection'>;
  loopStalls: Histogram;
  /** `adcp_appends_total{outcome}`: appends to the event store, by ok / conflict / failed. */
  appends: Counter<'outcome'>;
  /** `adcp_appended_events_total`: events those appends wrote. */
  appendedEvents: Counter;
  /** `adcp_webhook_attempts_total{outcome}`: webhook POSTs this instance made, by their outcome. */
  webhookAttempts: Counter<'outcome'>;
  /**
   * Registers a bounded structure (a cache, a buffer) whose size /metrics reports as
   * `adcp_bounded_entries` and, where it counts them, `adcp_bounded_bytes` (estimated).
   */
  bounded(structure: string, measure: () => BoundedSize): void;
}

/** How much a bounded structure holds now. */
export interface BoundedSize {
  entries: number;
  /** Estimated bytes, where the structure is bounded by them. */
  bytes?: number;
}

/** Everything a binding needs, composed once from config. */
export interface App {
  config: Config;
  /**
   * The ports the bindings call the application with (src/application/ports.ts): what tasks and
   * the operator's actions are handed, the live log, how far the projections have got.
   */
  ports: BindingPorts;
  /** The ports an admin's publisher revalidation is handed. */
  revalidation: RevalidationPorts;
  bus: Bus;
  metrics: Metrics;
  log: Logger;
  /** The gateway's notion of now (real time plus what advanceClock added). */
  clock: () => Date;
  gatewayClock: GatewayClock;
  adServer: AdServer;
  /** Webhook-signing keys, published at /.well-known/jwks.json. */
  signingKeys: SigningKeystore;
  oauth: OAuthService;
  webhooks: WebhookDeliveryWorker;
  /** The buyer-side receiver: endpoints, verification, dedup. */
  receiver: WebhookReceiver;
  brandCrawler: BrandCrawler;
  /** Shared fixed-window counters (registry rate limits). */
  rateLimiter: RateLimiter;
  /** Per-client budgets over those counters (docs/limits.md); absent with RESOURCE_LIMITS=off. */
  budgets?: SharedBudgets;
  /** Failed credentials per client address, for the API bindings and the OAuth sign-in form. */
  authFailures?: AuthFailureThrottle;
  /** Incoming request signatures (REQUEST_SIGNERS_FILE); absent: request signing is not offered. */
  requestSigning?: RequestSigning;
}
