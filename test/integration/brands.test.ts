import { randomBytes } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { PG_ADMIN_URL, REDIS_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

const wk = '/.well-known/brand.json';

describe('POST /api/brands/resolve/bulk', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  let admin: string;

  beforeAll(async () => {
    origins = await startOrigins({
      'acme.example': { [wk]: { body: { id: 'acme', names: [{ en: 'Acme' }], logos: [{ url: 'https://cdn.acme.example/logo.svg' }], colors: { primary: '#ff0000' }, agents: [{ type: 'brand', id: 'acme_brand', url: 'https://agent.acme.example/mcp' }] } } },
      'moved.example': { [wk]: { body: { authoritative_location: 'https://cdn.example/brands/moved.json' } } },
      'cdn.example': { '/brands/moved.json': { body: { id: 'moved', names: [{ en: 'Moved Co' }] } } },
      'house.example': {
        [wk]: { body: { house: { domain: 'house.example', name: 'House Inc' }, brands: [{ id: 'house_master', names: [{ en: 'House' }], keller_type: 'master' }, { id: 'tide', names: [{ en: 'Tide' }], keller_type: 'sub_brand', properties: [{ type: 'website', identifier: 'tide.example' }] }] } },
      },
      'tide.example': { [wk]: { body: { house: 'house.example' } } },
      'leaf.example': { [wk]: { body: { id: 'leaf', names: [{ en: 'Leaf' }], house_domain: 'house.example' } } },
      'loop.example': { [wk]: { body: { authoritative_location: 'https://loop.example/.well-known/brand.json' } } },
      'empty.example': { [wk]: { body: { version: '1.0' } } },
    });
    gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides, BRAND_RESOLVE_RATE_LIMIT: '1000' });
    admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, { now: new Date().toISOString() })).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await origins?.close();
  });

  const bulk = async (body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }, url = gw.url) => {
    const r = await fetch(`${url}/api/brands/resolve/bulk`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as Record<string, any>, headers: r.headers };
  };

  it('unknown domains answer null at once and are crawled in the background; then they resolve', async () => {
    const domains = ['ACME.example ', 'acme.example', 'moved.example', 'tide.example', 'house.example', 'leaf.example', 'loop.example', 'empty.example', 'nowhere.example'];
    const first = await bulk({ domains });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body.results)).toEqual(['acme.example', 'moved.example', 'tide.example', 'house.example', 'leaf.example', 'loop.example', 'empty.example', 'nowhere.example']);
    expect(Object.values(first.body.results).every((v) => v === null)).toBe(true);
    await gw.app.brandCrawler.drained();
    const r = (await eventually(async () => {
      const b = await bulk({ domains });
      return b.body.results['acme.example'] && b.body.results['leaf.example'] ? b.body.results : undefined;
    }, 10_000, 'crawled'))!;
    expect(r['acme.example']).toMatchObject({ canonical_id: 'acme', canonical_domain: 'acme.example', brand_name: 'Acme', names: [{ en: 'Acme' }], logo: 'https://cdn.acme.example/logo.svg', colors: { primary: '#ff0000' }, brand_agent_url: 'https://agent.acme.example/mcp', relationship_trust: 'standalone', source: 'brand_json' });
    expect(r['moved.example']).toMatchObject({ canonical_id: 'moved', brand_name: 'Moved Co' });
    expect(r['tide.example']).toMatchObject({ canonical_id: 'tide', brand_name: 'Tide', relationship_trust: 'inline', house_domain: 'house.example', house_name: 'House Inc', keller_type: 'sub_brand' });
    expect(r['house.example']).toMatchObject({ canonical_id: 'house_master', keller_type: 'master', relationship_trust: 'inline' });
    expect(r['leaf.example']).toMatchObject({ canonical_id: 'leaf', relationship_trust: 'leaf_only', claimed_house_domain: 'house.example' });
    expect(r['leaf.example']).not.toHaveProperty('house_domain');
    expect(r['loop.example']).toBeNull(); // more than three hops
    expect(r['empty.example']).toBeNull();
    expect(r['nowhere.example']).toBeNull();
  });

  it('an operator registration outranks the crawl (GraphQL, admin only)', async () => {
    const denied = await graphql(gw.url, 'mutation { registerBrand(domain: "acme.example", identity: {brandName: "X"}) { domain } }');
    expect(denied.body.errors![0]!.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
    const ok = await graphql(gw.url, 'mutation($i: BrandIdentityInput!) { registerBrand(domain: "acme.example", identity: $i) { canonicalId name source } }', { i: { canonicalId: 'acme_hosted', brandName: 'ACME Corp', names: [{ language: 'en', name: 'ACME Corp' }] } }, admin);
    expect(ok.body).toMatchObject({ data: { registerBrand: { canonicalId: 'acme_hosted', name: 'ACME Corp', source: 'HOSTED' } } });
    expect(ok.body.errors).toBeUndefined();
    expect((await bulk({ domains: ['acme.example'] })).body.results['acme.example']).toMatchObject({ canonical_id: 'acme_hosted', brand_name: 'ACME Corp', source: 'hosted' });
    const q = await graphql(gw.url, '{ brands(domains: ["acme.example", "nowhere.example"]) { domain found source } }');
    expect(q.body.data!.brands).toEqual([
      { domain: 'acme.example', found: true, source: 'HOSTED' },
      { domain: 'nowhere.example', found: false, source: null },
    ]);
  });

  it('every error status: bad JSON, content type, domain list → 400 {error}; over 100 → 400; over 16 KB → 413', async () => {
    expect(await bulk('{ nope')).toMatchObject({ status: 400, body: { error: expect.any(String) } });
    expect((await bulk('domains=a.example', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(400);
    expect((await bulk({ domains: 'a.example' })).body).toEqual({ error: 'domains array required' });
    expect((await bulk({ domains: [] })).status).toBe(400);
    for (const bad of ['localhost', '10.0.0.1', 'a.example:443', 'https://a.example', 'a_b.example', 42]) {
      expect(await bulk({ domains: [bad] })).toMatchObject({ status: 400, body: { error: 'All domains must be bare multi-label DNS hostnames' } });
    }
    expect(await bulk({ domains: Array.from({ length: 101 }, (_, i) => `d${i}.example`) })).toMatchObject({ status: 400, body: { error: 'Maximum 100 domains per request' } });
    expect((await bulk({ domains: Array.from({ length: 100 }, (_, i) => `d${i}.example`) })).status).toBe(200);
    expect((await bulk({ domains: ['a.example'], pad: 'x'.repeat(17 * 1024) })).status).toBe(413);
  });
});

/** Fixed one-minute windows: start a burst well inside one, so it is counted in one window. */
async function awayFromMinuteEdge(marginMs = 5000): Promise<void> {
  const toEdge = 60_000 - (Date.now() % 60_000);
  if (toEdge < marginMs) await new Promise((r) => setTimeout(r, toEdge + 100));
}

const call = (url: string) => fetch(`${url}/api/brands/resolve/bulk`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ domains: ['a.example'] }) });

