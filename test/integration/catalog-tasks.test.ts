import fs from 'node:fs';
import path from 'node:path';
import { issueApiKey } from '../../src/application/api-keys';
import { eventually } from '../support/infra';
import { graphql, startTestGateway, tempDir } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

async function task(gw: Gateway, name: string, body: unknown, key?: string) {
  const res = await fetch(`${gw.url}/api/tasks/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
}

describe('catalog tasks over the REST shim (demo catalog)', () => {
  let gw: Gateway;
  let buyer: string;
  let seller: string;

  beforeAll(async () => {
    gw = await startTestGateway();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
    seller = (await issueApiKey(gw.app.store, { org: 'pub', role: 'seller' }, ctx)).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('requires a buyer key: none, unknown or another role → 401 with WWW-Authenticate', async () => {
    const unknown = 'sk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
    for (const key of [undefined, unknown, seller]) {
      const r = await task(gw, 'get_products', {}, key);
      expect(r.status).toBe(401);
      // RFC 6750: a credential that does not verify is an invalid_token; none, or the wrong role, is not.
      expect(r.headers.get('www-authenticate')).toBe(key === unknown ? 'Bearer error="invalid_token", error_description="unknown or revoked API key"' : 'Bearer');
      expect(r.body.error.code).toBe('UNAUTHENTICATED');
    }
  });

  it('ranks products against the brief (BM25) and explains the match', async () => {
    const r = await task(gw, 'get_products', { brief: 'video ads for sports fans watching live football highlights', brand_manifest: { url: 'https://acme.example' } }, buyer);
    expect(r.status).toBe(200);
    const ids = r.body.products.map((p: { product_id: string }) => p.product_id);
    expect(ids).toHaveLength(5);
    expect(ids.slice(0, 2).sort()).toEqual(['premium_ctv_guaranteed', 'sports_video_auction']);
    expect(r.body.products[0].relevance_score).toBeGreaterThan(r.body.products[4].relevance_score);
    expect(r.body.products[0].brief_relevance).toMatch(/^matches /);
    // Simulation settings are the operator's business.
    expect(r.body.products[0]).not.toHaveProperty('delivery');
    expect(r.body.products[0].publisher_properties[0]).toEqual({ publisher_domain: 'sports.example', selection_type: 'all' });

    const food = await task(gw, 'get_products', { brief: 'grocery brand, home cooking recipes' }, buyer);
    expect(food.body.products[0].product_id).toBe('recipes_homepage_takeover');
  });

  it('filters by channels, delivery type, format types and budget', async () => {
    const ids = async (filters: unknown) =>
      (await task(gw, 'get_products', { brief: '', filters }, buyer)).body.products.map((p: { product_id: string }) => p.product_id).sort();
    expect(await ids({ channels: ['ctv'] })).toEqual(['premium_ctv_guaranteed', 'sports_video_auction']);
    expect(await ids({ delivery_type: 'guaranteed' })).toEqual(['premium_ctv_guaranteed', 'recipes_homepage_takeover']);
    expect(await ids({ format_types: ['display'] })).toEqual(['news_display_dynamic', 'news_display_run_of_site', 'recipes_homepage_takeover']);
    // The flat fee (5,000) does not fit a 1,000 budget.
    expect(await ids({ budget_range: { min: 100, max: 1000 } })).not.toContain('recipes_homepage_takeover');
  });

  it('answers bad input with the field path: 400 for malformed, 422 for schema failures', async () => {
    const cases: [unknown, number, string, string | undefined][] = [
      ['{"brief": ', 400, 'INVALID_REQUEST', undefined],
      [[1, 2], 400, 'INVALID_REQUEST', undefined],
      [{ brief: 42 }, 422, 'VALIDATION_ERROR', 'brief'],
      [{ filters: { budget_range: { min: 10, max: 5 } } }, 422, 'VALIDATION_ERROR', 'filters.budget_range.min'],
      [{ filters: { channels: ['video', 7] } }, 422, 'VALIDATION_ERROR', 'filters.channels[1]'],
      [{ filters: { delivery_type: 'sometimes' } }, 422, 'VALIDATION_ERROR', 'filters.delivery_type'],
      [{ brand_manifest: { colors: { primary: 'red' } } }, 422, 'VALIDATION_ERROR', 'brand_manifest'],
    ];
    for (const [body, status, code, field] of cases) {
      const r = await task(gw, 'get_products', body, buyer);
      expect({ body, status: r.status, code: r.body.error?.code, field: r.body.error?.field }).toEqual({ body, status, code, field });
      expect(typeof r.body.error.message).toBe('string');
    }
  });

  it('accepts unknown fields and echoes context, on errors too', async () => {
    const ok = await task(gw, 'list_authorized_properties', { x_buyer_note: 'anything', context: { correlation_id: 'c-9' } }, buyer);
    expect(ok.body).toEqual({ publisher_domains: ['news.example', 'sports.example', 'recipes.example'], context: { correlation_id: 'c-9' } });
    // A pinned release is no unknown field: the release answers, and says so (docs/rest.md).
    const pinned = await task(gw, 'list_authorized_properties', { adcp_version: '3.1', context: { correlation_id: 'c-9' } }, buyer);
    expect(pinned.body).toMatchObject({ adcp_version: '3.1', publisher_domains: ['news.example', 'sports.example', 'recipes.example'], context: { correlation_id: 'c-9' } });
    const bad = await task(gw, 'get_products', { brief: 1, context: { correlation_id: 'c-10' } }, buyer);
    expect(bad.body.context).toEqual({ correlation_id: 'c-10' });
  });

  it('lists creative formats, optionally by type', async () => {
    const all = await task(gw, 'list_creative_formats', {}, buyer);
    expect(all.body.formats).toHaveLength(4);
    // The seller's own format is shown under its own agent URL.
    expect(all.body.formats.find((f: { format_id: { id: string } }) => f.format_id.id === 'display_300x250_catalog').format_id).toEqual({ agent_url: `${gw.url}/mcp`, id: 'display_300x250_catalog' });
    const video = await task(gw, 'list_creative_formats', { format_types: ['video'] }, buyer);
    expect(video.body.formats.map((f: { format_id: { id: string } }) => f.format_id.id)).toEqual(['video_16x9_30s']);
    expect(video.body.formats[0]).toMatchObject({ dimensions: { width: 1920, height: 1080 }, requirements: { max_duration_ms: 30000 } });
  });

  it('answers an unknown task with 404', async () => {
    const r = await task(gw, 'get_everything', {}, buyer);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('NOT_FOUND');
  });
});

describe('catalog tasks over GraphQL', () => {
  let gw: Gateway;
  let buyer: string;
  beforeAll(async () => {
    gw = await startTestGateway();
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('ranks and filters products with the same handler as REST', async () => {
    const r = await graphql(
      gw.url,
      `query($f: ProductFiltersInput) { products(brief: "sports highlights video", brandManifest: {name: "Acme", url: "https://acme.example"}, filters: $f) {
         productId deliveryType relevanceScore pricingOptions { pricingModel price floor currency } formatIds { agentUrl id } } }`,
      { f: { channels: ['video'] } },
      buyer,
    );
    expect(r.body.errors).toBeUndefined();
    const products = r.body.data!.products;
    expect(products.map((p: { productId: string }) => p.productId).sort()).toEqual(['premium_ctv_guaranteed', 'sports_video_auction']);
    const auction = products.find((p: { productId: string }) => p.productId === 'sports_video_auction');
    expect(auction.pricingOptions).toEqual([{ pricingModel: 'cpm-auction', price: null, floor: 12, currency: 'USD' }]);
  });

  it('lists formats and authorized properties', async () => {
    const r = await graphql(gw.url, '{ creativeFormats(formatTypes: ["display"]) { formatId { id } dimensions { width height } } authorizedProperties }', undefined, buyer);
    expect(r.body.data).toEqual({
      creativeFormats: [
        { formatId: { id: 'display_300x250' }, dimensions: { width: 300, height: 250 } },
        { formatId: { id: 'display_728x90' }, dimensions: { width: 728, height: 90 } },
        { formatId: { id: 'display_300x250_catalog' }, dimensions: { width: 300, height: 250 } },
      ],
      authorizedProperties: ['news.example', 'sports.example', 'recipes.example'],
    });
  });

  it('names the failing field in GraphQL spelling, and requires a buyer key', async () => {
    const bad = await graphql(gw.url, '{ products(filters: {budgetRange: {min: 10, max: 5}}) { productId } }', undefined, buyer);
    expect(bad.body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'filters.budgetRange.min' });
    expect(bad.body.errors![0]!.message).toMatch(/^filters\.budgetRange\.min: /);
    const anon = await graphql(gw.url, '{ authorizedProperties }');
    expect(anon.body.errors![0]!.extensions).toEqual({ code: 'UNAUTHENTICATED' });
  });
});

describe('operator catalog file', () => {
  it('publishes an edited catalog once per change, and refuses a broken one naming the field', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'catalog.json');
    const demo = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../src/domain/catalog/demo-catalog.json'), 'utf8'));
    const plans = demo.proposals;
    demo.products = demo.products.slice(0, 1);
    // The demo's plans prefer products this cut removes: the file is refused until they go too.
    fs.writeFileSync(file, JSON.stringify(demo));
    await expect(startTestGateway({ DATA_DIR: tempDir(), CATALOG_FILE: file })).rejects.toThrow(/CATALOG_FILE .*: proposals\[0\]\.allocations\[0\]\.product_id: premium_ctv_guaranteed is not in products\[\]/);
    demo.proposals = [{ ...plans[0], allocations: [{ ...plans[0].allocations[2], allocation_percentage: 60 }, { channel: 'display', allocation_percentage: 30 }] }];
    fs.writeFileSync(file, JSON.stringify(demo));
    await expect(startTestGateway({ DATA_DIR: tempDir(), CATALOG_FILE: file })).rejects.toThrow(/proposals\[0\]\.allocations: allocation percentages must sum to 100 \(they sum to 90\)/);
    demo.proposals = [];
    fs.writeFileSync(file, JSON.stringify(demo));
    let gw = await startTestGateway({ DATA_DIR: dir, CATALOG_FILE: file });
    await gw.stop();
    gw = await startTestGateway({ DATA_DIR: dir, CATALOG_FILE: file });
    try {
      const published = (await gw.app.store.readStream('catalog')).length;
      expect(published).toBe(1);
    } finally {
      await gw.stop();
    }
    demo.products[0].format_ids[0].id = 'no_such_format';
    fs.writeFileSync(file, JSON.stringify(demo));
    await expect(startTestGateway({ DATA_DIR: dir, CATALOG_FILE: file })).rejects.toThrow(
      /CATALOG_FILE .*: products\[0\]\.format_ids\[0\]: format no_such_format is not in formats\[\]/,
    );
  });
});
