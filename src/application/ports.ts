import type { TenantKeyer } from '../public-events/tenants';
import type { Logger } from 'pino';
import type { MediaBuyRow } from '../../projections/media-buys';
import type { Config } from '../config';
import type { Impairment } from '../domain/impairment/impairment';
import type { StoredEvent, WatermarkedStore } from '../eventstore/port';
import type { ReadModelStore } from '../readmodel/port';
import type { WebhookSigningKey } from '../signing/webhook-signer';

/**
 * The ports the application is handed. The composition root (src/app.ts) builds one of each from
 * config and gives every service exactly the ports it names; nothing here knows which engine or
 * adapter stands behind them, so a service runs the same on SQLite, PostgreSQL or in memory.
 */

/** The event log: streams to load and append to, and the highest position this process appended. */
export type EventLog = WatermarkedStore;

/** The read models the projections keep, read through the query functions of projections/. */
export type ReadModels = ReadModelStore;

/** How far the projections have got: a command answers once they show what it wrote. */
export interface ProjectionProgress {
  /**
   * Read-your-writes: resolves once the projections show this process's appends up to `position`;
   * given `appendedTypes` (the store's appendedTypes()), only those that handle what was
   * appended, and none that the store writes with the append (see untilProjected).
   */
  waitFor(position: number, appendedTypes?: ReadonlyMap<string, number>): Promise<void>;
  /** Resolves once the named projections have applied the log up to `position`. */
  applied(position: number, projections: readonly string[]): Promise<void>;
}

/** The gateway's notion of now (real time plus what the sandbox's advanceClock added). */
export type Clock = () => Date;

/** A read-through cache of read-model rows that rarely change (the catalog's approval rules, a product). */
export interface RowCache {
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
}

/** A media buy as get_media_buys answers it: its row and its open impairments, oldest first. */
export interface BuyWithImpairments {
  row: MediaBuyRow;
  impairments: Impairment[];
}

/** Media buys by id (the caller's only: another owner's id reads as absent), cached per instance. */
export interface MediaBuyLookup {
  get(readModels: ReadModels, owner: string, ids: readonly string[]): Promise<Map<string, BuyWithImpairments>>;
}

/** Counters shared by every instance (the registry's crawl limits). */
export interface SharedCounters {
  /** Claims the bucket when its cooldown of `seconds` has passed (undefined), else the seconds left. */
  cooldown(bucket: string, seconds: number): Promise<number | undefined>;
  /** Gives a cooldown back (the request it admitted was refused for another reason). */
  release(bucket: string): Promise<void>;
  /** Counts a hit: the seconds until the window resets when over `limit`, else undefined. */
  hit(bucket: string, limit: number, windowSeconds: number): Promise<number | undefined>;
}

/** The seller's signing keys, for requests it signs to buyers' agents (governance). */
export interface RequestSigner {
  activeKey(purpose: 'request-signing'): WebhookSigningKey;
}

/** The settings the application reads (from Config: PUBLIC_URL, APPROVAL_POLICY, the test seams). */
export type ApplicationSettings = Pick<Config, 'publicUrl' | 'approvalPolicy' | 'allowPrivateWebhookUrls' | 'originOverrides'>;

/**
 * What a buyer's task is handed (the sales agent's tasks and the operator's actions on them): the
 * log, the read models and how far they have got, the clock, the two per-instance caches of reads,
 * the settings, the request signer (governance calls) and a logger.
 */
export interface TaskPorts {
  store: EventLog;
  readModels: ReadModels;
  projections: ProjectionProgress;
  clock: Clock;
  cache: RowCache;
  mediaBuyCache: MediaBuyLookup;
  settings: ApplicationSettings;
  signer: RequestSigner;
  log: Logger;
}

/** What the registry's reads use: the read models alone. */
export type RegistryReadPorts = Pick<TaskPorts, 'readModels'>;

/** What an admin's publisher revalidation uses: the log, the projections, the settings and the shared counters. */
export type RevalidationPorts = Pick<TaskPorts, 'store' | 'projections' | 'settings'> & { counters: SharedCounters };

/** What a stream's first event says of the stream (its owner; a task's type and subject; a webhook's notification). */
export type StreamOrigin = Partial<Record<'owner' | 'task_type' | 'resource_id' | 'notification_type' | 'task_id' | 'media_buy_id', string>>;

/** A follower of the live log; stop() detaches it. */
export interface LiveFollow {
  /** Settles once the follower is live: the past it asked for handed over, the log followed. */
  readonly ready: Promise<void>;
  stop(): void;
}

/**
 * The log as it grows, for this instance's live readers (GraphQL subscriptions, A2A task
 * streams): followed from a position or from now, each event once and in order.
 */
export interface LiveEvents {
  /** Hands `deliver` every event after `after` (default: from now on), in order. */
  follow(after: number | undefined, deliver: (events: readonly StoredEvent[]) => void, onError: (err: unknown) => void): LiveFollow;
  /** The org an event belongs to: its own `owner`, else its stream's; undefined: nobody's. */
  ownerOf(event: StoredEvent): Promise<string | undefined>;
  /** What the stream's first event says of it (kept for a bounded number of streams). */
  streamOrigin(streamId: string): Promise<StreamOrigin>;
}

/** Where each projection stands, for the health checks and the operator's view of the log. */
export interface ProjectionHealth {
  /** The position each projection has applied up to (what this instance has seen), and the event that stopped one. */
  status(): { name: string; position: number; failed?: { position: number; type: string; error: string } }[];
  /** True when every projection has applied everything up to `head` (those an event stopped aside). */
  caughtUpWith(head: number): boolean;
}

/**
 * What the bindings (REST, GraphQL, MCP, A2A) are handed to call the application with: the
 * tasks' ports, the live log, and how far the projections have got (readiness, the system view).
 */
export interface BindingPorts extends TaskPorts {
  live: LiveEvents;
  /** The operator's tenant keys for the public events (GraphQL's publicEvents says them as Kafka does). */
  publicTenantKey: TenantKeyer;
  projectionHealth: ProjectionHealth;
}