describe('bulk brand resolution rate limit', () => {
  it('20 requests a minute per client; the 21st and later get 429 {error, retry_after} with Retry-After, even when concurrent', async () => {
    const gw = await startTestGateway({});
    try {
      await awayFromMinuteEdge();
      const answers = await Promise.all(Array.from({ length: 30 }, () => call(gw.url)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.filter((s) => s === 429)).toHaveLength(10);
      const limited = answers.find((r) => r.status === 429)!;
      const body = (await limited.json()) as { error: string; retry_after: number };
      expect(body.error).toBeTruthy();
      expect(body.retry_after).toBeGreaterThan(0);
      expect(Number(limited.headers.get('retry-after'))).toBe(body.retry_after);
    } finally {
      await gw.stop();
    }
  });
});

describe('bulk brand resolution rate limit behind a proxy', () => {
  it('with TRUST_PROXY=1 each client named by X-Forwarded-For has its own budget', async () => {
    const gw = await startTestGateway({ TRUST_PROXY: '1', PUBLIC_URL: 'https://ads.example.com' });
    try {
      await awayFromMinuteEdge();
      const from = (client: string) => fetch(`${gw.url}/api/brands/resolve/bulk`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': client }, body: JSON.stringify({ domains: ['a.example'] }) });
      const a = await Promise.all(Array.from({ length: 21 }, () => from('198.51.100.7')));
      expect(a.filter((r) => r.status === 429)).toHaveLength(1);
      expect((await from('203.0.113.9')).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'bulk brand resolution rate limit across instances', () => {
  it('two gateways on one PostgreSQL share the 20-a-minute budget', async () => {
    const db = await createTestDatabase('adcp_rl');
    const a = await startTestGateway({ EVENT_STORE_URL: db.url });
    const b = await startTestGateway({ EVENT_STORE_URL: db.url });
    try {
      await awayFromMinuteEdge();
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => call(i % 2 ? a.url : b.url)));
      expect(answers.filter((r) => r.status === 200)).toHaveLength(20);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(10);
    } finally {
      await a.stop();
      await b.stop();
      await db.drop();
    }
  }, 60_000);
});

describeWith('Redis', Boolean(REDIS_URL), 'bulk brand resolution rate limit in Redis', () => {
  it('two gateways with separate databases share the budget through REDIS_URL, and a restart forgets nothing', async () => {
    const redis = { REDIS_URL: REDIS_URL!, REDIS_KEY_PREFIX: `adcp-test-${randomBytes(4).toString('hex')}:` };
    const a = await startTestGateway(redis);
    const b = await startTestGateway(redis);
    try {
      await awayFromMinuteEdge(20_000); // the restart below must land in the same window
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => call(i % 2 ? a.url : b.url)));
      expect(answers.filter((r) => r.status === 200)).toHaveLength(20);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(10);
      await a.stop();
      const again = await startTestGateway({ ...redis, DATA_DIR: a.dataDir });
      try {
        const after = await call(again.url);
        expect(after.status).toBe(429);
        expect(Number(after.headers.get('retry-after'))).toBeGreaterThan(0);
      } finally {
        await again.stop();
      }
    } finally {
      await a.stop();
      await b.stop();
    }
  }, 60_000);
});
