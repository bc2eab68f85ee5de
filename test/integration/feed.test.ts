import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { startOrigins } from '../support/origins';
import { overSse } from '../support/subscriptions';

const WK = '/.well-known/adagents.json';
const agent = (url: string) => ({ url, authorized_for: 'Display', authorization_type: 'property_tags', property_tags: ['all'] });
const file = (...urls: string[]) => ({ $schema: 'x', last_updated: '2026-11-23T10:00:00Z', authorized_agents: urls.map(agent) });

describe('GET /api/registry/feed', () => {
  it('revalidations and brand crawls become feed entries, paged by cursor, filtered by type; 401 / 400 / 410', async () => {
    const served: Record<string, unknown> = { [WK]: { body: file('https://a.example/mcp', 'https://b.example/mcp') } };
    const origins = await startOrigins({ 'feedpub.example': served as never, 'feedbrand.example': { '/.well-known/brand.json': { body: { id: 'fb', names: [{ en: 'Feed Brand' }] } } } });
    const gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    try {
      const now = { now: new Date().toISOString() };
      const admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, now)).key;
      const reader = (await issueApiKey(gw.app.store, { org: 'reader', role: 'buyer' }, now)).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const feed = async (query = '', key: string | null = reader) => {
        const r = await fetch(`${gw.url}/api/registry/feed${query}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
        return { status: r.status, body: (await r.json()) as Record<string, any> };
      };
      const revalidate = () => fetch(`${gw.url}/api/registry/publisher/feedpub.example/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });

      expect((await revalidate()).status).toBe(200);
      // The next revalidation needs a fresh 5-minute slot: clear it as an operator would wait it out.
      await gw.app.rateLimiter.release('revalidate-domain:feedpub.example');
      served[WK] = { body: file('https://b.example/mcp', 'https://c.example/mcp') };
      expect((await revalidate()).status).toBe(200);
      await gw.app.brandCrawler.crawl('feedbrand.example');

      const all = (await eventually(async () => {
        const f = await feed('?types=publisher.*,authorization.*,brand.*');
        return f.body.events?.length >= 7 ? f.body : undefined;
      }, 15_000, 'feed entries'))!;
      expect(all.events.map((e: { event_type: string; entity_id: string }) => `${e.event_type} ${e.entity_id}`)).toEqual([
        'publisher.adagents_discovered feedpub.example',
        'authorization.granted feedpub.example|https://a.example/mcp',
        'authorization.granted feedpub.example|https://b.example/mcp',
        'publisher.adagents_changed feedpub.example',
        'authorization.granted feedpub.example|https://c.example/mcp',
        'authorization.revoked feedpub.example|https://a.example/mcp',
        'brand.updated feedbrand.example',
      ]);
      expect(all.events[0]).toMatchObject({ entity_type: 'publisher', actor: 'api:adagents-revalidate', payload: { publisher_domain: 'feedpub.example', agent_count: 2, discovery_method: 'direct' } });
      expect(all.freshness).toMatchObject({ retention_days: 90, latest_event_created_at: expect.any(String) });

      // Paging: two at a time, each page continuing from the last cursor.
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = (await feed(`?types=publisher.*,authorization.*,brand.*&limit=2${cursor ? `&cursor=${cursor}` : ''}`)).body;
        seen.push(...page.events.map((e: { event_id: string }) => e.event_id));
        cursor = page.cursor;
        if (!page.has_more) break;
      }
      expect(seen).toEqual(all.events.map((e: { event_id: string }) => e.event_id));
      const end = (await feed(`?cursor=${cursor}`)).body;
      expect(end).toMatchObject({ events: [], cursor, has_more: false });

      expect((await feed('?types=brand.*')).body.events.map((e: { event_type: string }) => e.event_type)).toEqual(['brand.updated']);
      expect((await feed('', null)).status).toBe(401);
      expect(await feed('?cursor=nope')).toMatchObject({ status: 400, body: { error: 'Invalid cursor format. Must be a UUID.' } });
      expect(await feed('?limit=0')).toMatchObject({ status: 400, body: { error: 'limit must be between 1 and 10000' } });
      expect(await feed('?limit=x')).toMatchObject({ status: 400, body: { error: 'limit must be an integer' } });
      expect(await feed('?types=Bad*Type')).toMatchObject({ status: 400, body: { error: 'Invalid type filter: Bad*Type' } });
      expect(await feed('?limit=1&limit=2')).toMatchObject({ status: 400, body: { error: 'limit must be provided only once' } });
      expect(await feed('?cursor=00000000-0000-7000-8000-000000000000')).toMatchObject({ status: 410, body: { error: 'cursor_expired' } });

      // The same reads over GraphQL.
      const gql = await graphql(
        gw.url,
        'query($c: String) { registryFeed(types: ["brand.*"], cursor: $c) { entries { eventType entityId } hasMore } publisher(domain: "feedpub.example") { domain adagentsValid authorizedAgents { url } } }',
        { c: null },
        reader,
      );
      expect(gql.body.data!.registryFeed).toEqual({ entries: [{ eventType: 'brand.updated', entityId: 'feedbrand.example' }], hasMore: false });
      expect(gql.body.data!.publisher).toEqual({ domain: 'feedpub.example', adagentsValid: true, authorizedAgents: [{ url: 'https://b.example/mcp' }, { url: 'https://c.example/mcp' }] });
      const sb = await graphql(gw.url, '{ storyboard(id: "capability_discovery") { id phases { steps { id } } } }');
      expect(sb.body.data!.storyboard).toMatchObject({ id: 'capability_discovery' });
      const badTarget = await graphql(gw.url, '{ storyboard(id: "capability_discovery", complianceTarget: "9.9") { id } }');
      expect(badTarget.body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'complianceTarget' });
    } finally {
      await gw.stop();
      await origins.close();
    }
  }, 60_000);
});

