import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import { brandStream, type BrandEvent } from '../domain/brands/events';
import { resolveBrand, type ResolvedBrand } from '../domain/brands/resolve';
import type { EventStore } from '../eventstore/port';
import { FetchError, fetchJson } from '../shared/guarded-fetch';
import type { OriginOverrides } from '../shared/origin-overrides';
import { FairQueue } from './fair-queue';

/** Who asked for crawls: whose share of the queue they take, and how long each may run. */
export interface CrawlRequester {
  /** `key:<key id>` for a caller with a valid credential, else `ip:<client address>` (its budget key: an IPv6 address's /64). */
  id: string;
  /** Anonymous work runs under a short deadline: a domain that never answers frees its slot soon. */
  anonymous: boolean;
}

/** A request's crawls queued (or with nothing new to crawl), or refused whole with when to come back. */
export type CrawlRequestOutcome = { queued: true } | { queued: false; reason: 'share' | 'full'; retryAfterSeconds: number };

/** Domains one requester may have waiting for or in their crawl at once (two full bulk requests). */
export const BRAND_CRAWL_SHARE = 200;
/** Domains waiting for their crawl, over every requester. */
export const BRAND_CRAWL_QUEUE_MAX = 10_000;
/** A whole crawl (every hop) for an anonymous requester, for a key, and for an operator's crawlBrand. */
export const BRAND_CRAWL_DEADLINE_MS = { anonymous: 5_000, key: 20_000, operator: 30_000 } as const;
/** One fetch within a crawl. */
const FETCH_TIMEOUT_MS = 10_000;
const HOUR_MS = 3600_000;
/** The longest a domain that named no brand waits before it is crawled again. */
const MAX_BACKOFF_MS = 24 * HOUR_MS;

interface QueuedCrawl {
  domain: string;
  deadlineMs: number;
}

/**
 * Crawls `brand.json` for domains and records what it found as events (the brands projection
 * serves them). Background crawls are queued per requester and run round-robin between them with
 * bounded concurrency (FairQueue): one requester's backlog of domains that never answer delays
 * another's next crawl by at most one crawl's deadline, and a requester past its share, or a full
 * queue, is refused rather than dropped silently. A domain crawled in the last hour is not crawled
 * again, so a stream of unknown domains cannot turn the gateway into a fetch amplifier.
 *
 * A background crawl that finds no brand records nothing: bulk resolution queues only domains
 * with no record, for which "never crawled" and "crawled, nothing found" answer the same (null),
 * and an event per unresolvable domain would let anyone with wildcard DNS grow the log without
 * end. Such a domain is backed off instead (1 h, doubling to a day), in memory.
 */
export class BrandCrawler {
  /** Domains queued, running, or crawled recently (found or not): not queued again meanwhile. */
  private recent = new LRUCache<string, true>({ max: 50_000, ttl: HOUR_MS });
  /** Consecutive background crawls that found no brand, per domain (its back-off). */
  private misses = new LRUCache<string, number>({ max: 50_000, ttl: 2 * MAX_BACKOFF_MS });
  private queue = new FairQueue<QueuedCrawl>({ share: BRAND_CRAWL_SHARE, max: BRAND_CRAWL_QUEUE_MAX });
  private running = 0;
  private idle: (() => void)[] = [];
  private stopped = false;

  /** Domains waiting to be crawled (for /metrics). */
  get waiting(): number {
    return this.queue.waiting;
  }

  constructor(
    private readonly store: EventStore,
    private readonly overrides: OriginOverrides,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly concurrency = 4,
  ) {}

  /**
   * Queues crawls of the domains not queued, running or crawled within their back-off, all of
   * them or none: refused when the requester's share or the queue cannot take them all.
   */
  request(domains: readonly string[], requester: CrawlRequester): CrawlRequestOutcome {
    if (this.stopped) return { queued: false, reason: 'full', retryAfterSeconds: 5 };
    const fresh = [...new Set(domains)].filter((d) => !this.recent.has(d));
    const deadlineMs = requester.anonymous ? BRAND_CRAWL_DEADLINE_MS.anonymous : BRAND_CRAWL_DEADLINE_MS.key;
    const refused = this.queue.offer(requester.id, fresh.map((domain) => ({ domain, deadlineMs })));
    if (refused === 'share') {
      const excess = this.queue.pendingOf(requester.id) + fresh.length - BRAND_CRAWL_SHARE;
      // Its crawls get one turn in every round among the requesters waiting.
      return { queued: false, reason: 'share', retryAfterSeconds: this.secondsFor(excess * Math.max(1, this.queue.requestersWaiting), deadlineMs) };
    }
    if (refused === 'full') {
      return { queued: false, reason: 'full', retryAfterSeconds: this.secondsFor(this.queue.waiting + fresh.length - BRAND_CRAWL_QUEUE_MAX, deadlineMs) };
    }
    for (const d of fresh) this.recent.set(d, true);
    this.pump();
    return { queued: true };
  }

