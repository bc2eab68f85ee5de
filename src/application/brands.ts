import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import { brandStream, type BrandEvent } from '../domain/brands/events';
import { resolveBrand, type ResolvedBrand } from '../domain/brands/resolve';
import type { EventStore } from '../eventstore/port';
import { fetchJson, type OriginOverrides } from '../shared/guarded-fetch';

/**
 * Crawls `brand.json` for domains and records what it found as events (the brands projection
 * serves them). Crawls run in the background with bounded concurrency; a domain crawled in the
 * last hour is not crawled again (found or not), so a stream of unknown domains cannot turn the
 * gateway into a fetch amplifier.
 */
export class BrandCrawler {
  private recent = new LRUCache<string, true>({ max: 50_000, ttl: 3600_000 });
  private queue: string[] = [];
  private running = 0;
  private idle: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly store: EventStore,
    private readonly overrides: OriginOverrides,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly concurrency = 4,
  ) {}

  /** Queues crawls for domains not crawled within the hour (fire and forget). */
  request(domains: readonly string[]): void {
    for (const d of domains) {
      if (this.stopped || this.recent.has(d) || this.queue.length >= 10_000) continue;
      this.recent.set(d, true);
      this.queue.push(d);
    }
    this.pump();
  }

  /** Crawls one domain now and returns what was recorded. */
  async crawl(domain: string): Promise<ResolvedBrand | null> {
    this.recent.set(domain, true);
    const at = new Date().toISOString();
    let identity: ResolvedBrand | null = null;
    let error: string | undefined;
    try {
      identity = await resolveBrand(domain, (url) => fetchJson(url, { overrides: this.overrides, maxBytes: 256 * 1024 }));
    } catch (err) {
      error = (err as Error).message.slice(0, 300);
    }
    const event: BrandEvent = { type: 'BrandCrawled', data: { domain, identity, ...(error ? { error } : {}), at } };
    await this.store.append(brandStream(domain), [{ type: event.type, data: event.data, metadata: { principal: 'brand-crawler' } }]);
    return identity;
  }

  /** Shutdown: queued crawls are dropped (a later request queues them again); running ones finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue = [];
    await this.drained();
  }

  /** Resolves once nothing is queued or running. */
  drained(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const domain = this.queue.shift()!;
      this.running++;
      this.crawl(domain)
        .catch((err: unknown) => this.log.warn({ err, domain }, 'brand crawl could not be recorded'))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) for (const r of this.idle.splice(0)) r();
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
