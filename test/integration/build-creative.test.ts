import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
const ACCOUNT = { brand: { domain: 'steakhouse.example' }, operator: 'agency.example', sandbox: true };
const FORMAT = { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' };

/** build_creative over MCP: a manifest from a brief and a synced catalog, trackers substituted safely, a preview. */
describe('build_creative', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;
  const call = (name: string, args: Json) => mcpCall(gw.url, buyer, name, { idempotency_key: randomUUID(), ...args });

  beforeAll(async () => {
    gw = await startTestGateway();
    buyer = (await issueApiKey(gw.app.store, { org: 'build-acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    await call('sync_catalogs', {
      account: ACCOUNT,
      catalogs: [{ catalog_id: 'menu_probe', type: 'product', content_id_type: 'sku', items: [{ item_id: 'rib', sku: '00013&cmd=drop', title: 'Ribeye <b>', url: 'https://steakhouse.example/rib', image_url: 'https://cdn.steakhouse.example/rib.jpg', price: { amount: 89, currency: 'USD' } }] }],
    });
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('builds from the catalog the brief names: item image and landing page, trackers percent-encoded, a preview', async () => {
    const r = await call('build_creative', {
      message: 'Dinner for two tonight. Use the menu_probe catalog.',
      target_format_id: FORMAT,
      account: ACCOUNT,
      creative_manifest: { assets: { impression_tracker: { asset_type: 'url', url: 'https://track.example/imp?sku={SKU}&mb={MEDIA_BUY_ID}' } } },
      include_preview: true,
    });
    const m = r.body.creative_manifest;
    expect(m.format_id).toEqual(FORMAT);
    expect(m.assets.headline).toEqual({ asset_type: 'text', content: 'Dinner for two tonight.' });
    expect(m.assets.image).toMatchObject({ url: 'https://cdn.steakhouse.example/rib.jpg', width: 300, height: 250 });
    expect(m.assets.click_url.url).toBe('https://steakhouse.example/rib');
    expect(m.assets.impression_tracker.url).toBe('https://track.example/imp?sku=00013%26cmd%3Ddrop&mb={MEDIA_BUY_ID}');
    expect(m.preview_html).toContain('src="https://track.example/imp?sku=00013%26cmd%3Ddrop&amp;mb={MEDIA_BUY_ID}"');
    expect(m.preview_html).toContain('Ribeye &lt;b&gt;');
    expect(m.preview_html).not.toContain('<b>');
    const url = r.body.preview.previews[0].renders[0].preview_url;
    expect((await fetch(url)).status).toBe(200);
    expect(r.body.sandbox).toBe(true);
  });

  it('several formats at once; unknown formats and catalogs are refused with the field', async () => {
    const multi = await call('build_creative', { message: 'Hello.', target_format_ids: [FORMAT, { ...FORMAT, id: 'display_728x90' }] });
    expect(multi.body.creative_manifests.map((m: Json) => m.format_id.id)).toEqual(['display_300x250', 'display_728x90']);
    expect((await call('build_creative', { message: 'x', target_format_id: { ...FORMAT, id: 'nope' } })).body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'target_format_id' });
    expect((await call('build_creative', { message: 'x' })).body.adcp_error).toMatchObject({ code: 'INVALID_REQUEST', field: 'target_format_id' });
    const missing = await call('build_creative', { target_format_id: FORMAT, account: ACCOUNT, creative_manifest: { assets: { feed: { asset_type: 'catalog', catalog_id: 'gone' } } } });
    expect(missing.body.adcp_error).toMatchObject({ code: 'REFERENCE_NOT_FOUND' });
  });

  it('previews over GraphQL as over MCP: the same preview, recorded', async () => {
    const request = {
      request_type: 'single',
      creative_manifest: { creative_id: 'gql-1', name: 'MPU', format_id: { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' }, assets: { image: { asset_type: 'image', url: 'https://cdn.acme.example/mpu.png', width: 300, height: 250 } } },
      output_format: 'url',
    };
    const viaGraphql = await graphql(gw.url, 'mutation($r: JSONObject!) { previewCreative(request: $r) }', { r: request }, buyer);
    const preview = (viaGraphql.body.data as Record<string, any>).previewCreative;
    expect(preview.previews[0].renders[0].preview_url).toMatch(new RegExp(`^${gw.url}/previews/pv_`));
    expect((await fetch(preview.previews[0].renders[0].preview_url)).status).toBe(200);
    expect((await graphql(gw.url, 'mutation($r: JSONObject!) { previewCreative(request: $r) }', { r: { request_type: 'single' } }, buyer)).body.errors![0]!.extensions!.code).toBe('INVALID_REQUEST');
  });
});
