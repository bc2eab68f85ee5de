import type { FastifyInstance } from 'fastify';
import { AppError } from '../shared/errors';
import { sendRegistryError } from './errors';
import { brandQueries } from '../../projections/brands';
import type { App } from '../app';
import { normalizeDomain } from '../domain/brands/resolve';

/** The spec's limit on domains per request (§8). */
export const MAX_BULK_DOMAINS = 100;

/**
 * `POST /api/brands/resolve/bulk` `{domains}` → `{results: {domain: identity | null}}` from the
 * brands read model. Domains are trimmed, lowercased and deduplicated (first occurrence kept);
 * an unknown one is null now and crawled in the background. Errors are `{error}`: 400 for bad
 * JSON, content type or domain list, 413 over 16 KB, 429 `{error, retry_after}` past
 * BRAND_RESOLVE_RATE_LIMIT requests a minute per client address.
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
      const retryAfter = await app.rateLimiter.hit(`brands-bulk:${req.ip}`, app.config.brandResolveRateLimit, 60);
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
      const known = await brandQueries.resolve(app.readModels, domains);
      app.brandCrawler.request(domains.filter((d) => !known.has(d)));
      return reply.send({ results: Object.fromEntries(domains.map((d) => [d, known.get(d)?.identity ?? null])) });
    });
  });
}
