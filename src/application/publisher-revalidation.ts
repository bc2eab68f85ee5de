import { lookup } from 'node:dns/promises';
import { isTransient, publisherStream, type PublisherEvent } from '../domain/adagents/events';
import type { RevalidationResult } from '../domain/adagents/revalidation';
import { isPublicAddress } from '../shared/url-guard';
import { revalidateAdagents } from './adagents';
import type { RevalidationPorts } from './ports';
import { untilProjected } from './projected';

const DOMAIN = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,63}$/;

/** A revalidation done (its verdict recorded), or refused before anything was fetched. */
export type Revalidation = { done: true; result: RevalidationResult } | { done: false; status: 400 | 429; error: string; retryAfter?: number };

/**
 * An admin's revalidation of a publisher's adagents.json (REST and GraphQL): the live fetch runs
 * now and its verdict is appended as an event, projections caught up before answering. Refused
 * for a domain that is not a public DNS name, and past once per 5 minutes per domain or 30 per
 * admin per hour (counted in the shared rate-limit store). The caller checks the admin role.
 */
export async function revalidatePublisher(ports: RevalidationPorts, rawDomain: string, keyId: string): Promise<Revalidation> {
  const domain = rawDomain.trim().toLowerCase();
  if (domain.length > 253) return { done: false, status: 400, error: 'domain is longer than 253 characters, the most DNS allows' };
  if (!DOMAIN.test(domain)) return { done: false, status: 400, error: 'Invalid domain' };
  if (!ports.settings.originOverrides.has(domain)) {
    const addresses = await lookup(domain, { all: true }).catch(() => undefined);
    if (!addresses || addresses.length === 0) return { done: false, status: 400, error: 'Could not resolve hostname' };
    if (addresses.some((a) => !isPublicAddress(a.address))) return { done: false, status: 400, error: 'URL resolved to a private or internal IP address' };
  }

  // The domain's cooldown first (it costs the caller nothing), then the caller's hourly budget.
  const domainBucket = `revalidate-domain:${domain}`;
  const domainWait = await ports.counters.cooldown(domainBucket, 300);
  if (domainWait !== undefined) return { done: false, status: 429, error: 'Rate limit exceeded for this domain', retryAfter: domainWait };
  const userWait = await ports.counters.hit(`revalidate-user:${keyId}`, 30, 3600).catch(async (err: unknown) => {
    await ports.counters.release(domainBucket).catch(() => {}); // nothing was done: the domain's slot goes back
    throw err;
  });
  if (userWait !== undefined) {
    await ports.counters.release(domainBucket);
    return { done: false, status: 429, error: 'Hourly crawl request limit exceeded', retryAfter: userWait };
  }

  const { result, manifest } = await revalidateAdagents(domain, ports.settings.originOverrides);
  const event: PublisherEvent = { type: 'AdagentsRevalidated', data: { domain, result, ...(manifest ? { manifest } : {}), transient: isTransient(result), at: result.checked_at } };
  await ports.store.append(publisherStream(domain), [{ type: event.type, data: event.data, metadata: { principal: keyId } }]);
  await untilProjected(ports);
  return { done: true, result };
}