/**
 * `types` on both bindings: at most 100 filters (a longer list is 400 naming `types`, not a 500
 * from the database), and a list at the maximum filters as a short one does.
 */
async function typeListBounds(env: Record<string, string>): Promise<void> {
  const origins = await startOrigins({ 'typesbrand.example': { '/.well-known/brand.json': { body: { id: 'tb', names: [{ en: 'Types Brand' }] } } } });
  const gw = await startTestGateway({ ...env, REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
  try {
    const reader = (await issueApiKey(gw.app.store, { org: 'reader', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.brandCrawler.crawl('typesbrand.example');
    const feed = async (types: string[]) => {
      const r = await fetch(`${gw.url}/api/registry/feed?types=${types.join(',')}`, { headers: { authorization: `Bearer ${reader}` } });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    const gql = (types: string[]) => graphql(gw.url, 'query($t: [String!]) { registryFeed(types: $t) { entries { eventType entityId } } }', { t: types }, reader);
    const noise = (n: number) => Array.from({ length: n }, (_, i) => `n${i}.x*`);

    const atMost = [...noise(99), 'brand.updated'];
    const page = (await eventually(async () => {
      const f = await feed(atMost);
      return f.body.events?.length > 0 ? f : undefined;
    }, 15_000, 'the brand entry'))!;
    expect(page.status).toBe(200);
    expect(page.body.events.map((e: { event_type: string; entity_id: string }) => `${e.event_type} ${e.entity_id}`)).toEqual(['brand.updated typesbrand.example']);
    expect((await gql(atMost)).body.data).toEqual({ registryFeed: { entries: [{ eventType: 'brand.updated', entityId: 'typesbrand.example' }] } });

    for (const n of [1000, 101]) {
      expect({ n, ...(await feed([...noise(n - 1), 'brand.updated'])) }).toEqual({ n, status: 400, body: { error: `types holds ${n} filters; at most 100 are allowed` } });
      const refused = await gql([...noise(n - 1), 'brand.updated']);
      expect({ n, error: refused.body.errors?.[0] }).toMatchObject({ n, error: { message: `types holds ${n} filters; at most 100 are allowed`, extensions: { code: 'VALIDATION_ERROR', field: 'types' } } });
    }
    // The live feed looks each entry up in its list: bounded alike.
    const live = overSse(gw.url)(reader, 'subscription($t: [String!]) { registryFeed(types: $t) { eventType } }', { t: noise(101) });
    try {
      await eventually(() => live.errors.length > 0, 10_000, 'the refusal');
      expect(JSON.stringify(live.errors)).toContain('types holds 101 filters; at most 100 are allowed');
      expect(JSON.stringify(live.errors)).toContain('VALIDATION_ERROR');
    } finally {
      live.stop();
    }
  } finally {
    await gw.stop();
    await origins.close();
  }
}

describe('GET /api/registry/feed: long type lists (SQLite)', () => {
  it('over 100 types is 400 naming types on REST and GraphQL; 100 filter as a short list does', () => typeListBounds({}), 60_000);
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'GET /api/registry/feed: long type lists (PostgreSQL)', () => {
  it('over 100 types is 400 naming types on REST and GraphQL; 100 filter as a short list does', async () => {
    const db = await createTestDatabase('adcp_feedtypes');
    try {
      await typeListBounds({ EVENT_STORE_URL: db.url });
    } finally {
      await db.drop();
    }
  }, 60_000);
});

describeWith('Kafka', !!KAFKA_BROKERS, 'the change feed on its Kafka topic', () => {
  it('every entry the REST feed serves is also on KAFKA_FEED_TOPIC, as the entry itself, keyed by entity', async () => {
    const suffix = randomBytes(4).toString('hex');
    const feedTopic = `adcp.registry.feed.it-${suffix}`;
    const origins = await startOrigins({ 'kfeed.example': { '/.well-known/brand.json': { body: { id: 'kf', names: [{ en: 'Kafka Feed Brand' }] } } } });
    const gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: `adcp.events.it-${suffix}`, KAFKA_FEED_TOPIC: feedTopic });
    const consumer = new Kafka({ clientId: 'it', brokers: KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).consumer({ groupId: `it-feed-${suffix}` });
    try {
      const reader = (await issueApiKey(gw.app.store, { org: 'reader', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await gw.app.brandCrawler.crawl('kfeed.example');
      const served = (await eventually(async () => {
        const r = (await (await fetch(`${gw.url}/api/registry/feed?types=brand.*`, { headers: { authorization: `Bearer ${reader}` } })).json()) as { events: Record<string, unknown>[] };
        return r.events.length > 0 ? r.events : undefined;
      }, 60_000, 'the feed entry over REST'))!;

      const seen: { key: string; type: string; entry: Record<string, unknown> }[] = [];
      await consumer.connect();
      await consumer.subscribe({ topic: feedTopic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push({ key: message.key!.toString(), type: message.headers!.type!.toString(), entry: JSON.parse(message.value!.toString()) as Record<string, unknown> });
        },
      });
      const onKafka = (await eventually(() => seen.find((m) => m.entry.event_type === 'brand.updated'), 60_000, 'the entry on the feed topic'))!;
      expect(onKafka).toEqual({ key: 'kfeed.example', type: 'brand.updated', entry: served[0] });
      // Only feed entries travel on the feed topic (storyboard imports at start are entries too).
      expect(seen.every((m) => typeof m.entry.event_id === 'string' && typeof m.entry.entity_type === 'string')).toBe(true);
    } finally {
      await consumer.disconnect();
      await gw.stop();
      await origins.close();
    }
  }, 180_000);
});
