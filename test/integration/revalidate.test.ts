import { randomBytes } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { publisherQueries } from '../../projections/publishers';
import { startTestGateway } from '../support/gateway';
import { PG_ADMIN_URL, REDIS_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

const WK = '/.well-known/adagents.json';
const agent = { url: 'https://sales.example/mcp', authorized_for: 'Display', authorization_type: 'property_tags', property_tags: ['all'] };
// Labels of at most 63 characters, names of up to 253: what DNS allows.
const LONG_DOMAIN = `${'a'.repeat(63)}.${'b'.repeat(63)}.example`;
const LONGEST_DOMAIN = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(53)}.example`;
const valid = (extra: Record<string, unknown> = {}) => ({ $schema: 'https://adcontextprotocol.org/schemas/v3/adagents.json', last_updated: '2026-11-23T10:00:00Z', authorized_agents: [agent], properties: [{ property_id: 'home', publisher_domain: 'pub.example', tags: ['all'] }], ...extra });

describe('POST /api/registry/publisher/{domain}/adagents/revalidate', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  let admin: string;
  let buyer: string;

  beforeAll(async () => {
    origins = await startOrigins({
      'pub.example': { [WK]: { body: valid() } },
      'bad.example': { [WK]: { body: valid({ authorized_agents: [{ ...agent, url: 'http://sales.example' }] }) } },
      'hop.example': { [WK]: { status: 301, headers: { location: 'https://www.hop.example/.well-known/adagents.json' } } },
      'www.hop.example': { [WK]: { body: valid() } },
      'away.example': { [WK]: { status: 302, headers: { location: 'https://elsewhere.example/adagents.json' } } },
      'elsewhere.example': { '/adagents.json': { body: valid() } },
      'ptr.example': { [WK]: { body: { authoritative_location: 'https://cdn.ptr-host.example/files/adagents.json' } } },
      'cdn.ptr-host.example': { '/files/adagents.json': { body: valid() } },
      'managed.example': { '/ads.txt': { raw: 'example.com, 1, DIRECT\nMANAGERDOMAIN=manager.example\n', headers: { 'content-type': 'text/plain' } } },
      'manager.example': { [WK]: { body: valid({ authorized_agents: [{ ...agent, authorization_type: 'publisher_properties', publisher_properties: [{ publisher_domain: 'managed.example', selection_type: 'all' }] }] }) } },
      'huge.example': { [WK]: { raw: `{"authorized_agents":[],"pad":"${'x'.repeat(10 * 1024 * 1024 + 10)}"}` } },
      'notjson.example': { [WK]: { raw: '<html>' } },
      // Parse, but hold what the log cannot store or a walk cannot survive: each is a verdict, not a 400.
      'nul.example': { [WK]: { raw: '{"authorized_agents":[],"contact":{"name":"a\\u0000b"}}' } },
      'lone.example': { [WK]: { raw: '{"authorized_agents":[],"contact":{"name":"a\\ud800b"}}' } },
      'deep.example': { [WK]: { raw: `{"authorized_agents":[],"x":${'['.repeat(100)}${']'.repeat(100)}}` } },
      'gone.example': {},
      // What the webhook receiver refuses in a body, refused in a publisher's file too.
      'dupe.example': { [WK]: { raw: `{"authorized_agents":[],"authorized_agents":${JSON.stringify([agent])}}` } },
      'latin1.example': { [WK]: { raw: Buffer.concat([Buffer.from('{"authorized_agents":[],"contact":{"name":"Caf'), Buffer.from([0xe9]), Buffer.from('"}}')]) } },
      [LONG_DOMAIN]: { [WK]: { body: valid() } },
      [LONGEST_DOMAIN]: { [WK]: { body: valid() } },
      'slow.example': { [WK]: { body: valid(), delayMs: 12_000 } },
    });
    gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    const now = { now: new Date().toISOString() };
    admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, now)).key;
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await origins?.close();
  });

  const revalidate = async (domain: string, key: string | null = admin, query = '') => {
    const r = await fetch(`${gw.url}/api/registry/publisher/${encodeURIComponent(domain)}/adagents/revalidate${query}`, { method: 'POST', headers: key ? { authorization: `Bearer ${key}` } : {} });
    return { status: r.status, body: (await r.json()) as Record<string, any>, headers: r.headers };
  };

  it('a valid file: verdict, counts, fetch metadata, both enums; authorized agents and properties in the read model', async () => {
    const r = await revalidate('pub.example', admin, '?force=1');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ domain: 'pub.example', adagents_valid: true, properties_count: 1, authorized_agents_count: 1, status_code: 200, resolved_url: 'https://pub.example/.well-known/adagents.json', discovery_method: 'direct', authority: 'domain', issues: { errors: [], warnings: [] } });
    expect(r.body).not.toHaveProperty('error');
    expect(Date.parse(r.body.checked_at)).not.toBeNaN();
    expect(await publisherQueries.agents(gw.app.readModels, 'pub.example')).toEqual([{ agent_url: 'https://sales.example/mcp', authorized_for: 'Display', authorization_type: 'property_tags' }]);
    expect(await publisherQueries.properties(gw.app.readModels, 'pub.example')).toEqual([{ property_id: 'home', publisher_domain: 'pub.example', tags: ['all'] }]);
  });

  it('an invalid file: error and issues with field paths', async () => {
    const r = await revalidate('bad.example');
    expect(r.body).toMatchObject({ adagents_valid: false, error: 'Agent URL must use HTTPS', issues: { errors: [{ field: 'authorized_agents[0].url', message: 'Agent URL must use HTTPS', severity: 'error' }] } });
  });

  it('follows a same-site redirect; refuses a cross-site one', async () => {
    expect((await revalidate('hop.example')).body).toMatchObject({ adagents_valid: true, resolved_url: 'https://www.hop.example/.well-known/adagents.json', discovery_method: 'direct' });
    expect((await revalidate('away.example')).body).toMatchObject({ adagents_valid: false, issues: { errors: [{ field: 'network', message: expect.stringContaining('cross-registrable-domain') }] } });
  });

  it('authoritative_location and the ads.txt MANAGERDOMAIN fallback', async () => {
    expect((await revalidate('ptr.example')).body).toMatchObject({ adagents_valid: true, discovery_method: 'authoritative_location', authority: 'domain', resolved_url: 'https://cdn.ptr-host.example/files/adagents.json' });
    const m = await revalidate('managed.example');
    expect(m.body).toMatchObject({ adagents_valid: true, discovery_method: 'ads_txt_manager', authority: 'adagents_authoritative', manager_domain: 'manager.example' });
    expect(m.body.issues.warnings).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'managerdomain' })]));
  });

  it('oversize, not JSON (or JSON holding NUL, a lone surrogate or 100 levels of nesting), missing', async () => {
    expect((await revalidate('huge.example')).body).toMatchObject({ adagents_valid: false, issues: { errors: [{ field: 'network', message: 'Response exceeded 10485760 bytes' }] } });
    expect((await revalidate('notjson.example')).body).toMatchObject({ adagents_valid: false, issues: { errors: [{ field: 'json' }] } });
    const unstorable = { 'nul.example': 'contains U+0000 (NUL) or an unpaired surrogate', 'lone.example': 'contains U+0000 (NUL) or an unpaired surrogate', 'deep.example': 'nests deeper than 64 levels' };
    for (const [domain, why] of Object.entries(unstorable)) {
      const r = await revalidate(domain);
      expect({ domain, status: r.status, body: r.body }).toMatchObject({ domain, status: 200, body: { adagents_valid: false, issues: { errors: [{ field: 'json', message: `Invalid JSON response from https://${domain}/.well-known/adagents.json: ${why}` }] } } });
    }
    expect((await revalidate('gone.example')).body).toMatchObject({ adagents_valid: false, status_code: 404, error: 'File not found at https://gone.example/.well-known/adagents.json' });
  });

  it('a file with a duplicate key, or bytes that are not UTF-8, is invalid JSON to the validator, which says why', async () => {
    expect((await revalidate('dupe.example')).body).toMatchObject({ adagents_valid: false, issues: { errors: [{ field: 'json', message: 'Invalid JSON response from https://dupe.example/.well-known/adagents.json: has the key "authorized_agents" more than once in one object' }] } });
    expect((await revalidate('latin1.example')).body).toMatchObject({ adagents_valid: false, issues: { errors: [{ field: 'json', message: 'Invalid JSON response from https://latin1.example/.well-known/adagents.json: is not valid UTF-8' }] } });
  });

  it('a domain as long as DNS allows (253 characters) is revalidated; a longer one is 400 naming the domain', async () => {
    expect(LONGEST_DOMAIN).toHaveLength(253);
    for (const domain of [LONG_DOMAIN, LONGEST_DOMAIN]) {
      const r = await revalidate(domain);
      expect({ status: r.status, domain: r.body.domain, valid: r.body.adagents_valid }).toEqual({ status: 200, domain, valid: true });
    }
    expect(await revalidate(`e${LONGEST_DOMAIN}`)).toMatchObject({ status: 400, body: { error: 'domain is longer than 253 characters, the most DNS allows' } });
    expect(await revalidate(`${'x'.repeat(2000)}.example`)).toMatchObject({ status: 400, body: { error: 'domain is longer than 253 characters, the most DNS allows' } });
  });

  it('a slow origin is cut off by the 10 s deadline and reported as a timeout', async () => {
    const r = await revalidate('slow.example');
    expect(r.body).toMatchObject({ adagents_valid: false, issues: { errors: [{ field: 'timeout', message: 'Request timed out' }] } });
  }, 30_000);

  it('every error status: 401, 403, 400 for bad domains, 429 with retry_after and Retry-After', async () => {
    expect(await revalidate('pub2.example', null)).toMatchObject({ status: 401, body: { error: 'Authentication required' } });
    expect(await revalidate('pub2.example', buyer)).toMatchObject({ status: 403, body: { error: 'Admin access required' } });
    for (const bad of ['127.0.0.1', 'localhost', 'pub.example:8443', '[::1]', 'under_score.example', '169.254.169.254']) {
      expect(await revalidate(bad)).toMatchObject({ status: 400, body: { error: 'Invalid domain' } });
    }
    const again = await revalidate('pub.example');
    expect(again.status).toBe(429);
    expect(again.body).toMatchObject({ error: 'Rate limit exceeded for this domain', retry_after: expect.any(Number) });
    expect(again.body.retry_after).toBeGreaterThan(0);
    expect(again.body.retry_after).toBeLessThanOrEqual(300);
    expect(Number(again.headers.get('retry-after'))).toBe(again.body.retry_after);
  });
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'revalidation rate limits across instances', () => {
  it('two gateways on one PostgreSQL: one revalidation per domain per 5 minutes in all', async () => {
    const origins = await startOrigins({ 'shared.example': { [WK]: { body: valid() } } });
    const db = await createTestDatabase('adcp_rv');
    const a = await startTestGateway({ EVENT_STORE_URL: db.url, REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    const b = await startTestGateway({ EVENT_STORE_URL: db.url, REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    try {
      const key = (await issueApiKey(a.app.store, { org: 'ops', role: 'admin' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await fetch(`${b.url}/readyz`)).status === 200 && (await fetch(`${a.url}/readyz`)).status === 200, 20_000, 'both ready');
      const call = (url: string, domain = 'shared.example') => fetch(`${url}/api/registry/publisher/${domain}/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
      // b learns a's key through its projections; an invalid domain (400 once authenticated) takes no slot.
      await eventually(async () => (await call(b.url, 'localhost')).status === 400, 20_000, 'key known to b');
      const statuses = (await Promise.all(Array.from({ length: 6 }, (_, i) => call(i % 2 ? a.url : b.url)))).map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    } finally {
      await a.stop();
      await b.stop();
      await db.drop();
      await origins.close();
    }
  }, 60_000);
});

describeWith('Redis', Boolean(REDIS_URL), 'revalidation rate limits in Redis', () => {
  it('two gateways with separate databases and one Redis: one revalidation per domain per 5 minutes in all', async () => {
    const origins = await startOrigins({ 'redis-shared.example': { [WK]: { body: valid() } } });
    const redis = { REDIS_URL: REDIS_URL!, REDIS_KEY_PREFIX: `adcp-test-${randomBytes(4).toString('hex')}:`, REGISTRY_ORIGIN_OVERRIDES: origins.overrides };
    const a = await startTestGateway(redis);
    const b = await startTestGateway(redis);
    try {
      const now = { now: new Date().toISOString() };
      const keys = [(await issueApiKey(a.app.store, { org: 'ops', role: 'admin' }, now)).key, (await issueApiKey(b.app.store, { org: 'ops', role: 'admin' }, now)).key];
      await eventually(async () => (await fetch(`${b.url}/readyz`)).status === 200 && (await fetch(`${a.url}/readyz`)).status === 200, 20_000, 'both ready');
      const call = (i: number) =>
        fetch(`${[a.url, b.url][i % 2]}/api/registry/publisher/redis-shared.example/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${keys[i % 2]}` } });
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => call(i)));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 429, 429, 429, 429, 429]);
      const limited = answers.find((r) => r.status === 429)!;
      const body = (await limited.json()) as { error: string; retry_after: number };
      expect(body).toMatchObject({ error: 'Rate limit exceeded for this domain' });
      expect(body.retry_after).toBeGreaterThan(290);
      expect(Number(limited.headers.get('retry-after'))).toBe(body.retry_after);
    } finally {
      await a.stop();
      await b.stop();
      await origins.close();
    }
  }, 60_000);
});
