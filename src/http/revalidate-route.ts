import { lookup } from 'node:dns/promises';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { App } from '../app';
import { revalidateAdagents } from '../application/adagents';
import { isTransient, publisherStream, type PublisherEvent } from '../domain/adagents/events';
import { isPublicAddress } from '../webhooks/url-guard';
import { principalOrNull } from './auth';

const DOMAIN = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,63}$/;

const tooMany = (reply: FastifyReply, error: string, retryAfter: number) => reply.status(429).header('retry-after', String(retryAfter)).send({ error, retry_after: retryAfter });

/**
 * `POST /api/registry/publisher/{domain}/adagents/revalidate` (spec §4.2): admin only; the live
 * fetch runs now, its verdict and fetch metadata are appended as an event (projections update
 * publishers and authorized agents) and returned. Once per 5 minutes per domain and 30 per admin
 * per hour, counted in the database (shared by instances, kept over restarts). Errors are
 * `{error}` (429 adds `retry_after` and a Retry-After header).
 */
export function registerRevalidateRoute(fastify: FastifyInstance, app: App): void {
  fastify.post<{ Params: { domain: string }; Querystring: { force?: string } }>('/api/registry/publisher/:domain/adagents/revalidate', async (req, reply) => {
    const principal = await principalOrNull(req, app);
    if (!principal) return reply.status(401).header('www-authenticate', 'Bearer').send({ error: 'Authentication required' });
    if (principal.role !== 'admin') return reply.status(403).send({ error: 'Admin access required' });

    const domain = req.params.domain.trim().toLowerCase();
    if (!DOMAIN.test(domain)) return reply.status(400).send({ error: 'Invalid domain' });
    if (!app.config.originOverrides.has(domain)) {
      const addresses = await lookup(domain, { all: true }).catch(() => undefined);
      if (!addresses || addresses.length === 0) return reply.status(400).send({ error: 'Could not resolve hostname' });
      if (addresses.some((a) => !isPublicAddress(a.address))) return reply.status(400).send({ error: 'URL resolved to a private or internal IP address' });
    }

    // The domain's cooldown first (it costs the caller nothing), then the caller's hourly budget.
    const domainBucket = `revalidate-domain:${domain}`;
    const domainWait = await app.rateLimiter.cooldown(domainBucket, 300);
    if (domainWait !== undefined) return tooMany(reply, 'Rate limit exceeded for this domain', domainWait);
    const userWait = await app.rateLimiter.hit(`revalidate-user:${principal.keyId}`, 30, 3600).catch(async (err: unknown) => {
      await app.rateLimiter.release(domainBucket).catch(() => {}); // nothing was done: the domain's slot goes back
      throw err;
    });
    if (userWait !== undefined) {
      await app.rateLimiter.release(domainBucket);
      return tooMany(reply, 'Hourly crawl request limit exceeded', userWait);
    }

    const { result, manifest } = await revalidateAdagents(domain, app.config.originOverrides);
    const event: PublisherEvent = { type: 'AdagentsRevalidated', data: { domain, result, ...(manifest ? { manifest } : {}), transient: isTransient(result), at: result.checked_at } };
    await app.store.append(publisherStream(domain), [{ type: event.type, data: event.data, metadata: { principal: principal.keyId } }]);
    await app.projections.waitFor(app.store.appendedUpTo());
    return reply.send(result);
  });
}
