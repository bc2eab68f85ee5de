import { createHash, randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { eventSourceStream } from '../../src/domain/event-source/event-source';
import { graphql, startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
const LIVE = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const item = (id: string, extra: Json = {}) => ({ item_id: id, title: `Item ${id}`, url: `https://acme-outdoor.com/p/${id}`, image_url: `https://cdn.acme-outdoor.com/${id}.jpg`, price: { amount: 10, currency: 'USD' }, ...extra });

/**
 * The commerce tasks over MCP (AdCP 3.0): sync_catalogs with item review, sync_event_sources,
 * log_event (deduplicated, matched, identifiers not kept), get_account_financials and
 * provide_performance_feedback. Every success is checked against the 3.0 response schema.
 */
describe('catalogs, event sources, conversions, financials, feedback', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;
  let other: string;

  const call = (name: string, args: Json, key = buyer) => mcpCall(gw.url, key, name, args);
  const mutate = (name: string, args: Json, key = buyer) => call(name, { idempotency_key: randomUUID(), ...args }, key);
  const settle = () => gw.app.projections.waitFor(gw.app.store.appendedUpTo());

  beforeAll(async () => {
    gw = await startTestGateway({ APPROVAL_POLICY: 'never' });
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'commerce-acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'commerce-globex', role: 'buyer' }, ctx)).key;
    await settle();
    await mutate('sync_accounts', { accounts: [{ ...LIVE, billing: 'operator', payment_terms: 'net_30' }] });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('sync_catalogs reviews each item, lists, replaces and deletes', async () => {
    const r = await mutate('sync_catalogs', {
      account: LIVE,
      catalogs: [{ catalog_id: 'spring', type: 'product', name: 'Spring', content_id_type: 'sku', items: [item('a'), item('b', { sku: '00013&cmd=drop' }), item('c', { price: undefined }), item('d', { url: 'http://acme-outdoor.com/d' }), item('a')] }],
    });
    expect(r.body.catalogs[0]).toMatchObject({ catalog_id: 'spring', action: 'created', item_count: 5, items_approved: 2, items_pending: 0, items_rejected: 3, platform_id: expect.stringMatching(/^cat_/) });
    expect(r.body.catalogs[0].item_issues).toEqual([
      { item_id: 'c', status: 'rejected', reasons: [expect.stringMatching(/price/)] },
      { item_id: 'd', status: 'rejected', reasons: ['url must be https'] },
      { item_id: 'a', status: 'rejected', reasons: ['item_id appears twice in this catalog'] },
    ]);
    // The same catalog again changes nothing; new items replace the old.
    expect((await mutate('sync_catalogs', { account: LIVE, catalogs: [{ catalog_id: 'spring', type: 'product', name: 'Spring', content_id_type: 'sku', items: [item('a'), item('b', { sku: '00013&cmd=drop' }), item('c', { price: undefined }), item('d', { url: 'http://acme-outdoor.com/d' }), item('a')] }] })).body.catalogs[0].action).toBe('unchanged');
    await mutate('sync_catalogs', { account: LIVE, catalogs: [{ catalog_id: 'stores', type: 'store', items: [{ item_id: 's1', name: 'Seattle' }] }] });
    await settle();
    const listed = await mutate('sync_catalogs', { account: LIVE });
    expect(listed.body.catalogs.map((c: Json) => [c.catalog_id, c.action, c.items_approved])).toEqual([
      ['spring', 'unchanged', 2],
      ['stores', 'unchanged', 1],
    ]);
    expect((await mutate('sync_catalogs', { account: LIVE, catalog_ids: ['stores'] })).body.catalogs).toHaveLength(1);
    expect((await mutate('sync_catalogs', { account: LIVE }, other)).isError).toBe(true); // another buyer has no such account
    const dry = await mutate('sync_catalogs', { account: LIVE, dry_run: true, delete_missing: true, catalogs: [{ catalog_id: 'spring', type: 'product', items: [item('z')] }] });
    expect(dry.body).toMatchObject({ dry_run: true, catalogs: [{ catalog_id: 'spring', action: 'updated' }, { catalog_id: 'stores', action: 'deleted' }] });
    await settle();
    expect((await mutate('sync_catalogs', { account: LIVE })).body.catalogs).toHaveLength(2); // a dry run changes nothing
  });

  it('sync_catalogs: a feed URL is refused (strict: the request; lenient: that catalog); bad input names its field', async () => {
    const feed = { catalog_id: 'feed', type: 'product', url: 'https://acme-outdoor.com/feed.xml' };
    expect((await mutate('sync_catalogs', { account: LIVE, catalogs: [feed] })).body.adcp_error).toMatchObject({ code: 'UNSUPPORTED_FEATURE', field: 'catalogs[0]' });
    const lenient = await mutate('sync_catalogs', { account: LIVE, validation_mode: 'lenient', catalogs: [feed, { catalog_id: 'ok', type: 'product', items: [item('x')] }] });
    expect(lenient.body.catalogs.map((c: Json) => [c.catalog_id, c.action])).toEqual([
      ['feed', 'failed'],
      ['ok', 'created'],
    ]);
    expect((await mutate('sync_catalogs', { account: LIVE, catalogs: [{ catalog_id: 'x', type: 'spaceships', items: [] }] })).body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'catalogs[0].type' });
    expect((await mutate('sync_catalogs', { account: LIVE, delete_missing: true })).body.adcp_error).toMatchObject({ field: 'delete_missing' });
  });

  it('event sources and conversions: setup, dedupe by event_id, partial failures, match quality, no identifier kept', async () => {
    const s = await mutate('sync_event_sources', { account: LIVE, event_sources: [{ event_source_id: 'web', name: 'Website', event_types: ['purchase', 'add_to_cart'], allowed_domains: ['acme-outdoor.com'] }] });
    expect(s.body.event_sources[0]).toMatchObject({ event_source_id: 'web', action: 'created', managed_by: 'buyer', setup: { snippet_type: 'server_only', snippet: expect.stringContaining('log_event') }, health: { status: 'insufficient' } });
    const email = sha('jane@acme.example');
    const events = [
      { event_id: 'e1', event_type: 'purchase', event_time: new Date(Date.now() - 60_000).toISOString(), user_match: { hashed_email: email }, custom_data: { value: 149.99, currency: 'USD' } },
      { event_id: 'e2', event_type: 'add_to_cart', event_time: new Date(Date.now() - 60_000).toISOString(), user_match: { click_id: 'gclid-1' } },
      { event_id: 'e3', event_type: 'lead', event_time: new Date(Date.now() - 60_000).toISOString() },
      { event_id: 'e4', event_type: 'purchase', event_time: new Date(Date.now() + 3_600_000).toISOString() },
    ];
    const r = await mutate('log_event', { event_source_id: 'web', events });
    expect(r.body).toMatchObject({ events_received: 4, events_processed: 2 });
    expect(r.body.partial_failures.map((f: Json) => f.event_id)).toEqual(['e3', 'e4']);
    expect(r.body.match_quality).toBeGreaterThanOrEqual(0.5); // the click id is always attributable
    // Resending e1 counts once.
    const again = await mutate('log_event', { event_source_id: 'web', events: [events[0]] });
    expect(again.body).toMatchObject({ events_received: 1, events_processed: 0, warnings: [expect.stringMatching(/already received/)] });
    const text = JSON.stringify((await gw.app.store.readStream(eventSourceStream(await accountId(), 'web'))).map((e) => e.data));
    expect(text).not.toContain(email);
    expect(text).not.toContain('gclid-1');
    await settle();
    const health = (await mutate('sync_event_sources', { account: LIVE })).body.event_sources[0].health;
    expect(health).toMatchObject({ match_rate: expect.any(Number), last_event_at: expect.any(String) });
    expect((await mutate('log_event', { event_source_id: 'nope', events: [events[0]] })).body.adcp_error).toMatchObject({ code: 'REFERENCE_NOT_FOUND', field: 'event_source_id' });
    expect((await mutate('log_event', { event_source_id: 'web', events: [events[0]] }, other)).body.adcp_error).toMatchObject({ code: 'REFERENCE_NOT_FOUND' });
    expect((await mutate('log_event', { event_source_id: 'web', events: [{ ...events[0], event_time: 'yesterday' }] })).body.adcp_error).toMatchObject({ field: 'events[0].event_time' });
  });

  const accountId = async () => (await call('list_accounts', {})).body.accounts.find((a: Json) => a.brand.domain === 'acme-outdoor.com').account_id as string;

  it('get_account_financials: spend of the account\'s buys over the period; provide_performance_feedback on a buy', async () => {
    const buy = (await mutate('create_media_buy', { account: SANDBOX, brand: { domain: 'acme.example' }, start_time: 'asap', end_time: new Date(Date.now() + 10 * 86_400_000).toISOString(), packages: [{ product_id: 'test-product', pricing_option_id: 'default', budget: 500 }] })).body;
    await call('comply_test_controller', { scenario: 'simulate_delivery', account: SANDBOX, params: { media_buy_id: buy.media_buy_id, impressions: 1000, clicks: 5, reported_spend: { amount: 42.5, currency: 'USD' } } });
    await settle();
    const f = await call('get_account_financials', { account: SANDBOX });
    const today = new Date().toISOString().slice(0, 10);
    expect(f.body).toMatchObject({ currency: 'USD', timezone: 'UTC', period: { start: `${today.slice(0, 8)}01`, end: today }, spend: { total_spend: 42.5, media_buy_count: 1 }, payment_status: 'current' });
    const live = await call('get_account_financials', { account: LIVE, period: { start: '2020-01-01', end: '2020-01-31' } });
    expect(live.body).toMatchObject({ spend: { total_spend: 0, media_buy_count: 0 }, payment_terms: 'net_30', period: { start: '2020-01-01', end: '2020-01-31' } });
    expect((await call('get_account_financials', { account: LIVE, period: { start: '2020-02-01', end: '2020-01-01' } })).body.adcp_error).toMatchObject({ field: 'period.start' });

    const period = { start: new Date(Date.now() - 86_400_000).toISOString(), end: new Date().toISOString() };
    expect((await mutate('provide_performance_feedback', { media_buy_id: buy.media_buy_id, measurement_period: period, performance_index: 1.2, metric_type: 'conversion_rate' })).body).toMatchObject({ success: true });
    expect((await mutate('provide_performance_feedback', { media_buy_id: buy.media_buy_id, package_id: 'nope', measurement_period: period, performance_index: 1 })).body.adcp_error).toMatchObject({ code: 'PACKAGE_NOT_FOUND', field: 'package_id' });
    expect((await mutate('provide_performance_feedback', { media_buy_id: buy.media_buy_id, measurement_period: period, performance_index: 1 }, other)).body.adcp_error).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND' });
    const feedback = await gw.app.store.readStream(`feedback-${buy.media_buy_id}`);
    expect(feedback.map((e) => (e.data as Json).performance_index)).toEqual([1.2]);
  });

  it('GraphQL: the same tasks as JSON mutations and queries', async () => {
    const cat = await graphql(gw.url, 'mutation($r: JSONObject!) { syncCatalogs(request: $r) }', { r: { account: LIVE, catalogs: [{ catalog_id: 'gql', type: 'product', items: [item('g')] }] } }, buyer);
    expect(cat.body.errors).toBeUndefined();
    expect(cat.body.data!.syncCatalogs.catalogs[0]).toMatchObject({ catalog_id: 'gql', action: 'created', items_approved: 1 });
    const fin = await graphql(gw.url, 'query($r: JSONObject!) { accountFinancials(request: $r) }', { r: { account: LIVE } }, buyer);
    expect(fin.body.data!.accountFinancials).toMatchObject({ currency: 'USD', payment_terms: 'net_30' });
    const es = await graphql(gw.url, 'mutation($r: JSONObject!) { syncEventSources(request: $r) }', { r: { account: LIVE, event_sources: [{ event_source_id: 'gql' }] } }, buyer);
    expect(es.body.data!.syncEventSources.event_sources[0].action).toBe('created');
    await settle();
    const logged = await graphql(gw.url, 'mutation($r: JSONObject!) { logEvent(request: $r) }', { r: { event_source_id: 'gql', events: [{ event_id: 'g1', event_type: 'lead', event_time: new Date().toISOString() }] } }, buyer);
    expect(logged.body.data!.logEvent).toMatchObject({ events_received: 1, events_processed: 1 });
  });

  it('create_media_buy: a package names the catalogs its dynamic creatives show; an unsynced one is refused', async () => {
    const pkg = (catalog_id: string) => ({ product_id: 'news_display_dynamic', pricing_option_id: 'cpm_usd_dynamic', budget: 2000, catalogs: [{ catalog_id, type: 'product' }] });
    const base = { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: new Date(Date.now() + 10 * 86_400_000).toISOString() };
    const ok = await mutate('create_media_buy', { ...base, packages: [pkg('spring')] });
    expect(ok.isError).toBe(false);
    expect(ok.body.packages[0].catalogs).toEqual([{ catalog_id: 'spring', type: 'product' }]);
    // A 3.0 targeting overlay is checked against AdCP's targeting schema before anything is kept.
    const targeted = await mutate('create_media_buy', { ...base, packages: [{ ...pkg('spring'), targeting_overlay: { geo_countries: ['US'], frequency_cap: { suppress: { nonsense: 1 } } } }] });
    expect(targeted.body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'packages[0].targeting_overlay.frequency_cap.suppress' });
    const update = await mutate('update_media_buy', { account: LIVE, media_buy_id: ok.body.media_buy_id, packages: [{ package_id: ok.body.packages[0].package_id, targeting_overlay: { geo_countries: 'US' } }] });
    expect(update.body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'packages[0].targeting_overlay.geo_countries' });
    const fine = await mutate('update_media_buy', { account: LIVE, media_buy_id: ok.body.media_buy_id, packages: [{ package_id: ok.body.packages[0].package_id, targeting_overlay: { geo_countries: ['US', 'CA'] } }] });
    expect(fine.body.adcp_error).toBeUndefined();
    const bad = await mutate('create_media_buy', { ...base, packages: [pkg('never-synced')] });
    expect(bad.body.adcp_error).toMatchObject({ code: 'REFERENCE_NOT_FOUND', field: 'packages[0].catalogs[0].catalog_id' });
    // The product's own format is shown under this agent's URL, and resolves back by it.
    const products = (await call('get_products', { buying_mode: 'wholesale', account: LIVE })).body.products;
    const dynamic = products.find((p: Json) => p.product_id === 'news_display_dynamic');
    expect(dynamic.format_ids).toEqual([{ agent_url: `${gw.url}/mcp`, id: 'display_300x250_catalog' }]);
    const formats = await call('list_creative_formats', { format_ids: dynamic.format_ids });
    expect(formats.body.formats.map((f: Json) => f.format_id)).toEqual(dynamic.format_ids);
  });
});
