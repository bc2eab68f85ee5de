import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
      'gone.example': {},
      'found.example': { [wk]: { body: { id: 'found', names: [{ en: 'Found' }] } } },
      // What the webhook receiver refuses in a body, refused in a fetched document too.
      'dupe.example': { [wk]: { raw: '{"id":"real","names":[{"en":"Real"}],"id":"shadow"}' } },
      'latin1.example': { [wk]: { raw: Buffer.concat([Buffer.from('{"id":"caf'), Buffer.from([0xe9]), Buffer.from('","names":[{"en":"Caf'), Buffer.from([0xe9]), Buffer.from('"}]}')]) } },
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

  it('a background crawl that finds no brand records nothing (no permanent event per unresolvable domain) and is not repeated within the hour', async () => {
    expect((await bulk({ domains: ['gone.example', 'found.example'] })).status).toBe(200);
    await gw.app.brandCrawler.drained();
    expect(origins.hits.filter((h) => h.host === 'gone.example')).toHaveLength(1);
    expect(await gw.app.store.readStream('brand-gone.example')).toEqual([]);
    expect((await gw.app.store.readStream('brand-found.example')).map((e) => e.type)).toEqual(['BrandCrawled']);
    // Asked again: still null, and not fetched again (its back-off), nor recorded.
    expect((await bulk({ domains: ['gone.example'] })).body.results).toEqual({ 'gone.example': null });
    await gw.app.brandCrawler.drained();
    expect(origins.hits.filter((h) => h.host === 'gone.example')).toHaveLength(1);
    expect(await gw.app.store.readStream('brand-gone.example')).toEqual([]);
  });

  it('a brand.json with a duplicate key or bytes that are not UTF-8 names no brand, and the recorded crawl says why', async () => {
    for (const [domain, why] of [
      ['dupe.example', 'has the key "id" more than once in one object'],
      ['latin1.example', 'is not valid UTF-8'],
    ] as const) {
      const crawled = await graphql(gw.url, 'mutation($d: String!) { crawlBrand(domain: $d) { found name } }', { d: domain }, admin);
      expect({ domain, data: crawled.body.data }).toEqual({ domain, data: { crawlBrand: { found: false, name: null } } });
      const [event] = await gw.app.store.readStream(`brand-${domain}`);
      expect((event!.data as { error?: string }).error).toBe(`https://${domain}/.well-known/brand.json: ${why}`);
    }
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

/** An origin that takes every request and never answers (a wildcard-DNS domain pointed at a tarpit). */
async function startTarpit() {
  const hits: string[] = [];
  const server = http.createServer((req) => void hits.push((req.headers.host ?? '').toLowerCase()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('brand crawls are fair per requester', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  let tarpit: Awaited<ReturnType<typeof startTarpit>>;
  const hanging = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}${i}.tarpit.example`);

  beforeAll(async () => {
    origins = await startOrigins({ 'fair.example': { [wk]: { body: { id: 'fair', names: [{ en: 'Fair' }] } } } });
    tarpit = await startTarpit();
    const hostile = [...hanging('a', 100), ...hanging('c', 300), ...hanging('q', 10_500)].map((d) => `${d}=http://127.0.0.1:${tarpit.port}`);
    // Clients told apart by X-Forwarded-For (one trusted proxy hop), each as an address would be.
    gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: [origins.overrides, ...hostile].join(','), BRAND_RESOLVE_RATE_LIMIT: '1000', TRUST_PROXY: '1', PUBLIC_URL: 'https://registry.example' });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await tarpit?.close();
    await origins?.close();
  });

  const bulkFrom = async (client: string, domains: string[]) => {
    const r = await fetch(`${gw.url}/api/brands/resolve/bulk`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': client }, body: JSON.stringify({ domains }) });
    return { status: r.status, body: (await r.json()) as Record<string, any>, retryAfter: r.headers.get('retry-after') };
  };

  it("one client's 100 domains that never answer do not hold back another client's domain: it is fetched within the anonymous deadline", async () => {
    expect((await bulkFrom('198.51.100.1', hanging('a', 100))).status).toBe(200);
    await eventually(() => tarpit.hits.length >= 4, 5000, 'the hanging crawls running');
    const asked = Date.now();
    expect((await bulkFrom('203.0.113.2', ['fair.example'])).status).toBe(200);
    // First come first served, it would wait for 100 crawls of 10 s, 4 at a time (~250 s).
    await eventually(() => origins.hits.some((h) => h.host === 'fair.example'), 9000, 'fair.example fetched');
    expect(Date.now() - asked).toBeLessThan(9000);
    const resolved = await eventually(async () => (await bulkFrom('203.0.113.2', ['fair.example'])).body.results['fair.example'], 5000, 'fair.example resolved');
    expect(resolved).toMatchObject({ canonical_id: 'fair', brand_name: 'Fair' });
  }, 30_000);

  it('a client past its share of the queue is told so (429 with retry_after), not silently dropped; what it already queued stays pending', async () => {
    const domains = hanging('c', 300);
    expect((await bulkFrom('198.51.100.3', domains.slice(0, 100))).status).toBe(200);
    expect((await bulkFrom('198.51.100.3', domains.slice(100, 200))).status).toBe(200);
    const refused = await bulkFrom('198.51.100.3', domains.slice(200, 300));
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: expect.stringContaining('brand crawls'), retry_after: expect.any(Number) });
    expect(refused.body.retry_after).toBeGreaterThan(0);
    expect(Number(refused.retryAfter)).toBe(refused.body.retry_after);
    // Domains already waiting for their crawl are pending, not new work: asking again is fine.
    expect(await bulkFrom('198.51.100.3', domains.slice(0, 100))).toMatchObject({ status: 200, body: { results: Object.fromEntries(domains.slice(0, 100).map((d) => [d, null])) } });
    // Another client is not affected.
    expect((await bulkFrom('203.0.113.4', ['fair.example'])).status).toBe(200);
  });

  it('a full queue answers 503 with retry_after for the domains it cannot take, never a silent 200', async () => {
    const domains = hanging('q', 10_500);
    let busy: Awaited<ReturnType<typeof bulkFrom>> | undefined;
    for (let i = 0; i < 105 && !busy; i++) {
      const r = await bulkFrom(`10.1.${Math.floor(i / 2)}.1`, domains.slice(i * 100, (i + 1) * 100));
      if (r.status === 503) busy = r;
      else expect({ i, status: r.status }).toEqual({ i, status: 200 });
    }
    expect(busy).toMatchObject({ status: 503, body: { error: expect.stringContaining('busy'), retry_after: expect.any(Number) } });
    expect(Number(busy!.retryAfter)).toBe(busy!.body.retry_after);
  }, 60_000);
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