  /** An operator's crawl of one domain, now: what it found is recorded, nothing included. */
  async crawl(domain: string): Promise<ResolvedBrand | null> {
    this.recent.set(domain, true);
    const { identity, error } = await this.resolve(domain, BRAND_CRAWL_DEADLINE_MS.operator);
    await this.record(domain, identity, error);
    return identity;
  }

  /** Shutdown: queued crawls are dropped (a later request queues them again); running ones finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    await this.drained();
  }

  /** Resolves once nothing is queued or running. */
  drained(): Promise<void> {
    if (this.running === 0 && this.queue.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private async crawlQueued(domain: string, deadlineMs: number): Promise<void> {
    const { identity, error } = await this.resolve(domain, deadlineMs);
    if (identity) {
      this.misses.delete(domain);
      await this.record(domain, identity, error);
      return;
    }
    const misses = (this.misses.get(domain) ?? 0) + 1;
    this.misses.set(domain, misses);
    this.recent.set(domain, true, { ttl: Math.min(HOUR_MS * 2 ** (misses - 1), MAX_BACKOFF_MS) });
  }

  /** Follows the domain's brand.json within one deadline for the whole crawl (every hop). */
  private async resolve(domain: string, deadlineMs: number): Promise<{ identity: ResolvedBrand | null; error?: string }> {
    const deadline = Date.now() + deadlineMs;
    try {
      const identity = await resolveBrand(domain, (url) => {
        const left = deadline - Date.now();
        if (left <= 0) throw new FetchError(`${url}: not fetched, the crawl's ${deadlineMs} ms were spent`);
        return fetchJson(url, { overrides: this.overrides, maxBytes: 256 * 1024, timeoutMs: Math.min(FETCH_TIMEOUT_MS, left) });
      });
      return { identity };
    } catch (err) {
      return { identity: null, error: (err as Error).message.slice(0, 300) };
    }
  }

  private async record(domain: string, identity: ResolvedBrand | null, error: string | undefined): Promise<void> {
    const event: BrandEvent = { type: 'BrandCrawled', data: { domain, identity, ...(error ? { error } : {}), at: new Date().toISOString() } };
    await this.store.append(brandStream(domain), [{ type: event.type, data: event.data, metadata: { principal: 'brand-crawler' } }]);
  }

  /** How long `crawls` more crawls take at worst: each up to its deadline, `concurrency` at a time. */
  private secondsFor(crawls: number, deadlineMs: number): number {
    return Math.min(3600, Math.max(1, Math.ceil((Math.max(1, crawls) / this.concurrency) * (deadlineMs / 1000))));
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      const next = this.queue.take();
      if (!next) break;
      const { requester, item } = next;
      this.running++;
      this.crawlQueued(item.domain, item.deadlineMs)
        .catch((err: unknown) => this.log.warn({ err, domain: item.domain }, 'brand crawl could not be recorded'))
        .finally(() => {
          this.running--;
          this.queue.done(requester);
          this.pump();
          if (this.running === 0 && this.queue.waiting === 0) for (const r of this.idle.splice(0)) r();
        });
    }
  }
}

export async function registerBrand(store: EventStore, domain: string, identity: Omit<ResolvedBrand, 'source' | 'canonical_domain'>, now: string, principal: string): Promise<ResolvedBrand> {
  const full: ResolvedBrand = { ...identity, canonical_domain: domain, source: 'hosted' };
  const event: BrandEvent = { type: 'BrandRegistered', data: { domain, identity: full, at: now } };
  await store.append(brandStream(domain), [{ type: event.type, data: event.data, metadata: { principal } }]);
  return full;
}
