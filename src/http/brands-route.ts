import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../shared/errors';
import { BRAND_CRAWL_SHARE, type CrawlRequester } from '../application/brands';
import { authenticate } from './auth';
import { sendRegistryError } from './errors';
import { resolveBrands } from '../application/brand-reads';
import type { App } from '../services';
import { normalizeDomain } from '../domain/brands/resolve';
import { addressBudgetKey } from '../limits/address-key';

/** The spec's limit on domains per request (§8). */
export const MAX_BULK_DOMAINS = 100;

/**
 * `POST /api/brands/resolve/bulk` `{domains}` → `{results: {domain: identity | null}}` from the
 * brands read model. Domains are trimmed, lowercased and deduplicated (first occurrence kept);
 * an unknown one is null now and crawled in the background, in the caller's share of the crawl
 * queue (its key's, else its address's). Errors are `{error}`: 400 for bad JSON, content type or
 * domain list, 413 over 16 KB, 429 `{error, retry_after}` past BRAND_RESOLVE_RATE_LIMIT requests a
 * minute per client address or past the caller's share of the crawl queue, 503 `{error,
 * retry_after}` when the crawl queue is full (the unknown domains were not queued: ask again later).
 */
export async function registerBrandRoutes(fastify: FastifyInstance, app: App): Promise<void> {
  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) => {
      try {
        done(null, JSON.parse(body as string));
      } catch {
        done(null, { __malformed: true });
      }
    });
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, _body, done) => done(null, { __wrongType: true }));
    scope.setErrorHandler((err: { statusCode?: number; code?: string }, req, reply) => {
      // The rate limiter's store being down is ours to report (503), not a malformed request.
      if (err instanceof AppError) return sendRegistryError(reply, err);
      if (err.statusCode === 413 || err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.status(413).send({ error: 'Request body too large' });
      if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return reply.status(400).send({ error: 'Malformed request body' });
      // Not the caller's fault (a database outage, a bug): logged, and masked.
      req.log.error({ err }, 'unhandled error');
      return reply.status(500).send({ error: 'internal error' });
    });
    scope.post('/api/brands/resolve/bulk', async (req, reply) => {
      const retryAfter = await app.rateLimiter.hit(`brands-bulk:${addressBudgetKey(req.ip)}`, app.config.brandResolveRateLimit, 60);
      if (retryAfter !== undefined) return reply.status(429).header('retry-after', String(retryAfter)).send({ error: 'Too many requests', retry_after: retryAfter });
      const body = req.body as Record<string, unknown> | undefined;
      if (!body || body.__wrongType) return reply.status(400).send({ error: 'Content-Type must be application/json' });
      if (body.__malformed) return reply.status(400).send({ error: 'Malformed request body' });
      const raw = (body as { domains?: unknown }).domains;
      if (!Array.isArray(raw) || raw.length === 0) return reply.status(400).send({ error: 'domains array required' });
      if (raw.length > MAX_BULK_DOMAINS) return reply.status(400).send({ error: `Maximum ${MAX_BULK_DOMAINS} domains per request` });
      const domains: string[] = [];
      for (const d of raw) {
        const n = normalizeDomain(d);
        if (!n) return reply.status(400).send({ error: 'All domains must be bare multi-label DNS hostnames' });
        if (!domains.includes(n)) domains.push(n);
      }
      const known = await resolveBrands(app.ports, domains);
      const crawls = app.brandCrawler.request(domains.filter((d) => !known.has(d)), await crawlRequester(req, app));
      if (!crawls.queued) {
        const wait = crawls.retryAfterSeconds;
        const error =
          crawls.reason === 'share'
            ? `Too many brand crawls pending for this client: at most ${BRAND_CRAWL_SHARE} domains may wait for their crawl at once; try again in ${wait} s`
            : `Brand resolution is busy: too many brand crawls are queued; try again in ${wait} s`;
        return reply.status(crawls.reason === 'share' ? 429 : 503).header('retry-after', String(wait)).send({ error, retry_after: wait });
      }
      return reply.send({ results: Object.fromEntries(domains.map((d) => [d, known.get(d)?.identity ?? null])) });
    });
  });
}

/**
 * Whose share of the crawl queue a request's crawls take: a caller presenting a valid credential
 * its key's (so clients behind one address with their own keys do not share), anyone else its
 * address's (an IPv6 address: its /64). The route is public: a credential that does not verify only makes the caller anonymous.
 */
async function crawlRequester(req: FastifyRequest, app: App): Promise<CrawlRequester> {
  const principal = req.headers.authorization === undefined ? null : await authenticate(req, app).catch(() => null);
  return principal ? { id: `key:${principal.keyId}`, anonymous: false } : { id: `ip:${addressBudgetKey(req.ip)}`, anonymous: true };
}
