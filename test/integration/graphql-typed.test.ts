import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { DEMO_CATALOG } from '../../src/application/catalog';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('media buys as a typed graph (GraphQL)', () => {
  let gw: Gateway;
  let buyer: string;
  let other: string;
  let seller: string;
  let pending: Record<string, any>;
  let active: Record<string, any>;

  const task = async (name: string, body: unknown, key: string) => {
    const res = await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, any>;
  };
  const buy = (guaranteed: boolean) => ({
    buyer_ref: `typed-${randomBytes(4).toString('hex')}`,
    brand_manifest: { name: 'Acme', url: 'https://acme.example' },
    packages: guaranteed
      ? [{ buyer_ref: 'ctv', product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }]
      : [
          { buyer_ref: 'news', product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 5000 },
          { buyer_ref: 'sports', product_id: 'sports_video_auction', pricing_option_id: 'cpm_auction_usd', budget: 3000, bid_price: 14 },
        ],
    start_time: { type: 'asap' },
    end_time: future(14),
  });

  beforeAll(async () => {
    gw = await startTestGateway();
    const now = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
    other = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, now)).key;
    seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
    await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, seller)).body.data?.viewer?.role === 'seller', 20_000, 'the keys');
    pending = await task('create_media_buy', buy(true), buyer);
    active = await task('create_media_buy', buy(false), buyer);
    expect((await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: pending.task_id }, seller)).body.data).toEqual({ approveTask: 'completed' });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  const BUY = `query($id: ID!) { mediaBuy(id: $id) {
    id buyerRef status currency totalBudget revision
    packages { id buyerRef productId pricingOptionId budget bidPrice creativeIds paused canceled }
    task { id type status resourceId history { status message } }
    timeline { event status note }
  } }`;

  it('one buy with its packages, the task it waited on (with its history) and its timeline from the log', async () => {
    const r = await graphql(gw.url, BUY, { id: pending.media_buy_id }, buyer);
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data!.mediaBuy).toEqual({
      id: pending.media_buy_id,
      buyerRef: expect.any(String),
      status: 'active',
      currency: 'USD',
      totalBudget: 20000,
      revision: expect.any(Number),
      packages: [{ id: expect.any(String), buyerRef: 'ctv', productId: 'premium_ctv_guaranteed', pricingOptionId: 'cpm_usd_guaranteed', budget: 20000, bidPrice: null, creativeIds: [], paused: false, canceled: false }],
      task: { id: pending.task_id, type: 'create_media_buy', status: 'completed', resourceId: pending.media_buy_id, history: [{ status: 'submitted', message: expect.any(String) }, { status: 'working', message: expect.any(String) }, { status: 'completed', message: expect.any(String) }] },
      timeline: [
        { event: 'MediaBuyCreated', status: 'pending', note: null },
        { event: 'MediaBuyApproved', status: 'active', note: 'IO signed' },
        // Bought "asap": the approval moved its start to when it was approved (issue 35, item 4 d).
        { event: 'MediaBuyUpdated', status: null, note: null },
      ],
    });
    const sync = await graphql(gw.url, 'query($id: ID!) { mediaBuy(id: $id) { status task { id } packages { bidPrice } } }', { id: active.media_buy_id }, buyer);
    expect(sync.body.data!.mediaBuy).toEqual({ status: 'active', task: null, packages: [{ bidPrice: null }, { bidPrice: 14 }] });
  });

  it('another buyer sees nothing of it; the seller, who approves buys, does', async () => {
    expect((await graphql(gw.url, BUY, { id: pending.media_buy_id }, other)).body.data).toEqual({ mediaBuy: null });
    expect((await graphql(gw.url, 'query($id: ID!) { mediaBuy(id: $id) { id status } }', { id: pending.media_buy_id }, seller)).body.data).toEqual({ mediaBuy: { id: pending.media_buy_id, status: 'active' } });
    expect((await graphql(gw.url, '{ mediaBuysConnection { edges { node { id } } } }', undefined, other)).body.data).toEqual({ mediaBuysConnection: { edges: [] } });
  });

  it('the seller’s approvals inbox: waiting tasks with the buy each is about; buyers may not read it', async () => {
    const waiting = await task('create_media_buy', buy(true), buyer);
    const inbox = (await graphql(gw.url, '{ approvals { id type status resourceId history { status } mediaBuy { id status totalBudget packages { productId } } } }', undefined, seller)).body;
    expect(inbox.errors).toBeUndefined();
    expect(inbox.data!.approvals).toEqual([
      { id: waiting.task_id, type: 'create_media_buy', status: 'submitted', resourceId: waiting.media_buy_id, history: [{ status: 'submitted' }], mediaBuy: { id: waiting.media_buy_id, status: 'pending', totalBudget: 20000, packages: [{ productId: 'premium_ctv_guaranteed' }] } },
    ]);
    expect((await graphql(gw.url, '{ approvals { id } }', undefined, buyer)).body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
    await graphql(gw.url, 'mutation($t: ID!, $r: String!) { rejectTask(taskId: $t, reason: $r) }', { t: waiting.task_id, r: 'not this quarter' }, seller);
    expect((await graphql(gw.url, '{ approvals { id } }', undefined, seller)).body.data).toEqual({ approvals: [] });
  });

  it('placeMediaBuy: a typed input, the buy answered typed with its task, and errors that name their input field', async () => {
    const place = (input: Record<string, unknown>) => graphql(gw.url, 'mutation($i: MediaBuyInput!) { placeMediaBuy(input: $i) { id status task { type status } packages { productId budget bidPrice } } }', { i: input }, buyer);
    const input = { buyerRef: `typed-${randomBytes(4).toString('hex')}`, brandUrl: 'https://acme.example', endTime: future(10), packages: [{ productId: 'sports_video_auction', pricingOptionId: 'cpm_auction_usd', budget: 3000, bidPrice: 14 }] };
    const placed = await place(input);
    expect(placed.body.errors).toBeUndefined();
    expect(placed.body.data!.placeMediaBuy).toMatchObject({ id: expect.stringMatching(/^mb_/), status: 'active', task: null, packages: [{ productId: 'sports_video_auction', budget: 3000, bidPrice: 14 }] });
    const field = async (i: Record<string, unknown>) => (await place(i)).body.errors![0]!.extensions;
    expect(await field({ ...input, buyerRef: 'typed-neg', packages: [{ ...input.packages[0], budget: -1 }] })).toMatchObject({ code: 'VALIDATION_ERROR', field: 'packages[0].budget' });
    expect(await field({ ...input, buyerRef: 'typed-past', endTime: '2020-01-01T00:00:00Z' })).toMatchObject({ code: 'VALIDATION_ERROR', field: 'endTime' });
    expect(await field({ ...input })).toMatchObject({ field: 'buyerRef' }); // the same reference twice
    expect((await graphql(gw.url, 'mutation($i: MediaBuyInput!) { placeMediaBuy(input: $i) { id } }', { i: input }, seller)).body.errors![0]!.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('pages through the buyer’s active buys with cursors', async () => {
    const page = async (after?: string) => (await graphql(gw.url, 'query($a: String) { mediaBuysConnection(first: 1, after: $a, statuses: ["active"]) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }', { a: after }, buyer)).body.data!.mediaBuysConnection;
    const first = await page();
    expect(first.edges).toHaveLength(1);
    expect(first.pageInfo).toEqual({ hasNextPage: true, endCursor: first.edges[0].cursor });
    // Walk every page: each buy once, the last page says there is no next one.
    const ids: string[] = [first.edges[0].node.id];
    for (let p = first; p.pageInfo.hasNextPage; ) {
      p = await page(p.pageInfo.endCursor);
      ids.push(...p.edges.map((e: { node: { id: string } }) => e.node.id));
      expect(ids.length).toBeLessThan(10);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining([pending.media_buy_id, active.media_buy_id]));
    const refused = await graphql(gw.url, '{ mediaBuysConnection(first: 101) { edges { cursor } } }', undefined, buyer);
    expect(refused.body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'first' });
    // A cursor the connection never gave is the caller's error, not a query: mangled text, and
    // base64url of a NUL (which PostgreSQL cannot compare).
    for (const forged of ["'; DROP TABLE events; --", 'AA', `${first.pageInfo.endCursor}=`]) {
      const res = await graphql(gw.url, 'query($a: String) { mediaBuysConnection(first: 1, after: $a) { edges { cursor } } }', { a: forged }, buyer);
      expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'after' });
    }
  });

  it('the catalog: typed targeting for everyone; the seller’s own view adds each product’s capacity, which buyers never see', async () => {
    const demo = JSON.parse(fs.readFileSync(DEMO_CATALOG, 'utf8')) as { products: { product_id: string; targeting: Record<string, unknown>; delivery: { daily_impression_capacity: number; ctr: number } }[] };
    const seen = await graphql(gw.url, '{ catalog { productId capacity { dailyImpressions ctr } targeting { geoCountries audiences keywords other { key values } } } }', undefined, seller);
    expect(seen.body.data!.catalog).toEqual(
      demo.products.map((p) => ({
        productId: p.product_id,
        capacity: { dailyImpressions: p.delivery.daily_impression_capacity, ctr: p.delivery.ctr },
        targeting: { geoCountries: p.targeting.geo_countries ?? [], audiences: p.targeting.audiences ?? [], keywords: p.targeting.keywords ?? [], other: Object.entries(p.targeting).filter(([k]) => !['geo_countries', 'audiences', 'keywords'].includes(k)).map(([key, v]) => ({ key, values: ([] as unknown[]).concat(v).map(String) })) },
      })),
    );
    expect((await graphql(gw.url, '{ catalog { productId } }', undefined, buyer)).body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
    const offered = (await graphql(gw.url, '{ products(brief: "sports") { productId capacity { ctr } targeting { audiences } } }', undefined, buyer)).body.data!.products as { productId: string; capacity: unknown; targeting: { audiences: string[] } }[];
    expect(offered.length).toBeGreaterThan(0);
    for (const p of offered) {
      expect(p.capacity).toBeNull();
      expect(p.targeting.audiences).toEqual(demo.products.find((d) => d.product_id === p.productId)!.targeting.audiences ?? []);
    }
  });

  it('delivery in hours and days: totals = Σ per package = Σ series = get_media_buy_delivery', async () => {
    expect((await graphql(gw.url, 'mutation { advanceClock(seconds: 10800) }', undefined, seller)).body.errors).toBeUndefined();
    const report = await eventually(async () => {
      const d = await task('get_media_buy_delivery', { media_buy_id: active.media_buy_id }, buyer);
      return d.delivery?.impressions > 0 ? d : undefined;
    }, 15_000, 'delivery');
    const q = 'query($id: ID!, $g: DeliveryGranularity!) { mediaBuy(id: $id) { delivery(granularity: $g) { currency granularity totals { impressions clicks spend } byPackage { packageId impressions clicks spend } series { start impressions clicks spend } } } }';
    for (const g of ['HOURLY', 'DAILY']) {
      const d = (await graphql(gw.url, q, { id: active.media_buy_id, g }, buyer)).body.data!.mediaBuy.delivery;
      expect(d.totals).toEqual({ impressions: report!.delivery.impressions, clicks: report!.delivery.clicks, spend: report!.delivery.spend });
      const sum = (xs: { impressions: number }[]) => xs.reduce((t, x) => t + x.impressions, 0);
      expect(sum(d.byPackage)).toBe(d.totals.impressions);
      expect(sum(d.series)).toBe(d.totals.impressions);
      if (g === 'HOURLY') expect(d.series.length).toBeGreaterThanOrEqual(2);
      else expect(d.series.every((p: { start: string }) => p.start.endsWith('T00:00:00.000Z'))).toBe(true);
    }
  });
});
