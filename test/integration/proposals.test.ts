import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const BRIEF = 'Premium sports video on connected TV plus news display, US';

/**
 * Proposals over MCP (AdCP 3.0): the demo catalog's curated plans offered for a brief, refined
 * by a buyer's asks, finalized into a hold, and bought with proposal_id + total_budget. Every
 * answer is checked against the 3.0 response schema.
 */
describe('proposals: brief, refine, finalize, accept', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;
  let other: string;

  const call = (name: string, args: Json, key = buyer) => mcpCall(gw.url, key, name, args);
  const refine = (refine: Json[], key = buyer) => call('get_products', { buying_mode: 'refine', refine, account: ACCOUNT }, key);
  const create = (extra: Json, key = buyer) =>
    call('create_media_buy', { account: ACCOUNT, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(30), ...extra }, key);

  beforeAll(async () => {
    // A seller that confirms orders at once, so an accepted proposal answers with its packages.
    gw = await startTestGateway({ APPROVAL_POLICY: 'never' });
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'proposals-acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'proposals-globex', role: 'buyer' }, ctx)).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    await call('sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator' }], idempotency_key: randomUUID() });
    await call('sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator' }], idempotency_key: randomUUID() }, other);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('a brief gets the catalog plans beside the products, filled from what the buyer can see; wholesale gets none', async () => {
    const { body } = await call('get_products', { buying_mode: 'brief', brief: BRIEF, account: ACCOUNT });
    const ids = body.proposals.map((p: Json) => p.proposal_id);
    expect(ids.sort()).toEqual(['balanced_reach_q2', 'sports_fans_video']);
    const balanced = body.proposals.find((p: Json) => p.proposal_id === 'balanced_reach_q2');
    expect(balanced.allocations.map((a: Json) => [a.product_id, a.allocation_percentage])).toEqual([
      ['premium_ctv_guaranteed', 40],
      ['sports_video_auction', 35],
      ['news_display_run_of_site', 25],
    ]);
    expect(balanced).not.toHaveProperty('proposal_status');
    // Every product a proposal buys is among the products answered.
    const products = new Set(body.products.map((p: Json) => p.product_id));
    for (const p of body.proposals) for (const a of p.allocations) expect(products.has(a.product_id)).toBe(true);
    // A channel filter narrows the products, and the plans are filled from what is left.
    const ctvOnly = await call('get_products', { buying_mode: 'brief', brief: BRIEF, account: ACCOUNT, filters: { channels: ['ctv'] } });
    const narrowed = ctvOnly.body.proposals.find((p: Json) => p.proposal_id === 'balanced_reach_q2');
    expect(narrowed.allocations.map((a: Json) => a.product_id).sort()).toEqual(['premium_ctv_guaranteed', 'sports_video_auction']);
    expect(narrowed.allocations.reduce((s: number, a: Json) => s + a.allocation_percentage, 0)).toBeCloseTo(100, 5);
    expect((await call('get_products', { buying_mode: 'wholesale', account: ACCOUNT })).body).not.toHaveProperty('proposals');
    expect((await call('get_products', { buying_mode: 'wholesale', brief: 'x', account: ACCOUNT })).isError).toBe(true);
  });

  it('refine: each entry answered in order; a proposal ask re-splits the buyer\'s own copy only', async () => {
    const { body } = await refine([
      { scope: 'proposal', proposal_id: 'balanced_reach_q2', ask: 'Drop the display product and redistribute that budget to video.' },
      { scope: 'request', ask: 'All products must support frequency capping at 3 per day.' },
      { scope: 'product', product_id: 'recipes_homepage_takeover', action: 'omit' },
      { scope: 'proposal', proposal_id: 'no_such_plan' },
    ]);
    expect(body.refinement_applied).toEqual([
      { scope: 'proposal', proposal_id: 'balanced_reach_q2', status: 'applied', notes: expect.stringContaining('dropped display') },
      { scope: 'request', status: 'unable', notes: expect.stringContaining('not an instruction this seller applies') },
      { scope: 'product', product_id: 'recipes_homepage_takeover', status: 'applied', notes: expect.any(String) },
      { scope: 'proposal', proposal_id: 'no_such_plan', status: 'unable', notes: expect.any(String) },
    ]);
    expect(body.proposals).toHaveLength(1);
    const refined = body.proposals[0].allocations.map((a: Json) => [a.product_id, a.allocation_percentage]);
    expect(refined).toEqual([
      ['premium_ctv_guaranteed', 53.33],
      ['sports_video_auction', 46.67],
    ]);
    expect(body.products.map((p: Json) => p.product_id)).toEqual(['premium_ctv_guaranteed', 'sports_video_auction']);
    // The next brief shows this buyer its refined plan; another buyer still sees the catalog's.
    const mine = (await call('get_products', { buying_mode: 'brief', brief: BRIEF, account: ACCOUNT })).body.proposals.find((p: Json) => p.proposal_id === 'balanced_reach_q2');
    expect(mine.allocations).toHaveLength(2);
    const theirs = (await call('get_products', { buying_mode: 'brief', brief: BRIEF, account: ACCOUNT }, other)).body.proposals.find((p: Json) => p.proposal_id === 'balanced_reach_q2');
    expect(theirs.allocations).toHaveLength(3);
  });

  it('finalize commits the plan with an expiry; accepting it splits total_budget by the allocations', async () => {
    const { body } = await refine([{ scope: 'proposal', proposal_id: 'balanced_reach_q2', action: 'finalize' }]);
    const [committed] = body.proposals;
    expect(committed).toMatchObject({ proposal_id: 'balanced_reach_q2', proposal_status: 'committed' });
    expect(Date.parse(committed.expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(body.refinement_applied[0]).toMatchObject({ status: 'applied', notes: expect.stringContaining(committed.expires_at) });
    // Finalizing again while held keeps the same hold.
    expect((await refine([{ scope: 'proposal', proposal_id: 'balanced_reach_q2', action: 'finalize' }])).body.proposals[0].expires_at).toBe(committed.expires_at);

    const buy = await create({ proposal_id: 'balanced_reach_q2', total_budget: { amount: 50_000, currency: 'USD' } });
    expect(buy.isError).toBe(false);
    expect(buy.body.packages.map((p: Json) => [p.product_id, p.budget])).toEqual([
      ['premium_ctv_guaranteed', 26_665],
      ['sports_video_auction', 23_335],
    ]);
    // The auction line bids at the product's floor.
    expect(buy.body.packages[1].bid_price).toBe(12);
    const stored = await call('get_media_buys', { media_buy_ids: [buy.body.media_buy_id] });
    expect(stored.body.media_buys[0].packages.reduce((s: number, p: Json) => s + p.budget, 0)).toBe(50_000);
  });

  it('refuses what cannot be bought: packages and a proposal, no total_budget, unknown plan, wrong currency, a lapsed hold', async () => {
    const pkg = { product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 };
    const cases: [Json, string, string][] = [
      [{ proposal_id: 'balanced_reach_q2', total_budget: { amount: 1000, currency: 'USD' }, packages: [pkg] }, 'VALIDATION_ERROR', 'packages'],
      [{ proposal_id: 'balanced_reach_q2' }, 'INVALID_REQUEST', 'total_budget'],
      [{}, 'INVALID_REQUEST', 'packages'],
      [{ proposal_id: 'no_such_plan', total_budget: { amount: 1000, currency: 'USD' } }, 'REFERENCE_NOT_FOUND', 'proposal_id'],
      [{ proposal_id: 'sports_fans_video', total_budget: { amount: 1000, currency: 'EUR' } }, 'VALIDATION_ERROR', 'total_budget.currency'],
    ];
    for (const [extra, code, field] of cases) {
      const r = await create(extra);
      expect({ extra, error: r.body.adcp_error ?? r.body.errors?.[0] }).toEqual({ extra, error: expect.objectContaining({ code, field }) });
    }
    // Past the hold, a committed proposal is refused until finalized again.
    await gw.app.gatewayClock.advance(25 * 3600, 'test');
    const lapsed = await create({ proposal_id: 'balanced_reach_q2', total_budget: { amount: 1000, currency: 'USD' } });
    expect(lapsed.body.errors[0]).toMatchObject({ code: 'PROPOSAL_EXPIRED', field: 'proposal_id', recovery: 'correctable' });
    await refine([{ scope: 'proposal', proposal_id: 'balanced_reach_q2', action: 'finalize' }]);
    expect((await create({ proposal_id: 'balanced_reach_q2', total_budget: { amount: 1000, currency: 'USD' } })).isError).toBe(false);
  });

  it('the same over GraphQL: proposals for a brief, refineProducts, and createMediaBuy accepting one', async () => {
    const q = await graphql(gw.url, 'query($b: String!) { proposals(brief: $b) { proposalId proposalStatus allocations { productId allocationPercentage } } }', { b: BRIEF }, other);
    expect(q.body.errors).toBeUndefined();
    expect(q.body.data!.proposals.map((p: Json) => p.proposalId).sort()).toEqual(['balanced_reach_q2', 'sports_fans_video']);
    const m = await graphql(
      gw.url,
      'mutation($r: [RefineInput!]!) { refineProducts(refine: $r) { products { productId } proposals { proposalId proposalStatus expiresAt allocations { productId allocationPercentage } } refinementApplied { scope proposalId status notes } } }',
      { r: [{ scope: 'proposal', proposalId: 'balanced_reach_q2', ask: 'shift 50% to display' }, { scope: 'proposal', proposalId: 'balanced_reach_q2', action: 'finalize' }] },
      other,
    );
    expect(m.body.errors).toBeUndefined();
    const refined = m.body.data!.refineProducts;
    expect(refined.proposals).toEqual([
      expect.objectContaining({
        proposalId: 'balanced_reach_q2',
        proposalStatus: 'committed',
        allocations: [
          { productId: 'premium_ctv_guaranteed', allocationPercentage: 26.67 },
          { productId: 'sports_video_auction', allocationPercentage: 23.33 },
          { productId: 'news_display_run_of_site', allocationPercentage: 50 },
        ],
      }),
    ]);
    expect(refined.refinementApplied.map((o: Json) => o.status)).toEqual(['applied', 'applied']);
    const bad = await graphql(gw.url, 'mutation($r: [RefineInput!]!) { refineProducts(refine: $r) { proposals { proposalId } } }', { r: [{ scope: 'galaxy' }] }, other);
    expect(bad.body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR' });
    const created = await graphql(gw.url, 'mutation($r: JSONObject!) { createMediaBuy(request: $r) }', {
      r: { buyer_ref: `gql-${randomUUID()}`, brand_manifest: { url: 'https://acme-outdoor.com' }, proposal_id: 'balanced_reach_q2', total_budget: { amount: 10_000, currency: 'USD' }, start_time: 'asap', end_time: future(20) },
    }, other);
    expect(created.body.errors).toBeUndefined();
    expect(created.body.data!.createMediaBuy.packages.map((p: Json) => p.budget)).toEqual([2667, 2333, 5000]);
  });
});
