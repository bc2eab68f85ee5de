import type { BusHandler } from '../../src/bus/port';
import type { PublisherEvent } from '../../src/domain/adagents/events';
import type { BrandEvent } from '../../src/domain/brands/events';
import { feedStream, type FeedEntry } from '../../src/domain/feed/events';
import type { StoryboardEvent } from '../../src/domain/storyboards/events';
import { appendOnce } from '../../src/application/command-handler';
import type { EventStore, StoredEvent } from '../../src/eventstore/port';
import { newEventId } from '../../src/shared/ids';

export const group = 'change-feed';

type Revalidated = PublisherEvent['data'];
type Agent = { url: string; authorized_for?: string; authorization_type?: string };
const agentsOf = (r?: Revalidated): Map<string, Agent> =>
  new Map(((r?.manifest?.authorized_agents as Agent[] | undefined) ?? []).filter((a) => typeof a?.url === 'string').map((a) => [a.url, a]));

/**
 * Registry events → change-feed entries (recorded as FeedEntryRecorded events, one stream per
 * source event so a redelivery records nothing twice; the feed projection serves them and the
 * Kafka relay carries them on the events topic). Entries: publisher.adagents_discovered /
 * _changed / _invalidated, authorization.granted / revoked / modified (one per agent),
 * brand.updated, storyboards.imported.
 */
export function changeFeed(store: EventStore): BusHandler {
  async function entriesFor(e: StoredEvent): Promise<Omit<FeedEntry, 'event_id'>[]> {
    const at = (e.metadata as { time?: string }).time ?? new Date().toISOString();
    switch (e.type) {
      case 'AdagentsRevalidated': {
        const d = e.data as Revalidated;
        if (d.transient) return [];
        const history = await store.readStream(e.streamId, { limit: Math.max(0, e.streamVersion - 1) });
        const before = history.map((h) => h.data as Revalidated).filter((h) => !h.transient).at(-1);
        const wasValid = before?.result.adagents_valid === true;
        const out: Omit<FeedEntry, 'event_id'>[] = [];
        const publisherEntry = (event_type: string) => ({
          event_type,
          entity_type: 'publisher' as const,
          entity_id: d.domain,
          payload: { publisher_domain: d.domain, agent_count: d.result.authorized_agents_count, property_count: d.result.properties_count, discovery_method: d.result.discovery_method, authority: d.result.authority, manager_domain: d.result.manager_domain ?? null, source: 'publisher_revalidation' },
          actor: 'api:adagents-revalidate',
          created_at: at,
        });
        const prev = agentsOf(wasValid ? before : undefined);
        const next = agentsOf(d.result.adagents_valid ? d : undefined);
        if (d.result.adagents_valid && !wasValid) out.push(publisherEntry(before ? 'publisher.adagents_changed' : 'publisher.adagents_discovered'));
        else if (d.result.adagents_valid && JSON.stringify([...prev]) !== JSON.stringify([...next])) out.push(publisherEntry('publisher.adagents_changed'));
        else if (!d.result.adagents_valid && wasValid) out.push(publisherEntry('publisher.adagents_invalidated'));
        const auth = (event_type: string, a: Agent) => ({
          event_type,
          entity_type: 'authorization' as const,
          entity_id: `${d.domain}|${a.url}`,
          payload: { publisher_domain: d.domain, agent_url: a.url, authorized_for: a.authorized_for ?? null, authorization_type: a.authorization_type ?? null, evidence: d.result.authority === 'domain' ? 'adagents_json' : 'adagents_authoritative' },
          actor: 'api:adagents-revalidate',
          created_at: at,
        });
        for (const [url, a] of next) {
          if (!prev.has(url)) out.push(auth('authorization.granted', a));
          else if (JSON.stringify(prev.get(url)) !== JSON.stringify(a)) out.push(auth('authorization.modified', a));
        }
        for (const [url, a] of prev) if (!next.has(url)) out.push(auth('authorization.revoked', a));
        return out;
      }
      case 'BrandCrawled':
      case 'BrandRegistered': {
        const d = (e as unknown as BrandEvent).data;
        if (!d.identity) return [];
        return [{ event_type: 'brand.updated', entity_type: 'brand', entity_id: d.domain, payload: { domain: d.domain, ...d.identity }, actor: e.type === 'BrandRegistered' ? 'api:register-brand' : 'brand-crawler', created_at: at }];
      }
      case 'StoryboardBundleImported': {
        const d = (e as unknown as Extract<StoryboardEvent, { type: 'StoryboardBundleImported' }>).data;
        return [{ event_type: 'storyboards.imported', entity_type: 'storyboards', entity_id: d.adcp_version, payload: { adcp_version: d.adcp_version, storyboards: d.storyboards, test_kits: d.test_kits }, actor: 'system', created_at: at }];
      }
      default:
        return [];
    }
  }

  return async (events) => {
    for (const e of events) {
      const entries = await entriesFor(e);
      if (entries.length === 0) continue;
      // A redelivered source event finds its entries recorded already.
      await appendOnce(store, feedStream(e.id), entries.map((entry) => ({ type: 'FeedEntryRecorded', data: { event_id: newEventId(), ...entry } })));
    }
  };
}
