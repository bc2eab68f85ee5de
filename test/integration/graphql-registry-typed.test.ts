import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

const BRAND = '/.well-known/brand.json';
const ADAGENTS = '/.well-known/adagents.json';
const agent = { url: 'https://sales.example/mcp', authorized_for: 'Display', authorization_type: 'property_tags', property_tags: ['all'] };
const property = { property_id: 'home', property_type: 'website', name: 'Typed Home', identifiers: [{ type: 'domain', value: 'typedpub.example' }], tags: ['all'] };

const BRAND_FIELDS = 'domain found canonicalId name names { language name } kellerType relationship house { domain name confirmed } brandAgentUrl logoUrl colors { role value } agents { type id url } source crawledAt';
const PUBLISHER_FIELDS = 'domain adagentsValid lastCheckTransient checkedAt error findings { severity field message suggestion } discoveryMethod authority statusCode resolvedUrl authorizedAgents { url authorizedFor authorizationType } properties { propertyId propertyType name identifiers { type value } tags }';

// Served by reference: a test swaps the file for an outage.
const typedpub: Record<string, { status?: number; body?: unknown }> = { [ADAGENTS]: { body: { last_updated: '2026-11-23T10:00:00Z', authorized_agents: [agent], properties: [property] } } };

describe('the registry on the typed GraphQL graph', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  let admin: string;
  let buyer: string;

  beforeAll(async () => {
    origins = await startOrigins({
      'acme.example': { [BRAND]: { body: { id: 'acme', names: [{ en: 'Acme' }, { fr: 'Acmé' }], logos: [{ url: 'https://cdn.acme.example/logo.svg' }], colors: { primary: '#ff0000' }, agents: [{ type: 'brand', id: 'acme_brand', url: 'https://agent.acme.example/mcp' }] } } },
      'house.example': { [BRAND]: { body: { house: { domain: 'house.example', name: 'House Inc' }, brands: [{ id: 'house_master', names: [{ en: 'House' }], keller_type: 'master' }, { id: 'tide', names: [{ en: 'Tide' }], keller_type: 'sub_brand', properties: [{ type: 'website', identifier: 'tide.example' }] }] } } },
      'tide.example': { [BRAND]: { body: { house: 'house.example' } } },
      'leaf.example': { [BRAND]: { body: { id: 'leaf', names: [{ en: 'Leaf' }], house_domain: 'house.example' } } },
      'nobrand.example': { [BRAND]: { body: { version: '1.0' } } },
      'typedpub.example': typedpub,
      'typedbad.example': { [ADAGENTS]: { body: { $schema: 'https://adcontextprotocol.org/schemas/v3/adagents.json', last_updated: '2026-11-23T10:00:00Z', authorized_agents: [{ ...agent, url: 'http://sales.example' }] } } },
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

  it('brands: crawled identities with their hierarchy, logo, colors and agents; unknown domains found: false; a registration outranks the crawl', async () => {
    for (const d of ['acme.example', 'tide.example', 'leaf.example', 'nobrand.example']) {
      const crawled = await graphql(gw.url, `mutation($d: String!) { crawlBrand(domain: $d) { domain found } }`, { d }, admin);
      expect(crawled.body.data!.crawlBrand).toEqual({ domain: d, found: d !== 'nobrand.example' });
    }
    const q = await graphql(gw.url, `query($d: [String!]!) { brands(domains: $d) { ${BRAND_FIELDS} } }`, { d: [' ACME.example', 'tide.example', 'leaf.example', 'acme.example', 'nobrand.example', 'never.example'] });
    expect(q.body.errors).toBeUndefined();
    const [acme, tide, leaf, nobrand, never] = q.body.data!.brands as Record<string, any>[];
    expect(q.body.data!.brands).toHaveLength(5);
    expect(acme).toEqual({
      domain: 'acme.example',
      found: true,
      canonicalId: 'acme',
      name: 'Acme',
      names: [{ language: 'en', name: 'Acme' }, { language: 'fr', name: 'Acmé' }],
      kellerType: null,
      relationship: 'STANDALONE',
      house: null,
      brandAgentUrl: 'https://agent.acme.example/mcp',
      logoUrl: 'https://cdn.acme.example/logo.svg',
      colors: [{ role: 'primary', value: '#ff0000' }],
      agents: [{ type: 'brand', id: 'acme_brand', url: 'https://agent.acme.example/mcp' }],
      source: 'BRAND_JSON',
      crawledAt: expect.any(String),
    });
    expect(tide).toMatchObject({ canonicalId: 'tide', name: 'Tide', kellerType: 'sub_brand', relationship: 'INLINE', house: { domain: 'house.example', name: 'House Inc', confirmed: true } });
    expect(leaf).toMatchObject({ canonicalId: 'leaf', relationship: 'LEAF_ONLY', house: { domain: 'house.example', name: null, confirmed: false } });
    expect(nobrand).toEqual(expect.objectContaining({ domain: 'nobrand.example', found: false, name: null, names: [], house: null, source: null, crawledAt: expect.any(String) }));
    expect(never).toEqual(expect.objectContaining({ domain: 'never.example', found: false, crawledAt: null }));

    const registered = await graphql(
      gw.url,
      `mutation($i: BrandIdentityInput!) { registerBrand(domain: "tide.example", identity: $i) { ${BRAND_FIELDS} } }`,
      { i: { brandName: 'Tide Hosted', canonicalId: 'tide_hosted', kellerType: 'sub_brand', houseDomain: 'HOUSE.example', houseName: 'House Inc', colors: [{ role: 'primary', value: '#00f' }], logoUrl: 'https://cdn.tide.example/logo.png' } },
      admin,
    );
    expect(registered.body.errors).toBeUndefined();
    expect(registered.body.data!.registerBrand).toMatchObject({ found: true, name: 'Tide Hosted', names: [{ language: 'en', name: 'Tide Hosted' }], source: 'HOSTED', relationship: 'INLINE', house: { domain: 'house.example', name: 'House Inc', confirmed: true }, colors: [{ role: 'primary', value: '#00f' }], logoUrl: 'https://cdn.tide.example/logo.png' });
    const after = await graphql(gw.url, '{ brands(domains: ["tide.example"]) { canonicalId source crawledAt } }');
    expect(after.body.data!.brands).toEqual([{ canonicalId: 'tide_hosted', source: 'HOSTED', crawledAt: expect.any(String) }]);
  });

  it('registerBrand and brands refuse bad input at its field (VALIDATION_ERROR, never an internal error); only an admin registers', async () => {
    const register = (identity: Record<string, unknown>, key: string | null = admin, domain = 'field.example') =>
      graphql(gw.url, 'mutation($d: String!, $i: BrandIdentityInput!) { registerBrand(domain: $d, identity: $i) { domain } }', { d: domain, i: identity }, key ?? undefined);
    const cases: [Record<string, unknown>, string, string?][] = [
      [{ brandName: '  ' }, 'identity.brandName'],
      [{ brandName: 'x'.repeat(201) }, 'identity.brandName'],
      [{ brandName: 'Ok', names: [{ language: 'en', name: 'Ok' }, { language: 'not a tag', name: 'Ok' }] }, 'identity.names[1].language'],
      [{ brandName: 'Ok', names: [{ language: 'en', name: '' }] }, 'identity.names[0].name'],
      [{ brandName: 'Ok', canonicalId: 'has space' }, 'identity.canonicalId'],
      [{ brandName: 'Ok', houseDomain: 'localhost' }, 'identity.houseDomain'],
      [{ brandName: 'Ok', logoUrl: 'http://cdn.example/logo.png' }, 'identity.logoUrl'],
      [{ brandName: 'Ok', brandAgentUrl: 'javascript:alert(1)' }, 'identity.brandAgentUrl'],
      [{ brandName: 'Ok', colors: [{ role: 'primary', value: 'red' }] }, 'identity.colors[0].value'],
      [{ brandName: 'Ok', kellerType: 'Master Brand' }, 'identity.kellerType'],
      [{ brandName: 'Ok' }, 'domain', 'https://field.example'],
    ];
    for (const [identity, field, domain] of cases) {
      const r = await register(identity, admin, domain);
      expect({ identity, data: r.body.data, extensions: r.body.errors?.[0]?.extensions }).toEqual({ identity, data: null, extensions: { code: 'VALIDATION_ERROR', field } });
    }
    expect((await register({ brandName: 'Ok' }, buyer)).body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
    expect((await register({ brandName: 'Ok' }, null)).body.errors![0]!.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
    const badDomain = await graphql(gw.url, '{ brands(domains: ["ok.example", "10.0.0.1"]) { domain } }');
    expect(badDomain.body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'domains[1]' });
    const tooMany = await graphql(gw.url, 'query($d: [String!]!) { brands(domains: $d) { domain } }', { d: Array.from({ length: 101 }, (_, i) => `d${i}.example`) });
    expect(tooMany.body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'domains' });
  });

  it('publisher: the verdict with typed findings, agents and properties; revalidatePublisher is admin only and limited per domain', async () => {
    expect((await graphql(gw.url, '{ publisher(domain: "typedpub.example") { domain } }')).body.data!.publisher).toBeNull();
    expect((await graphql(gw.url, 'mutation { revalidatePublisher(domain: "typedpub.example") { domain } }', undefined, buyer)).body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
    const good = await graphql(gw.url, `mutation { revalidatePublisher(domain: "TypedPub.example") { ${PUBLISHER_FIELDS} } }`, undefined, admin);
    expect(good.body.errors).toBeUndefined();
    expect(good.body.data!.revalidatePublisher).toEqual({
      domain: 'typedpub.example',
      adagentsValid: true,
      lastCheckTransient: false,
      checkedAt: expect.any(String),
      error: null,
      findings: [{ severity: 'WARNING', field: '$schema', message: 'Consider adding $schema field for validation', suggestion: expect.stringContaining('$schema') }],
      discoveryMethod: 'direct',
      authority: 'domain',
      statusCode: 200,
      resolvedUrl: 'https://typedpub.example/.well-known/adagents.json',
      authorizedAgents: [{ url: 'https://sales.example/mcp', authorizedFor: 'Display', authorizationType: 'property_tags' }],
      properties: [{ propertyId: 'home', propertyType: 'website', name: 'Typed Home', identifiers: [{ type: 'domain', value: 'typedpub.example' }], tags: ['all'] }],
    });
    // The same verdict, read by anyone.
    const read = await graphql(gw.url, `{ publisher(domain: "typedpub.example") { ${PUBLISHER_FIELDS} } }`);
    expect(read.body.data!.publisher).toEqual(good.body.data!.revalidatePublisher);

    const again = await graphql(gw.url, 'mutation { revalidatePublisher(domain: "typedpub.example") { domain } }', undefined, admin);
    expect(again.body.errors![0]).toMatchObject({ message: expect.stringMatching(/^Rate limit exceeded for this domain; try again in \d+ s$/), extensions: { code: 'RATE_LIMITED', field: 'domain' } });
    // An outage says nothing about the file: the verdict and agents stay, the last check's error shows.
    await gw.app.rateLimiter.release('revalidate-domain:typedpub.example');
    typedpub[ADAGENTS] = { status: 503, body: {} };
    const outage = await graphql(gw.url, 'mutation { revalidatePublisher(domain: "typedpub.example") { adagentsValid lastCheckTransient error findings { severity field } authorizedAgents { url } } }', undefined, admin);
    expect(outage.body.data!.revalidatePublisher).toEqual({ adagentsValid: true, lastCheckTransient: true, error: expect.stringContaining('503'), findings: [{ severity: 'ERROR', field: 'http_status' }], authorizedAgents: [{ url: 'https://sales.example/mcp' }] });
    const invalidName = await graphql(gw.url, 'mutation { revalidatePublisher(domain: "not a domain") { domain } }', undefined, admin);
    expect(invalidName.body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'domain' });
    expect((await graphql(gw.url, '{ publisher(domain: "a b") { domain } }')).body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'domain' });

    const bad = await graphql(gw.url, `mutation { revalidatePublisher(domain: "typedbad.example") { adagentsValid findings { severity field message } authorizedAgents { url } } }`, undefined, admin);
    expect(bad.body.data!.revalidatePublisher).toMatchObject({ adagentsValid: false, authorizedAgents: [] });
    const findings = bad.body.data!.revalidatePublisher.findings as { severity: string; field: string; message: string }[];
    expect(findings.length).toBeGreaterThan(0);
    expect(findings.every((f) => f.severity === 'ERROR' || f.severity === 'WARNING')).toBe(true);
    expect(findings).toContainEqual({ severity: 'ERROR', field: 'authorized_agents[0].url', message: expect.stringMatching(/https/i) });
  });

  it('storyboard and storyboards: typed phases and steps; NOT_FOUND at id, a bad target at complianceTarget', async () => {
    const list = await graphql(gw.url, '{ storyboards { id title category } }');
    const ids = (list.body.data!.storyboards as { id: string; title: string }[]).map((s) => s.id);
    expect(ids).toContain('idempotency');
    const sb = await graphql(gw.url, '{ storyboard(id: "idempotency") { id title category adcpVersion requestedComplianceTarget testKit { id name } phases { id title steps { id title description expectedOutput task validationCount } } } }');
    expect(sb.body.errors).toBeUndefined();
    const s = sb.body.data!.storyboard as Record<string, any>;
    expect(s).toMatchObject({ id: 'idempotency', title: 'Idempotency enforcement', category: 'core', testKit: { id: 'acme_outdoor', name: 'Acme Outdoor' } });
    expect(s.phases[0]).toMatchObject({ id: 'capability_discovery', title: 'Capability discovery' });
    expect(s.phases[0].steps[0]).toMatchObject({ id: 'get_capabilities', title: 'Check idempotency capability declaration', task: 'get_adcp_capabilities', description: expect.stringContaining('get_adcp_capabilities'), expectedOutput: expect.stringContaining('replay_ttl_seconds') });
    expect(s.phases[0].steps[0].validationCount).toBeGreaterThan(0);
    expect((await graphql(gw.url, '{ storyboard(id: "no_such_storyboard") { id } }')).body.errors![0]!.extensions).toEqual({ code: 'NOT_FOUND', field: 'id' });
    expect((await graphql(gw.url, '{ storyboards(complianceTarget: "9.9") { id } }')).body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'complianceTarget' });
  });

  it('registryFeed: typed entries with positions and a cursor; newest answers the last ones; bad arguments refused at their field', async () => {
    const page = async (args: string, key: string | null = buyer) => graphql(gw.url, `{ registryFeed(${args}) { entries { position eventId eventType entityType entityId actor createdAt } cursor hasMore lastPosition freshness { retentionDays latestEventCreatedAt } } }`, undefined, key ?? undefined);
    const all = (await eventually(async () => {
      const r = await page('types: ["brand.*"]');
      return (r.body.data?.registryFeed?.entries?.length ?? 0) >= 4 ? r.body.data!.registryFeed : undefined;
    }, 15_000, 'brand entries'))!;
    expect(all.entries.map((e: { entityId: string }) => e.entityId)).toEqual(['acme.example', 'tide.example', 'leaf.example', 'tide.example']);
    expect(all.entries[0]).toEqual({ position: expect.any(Number), eventId: expect.any(String), eventType: 'brand.updated', entityType: 'brand', entityId: 'acme.example', actor: 'brand-crawler', createdAt: expect.any(String) });
    expect(all.entries[3].actor).toBe('api:register-brand'); // a crawl that found no brand records no entry
    expect(all).toMatchObject({ hasMore: false, cursor: all.entries[3].eventId, lastPosition: all.entries[3].position, freshness: { retentionDays: 90 } });

    const first = (await page('types: ["brand.*"], limit: 2')).body.data!.registryFeed;
    expect(first.entries.map((e: { entityId: string }) => e.entityId)).toEqual(['acme.example', 'tide.example']);
    expect(first.hasMore).toBe(true);
    const next = (await page(`types: ["brand.*"], limit: 2, cursor: "${first.cursor}"`)).body.data!.registryFeed;
    expect(next.entries.map((e: { entityId: string }) => e.entityId)).toEqual(['leaf.example', 'tide.example']);
    const newest = (await page('types: ["brand.*"], limit: 2, newest: true')).body.data!.registryFeed;
    expect(newest).toMatchObject({ hasMore: false, lastPosition: all.lastPosition });
    expect(newest.entries.map((e: { eventId: string }) => e.eventId)).toEqual(all.entries.slice(2).map((e: { eventId: string }) => e.eventId));

    expect((await page('limit: 1', null)).body.errors![0]!.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await page('cursor: "nope"')).body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'cursor' });
    expect((await page('limit: 0')).body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'limit' });
    expect((await page('types: ["Bad*Type"]')).body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'types' });
    const expired = await page('cursor: "00000000-0000-7000-8000-000000000000"');
    expect(expired.body.errors![0]).toMatchObject({ message: expect.stringContaining('cursor_expired'), extensions: { code: 'INVALID_REQUEST', field: 'cursor' } });
  });
});
