import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3, validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { adcp31 } from '../support/adcp31';
import { mcpCall } from '../support/mcp-call';
import { startTestGateway } from '../support/gateway';

type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const LIVE = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const MUTATING = new Set(['create_media_buy', 'update_media_buy', 'provide_performance_feedback', 'sync_accounts']);
/** Tools whose response schemas have an error arm: an error answer must validate as a whole. */
const ERROR_ARM = new Set(['create_media_buy', 'update_media_buy', 'provide_performance_feedback']);
let messageSeq = 0;

/** A JSON-RPC request calling get_products with `args`, over MCP and over A2A. */
const mcpBody = (args: Json) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_products', arguments: args } });
const a2aBody = (args: Json) => ({ jsonrpc: '2.0', id: 7, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `raw-${++messageSeq}`, parts: [{ kind: 'data', data: { skill: 'get_products', parameters: args } }] } } });

/**
 * A buyer pinned to AdCP 3.1 (`adcp_version: "3.1"`) through the media-buy tasks, over MCP and
 * A2A (issue 36, part 1): discovery, create (auto-approved and awaiting approval), update,
 * get_media_buys, delivery and feedback, and the error paths of each. Every 3.1 answer is held
 * to the 3.1.19 schemas (the whole body, errors too where the tool's schema has an error arm,
 * and each error object to `core/error.json`); the same call without a pin to 3.0.6.
 */
describe('AdCP 3.1 media-buy answers, MCP and A2A', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;

  interface Answer {
    isError: boolean;
    body: Json;
  }
  type Binding = (name: string, args: Json, key?: string) => Promise<Answer>;

  const mcp: Binding = (name, args, key = buyer) => mcpCall(gw.url, key, name, args, { validate: false });

  /** message/send with one DataPart { skill, parameters }, as @adcp/sdk's A2A client sends it; the answer is the artifact's DataPart. */
  const a2a: Binding = async (name, args, key = buyer) => {
    const res = await fetch(`${gw.url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `m31-${++messageSeq}`, parts: [{ kind: 'data', data: { skill: name, parameters: args } }] } } }),
    });
    expect(res.status).toBe(200);
    const { result } = (await res.json()) as { result: Json };
    const artifact = result.artifacts[0];
    return { isError: artifact.name === 'error', body: artifact.parts.filter((p: Json) => p.kind === 'data').at(-1).data as Json };
  };

  /** What is wrong with one answer against a release's schemas (empty: valid). */
  function problems(release: '3.0' | '3.1', tool: string, { isError, body }: Answer): string[] {
    const schemas = release === '3.1' ? adcp31() : { validate: validateAdcp3, validateResponse: validateAdcp3Response };
    const checks = isError
      ? [schemas.validate('core/error.json', body.adcp_error), ...((body.errors ?? []) as unknown[]).map((e) => schemas.validate('core/error.json', e)), ...(ERROR_ARM.has(tool) ? [schemas.validateResponse(tool, body)] : [])]
      : [schemas.validateResponse(tool, body)];
    return checks.filter((c) => !c.valid).map((c) => `${release} ${tool} ${c.schema}: ${c.errors.slice(0, 3).join('; ')} in ${JSON.stringify(body).slice(0, 400)}`);
  }

  beforeAll(async () => {
    gw = await startTestGateway();
    buyer = (await issueApiKey(gw.app.store, { org: 'acme31', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    expect((await mcp('sync_accounts', { accounts: [{ ...LIVE, billing: 'operator' }], idempotency_key: randomUUID() })).isError).toBe(false);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  describe.each<[string, () => Binding]>([
    ['MCP', () => mcp],
    ['A2A', () => a2a],
  ])('over %s', (_name, bindingOf) => {
    const invalid: string[] = [];
    let answered = 0;

    /**
     * One call pinned to 3.1 and the same call unpinned, each held to its release's schemas; the
     * pinned answer is returned. A mutating call gets a fresh idempotency key each time (the pin
     * is part of the payload a key answers for).
     */
    async function both(tool: string, args: Json, key?: string): Promise<Answer> {
      const call = bindingOf();
      const keyed = () => (MUTATING.has(tool) && args.idempotency_key === undefined ? { idempotency_key: randomUUID() } : {});
      const context = { correlation_id: randomUUID() };
      const pinned = await call(tool, { ...args, ...keyed(), adcp_version: '3.1', adcp_major_version: 3, context }, key);
      const plain = await call(tool, { ...args, ...keyed() }, key);
      answered += 2;
      invalid.push(...problems('3.1', tool, pinned), ...problems('3.0', tool, plain));
      expect(pinned.body).toMatchObject({ adcp_version: '3.1', context, status: pinned.isError ? 'failed' : expect.any(String) });
      expect(plain.body.adcp_version).toBeUndefined();
      expect(plain.isError).toBe(pinned.isError);
      if (pinned.isError) {
        expect(pinned.body.errors).toEqual([pinned.body.adcp_error]);
        expect(plain.body.status).toBeUndefined();
      }
      return pinned;
    }

    let buy: Json;
    let pendingTask: string;

    it('discovery: capabilities and products (cache_scope public for the published catalog, account for a sandbox)', async () => {
      const caps = await both('get_adcp_capabilities', {});
      expect(caps.body).toMatchObject({ status: 'completed', adcp: { supported_versions: ['3.0', '3.1'] } });
      const products = await both('get_products', { buying_mode: 'brief', brief: 'sports video' });
      expect(products.body).toMatchObject({ status: 'completed', cache_scope: 'public' });
      expect(products.body.products.length).toBeGreaterThan(0);
      expect((await both('get_products', { buying_mode: 'wholesale', account: LIVE })).body.cache_scope).toBe('public');
      expect((await both('get_products', { buying_mode: 'wholesale', account: SANDBOX })).body.cache_scope).toBe('account');
      // An unknown refinement scope: a validation error listing its fields as pointers.
      const refused = await both('get_products', { buying_mode: 'refine', refine: [{ scope: 'galaxy' }] });
      expect(refused.body.adcp_error).toMatchObject({ recovery: 'correctable', issues: [expect.objectContaining({ pointer: expect.stringMatching(/^\/refine\/0/) })] });
      expect(invalid).toEqual([]);
    });

    it('create: auto-approved (task completed, media_buy_status, confirmed_at, revision) and awaiting approval (submitted)', async () => {
      const created = await both('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(20), packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 3000 }] });
      expect(created.isError).toBe(false);
      expect(created.body).toMatchObject({ status: 'completed', media_buy_status: 'pending_creatives', revision: 1, confirmed_at: expect.any(String) });
      buy = created.body;
      const pending = await both('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(20), packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }] });
      expect(pending.body).toMatchObject({ status: 'submitted', task_id: expect.any(String) });
      pendingTask = pending.body.task_id;
      expect(invalid).toEqual([]);
    });

    it('create errors: invalid input with issues[], an unknown product, an unknown proposal (PROPOSAL_NOT_FOUND), a reused key (IDEMPOTENCY_CONFLICT, correctable)', async () => {
      const base = { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(5) };
      const bad = await both('create_media_buy', { ...base, packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: -1 }, { product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 'lots' }] });
      expect(bad.body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', recovery: 'correctable', field: 'packages[0].budget' });
      expect(bad.body.adcp_error.issues.map((i: Json) => i.pointer)).toEqual(['/packages/0/budget', '/packages/1/budget']);
      expect((await both('create_media_buy', { ...base, packages: [{ product_id: 'nope', pricing_option_id: 'x', budget: 100 }] })).body.adcp_error).toMatchObject({ code: 'PRODUCT_NOT_FOUND', recovery: 'correctable' });
      expect((await both('create_media_buy', { ...base, proposal_id: 'no_such_plan', total_budget: { amount: 5000, currency: 'USD' } })).body.adcp_error).toMatchObject({ code: 'PROPOSAL_NOT_FOUND', field: 'proposal_id', recovery: 'correctable' });
      const key = randomUUID();
      const call = bindingOf();
      const first = await call('create_media_buy', { ...base, idempotency_key: key, adcp_version: '3.1', packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }] });
      expect(first.isError).toBe(false);
      const reused = await call('create_media_buy', { ...base, idempotency_key: key, adcp_version: '3.1', packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 2000 }] });
      expect(reused.body).toMatchObject({ status: 'failed', adcp_error: { code: 'IDEMPOTENCY_CONFLICT', recovery: 'correctable' } });
      expect(reused.body.adcp_error.field).toBeUndefined();
      invalid.push(...problems('3.1', 'create_media_buy', first), ...problems('3.1', 'create_media_buy', reused));
      expect(invalid).toEqual([]);
    });

    it('update: a budget change and a pause (media_buy_status), then ACTION_NOT_ALLOWED, INVALID_STATE, NOT_CANCELLABLE and unknown ids', async () => {
      const id = buy.media_buy_id;
      const packageId = buy.packages[0].package_id;
      const budget = await both('update_media_buy', { account: LIVE, media_buy_id: id, packages: [{ package_id: packageId, budget: 3500 }] });
      expect(budget.body).toMatchObject({ status: 'completed', media_buy_id: id, media_buy_status: 'pending_creatives', revision: expect.any(Number) });
      // A buy still waiting for creatives is active in the domain: it pauses.
      const paused = await bindingOf()('update_media_buy', { account: LIVE, media_buy_id: id, paused: true, idempotency_key: randomUUID(), adcp_version: '3.1' });
      expect(paused.body).toMatchObject({ status: 'completed', media_buy_status: 'paused' });
      invalid.push(...problems('3.1', 'update_media_buy', paused));
      // Paused already: pausing again is an action the buy does not offer now.
      const again = await both('update_media_buy', { account: LIVE, media_buy_id: id, paused: true });
      expect(again.body.adcp_error).toMatchObject({ code: 'ACTION_NOT_ALLOWED', recovery: 'correctable', details: { attempted_action: 'pause', reason: 'wrong_status' } });
      expect(adcp31().validate('error-details/action-not-allowed.json', again.body.adcp_error.details)).toMatchObject({ valid: true });
      expect((await both('update_media_buy', { account: LIVE, media_buy_id: id, packages: [{ package_id: 'nope', budget: 10 }] })).body.adcp_error).toMatchObject({ code: 'PACKAGE_NOT_FOUND', recovery: 'correctable' });
      expect((await both('update_media_buy', { account: LIVE, media_buy_id: 'mb_nope', paused: true })).body.adcp_error).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND', recovery: 'correctable' });
      expect((await both('update_media_buy', { account: LIVE, media_buy_id: id, packages: [{ package_id: packageId, budget: 'more' }] })).body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', issues: [{ pointer: '/packages/0/budget' }] });
      // A canceled buy: cancelling again is NOT_CANCELLABLE, resuming it INVALID_STATE (terminal).
      const other = await bindingOf()('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(9), packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 900 }], idempotency_key: randomUUID() });
      const cancel = { account: LIVE, media_buy_id: other.body.media_buy_id, canceled: true, cancellation_reason: 'test' };
      expect((await bindingOf()('update_media_buy', { ...cancel, idempotency_key: randomUUID(), adcp_version: '3.1' })).body).toMatchObject({ status: 'completed', media_buy_status: 'canceled' });
      expect((await both('update_media_buy', cancel)).body.adcp_error).toMatchObject({ code: 'NOT_CANCELLABLE' });
      expect((await both('update_media_buy', { account: LIVE, media_buy_id: other.body.media_buy_id, paused: false })).body.adcp_error).toMatchObject({ code: 'INVALID_STATE', recovery: 'correctable' });
      expect(invalid).toEqual([]);
    });

    it('get_media_buys: confirmed_at (null while awaiting approval) and revision on every buy', async () => {
      const listed = await both('get_media_buys', {});
      expect(listed.body.status).toBe('completed');
      expect(listed.body.media_buys.length).toBeGreaterThanOrEqual(3);
      for (const b of listed.body.media_buys) expect(b).toEqual(expect.objectContaining({ revision: expect.any(Number), confirmed_at: b.status === 'pending_start' && b.confirmed_at === null ? null : expect.any(String) }));
      expect(listed.body.media_buys.some((b: Json) => b.confirmed_at === null)).toBe(true);
      expect(pendingTask).toEqual(expect.any(String));
      expect((await both('get_media_buys', { media_buy_ids: 'not-a-list' })).body.adcp_error).toMatchObject({ code: 'VALIDATION_ERROR', issues: [{ pointer: '/media_buy_ids' }] });
      expect(invalid).toEqual([]);
    });

    it('delivery and performance feedback, and their unknown-buy errors', async () => {
      const delivery = await both('get_media_buy_delivery', { media_buy_ids: [buy.media_buy_id], time_granularity: 'daily' });
      expect(delivery.body).toMatchObject({ status: 'completed', media_buy_deliveries: [expect.objectContaining({ media_buy_id: buy.media_buy_id })] });
      expect((await both('get_media_buy_delivery', { media_buy_ids: ['mb_nope'] })).body.adcp_error).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND', recovery: 'correctable' });
      const feedback = await both('provide_performance_feedback', { media_buy_id: buy.media_buy_id, measurement_period: { start: future(-2), end: future(-1) }, performance_index: 0.8 });
      expect(feedback.body).toMatchObject({ status: 'completed', success: true });
      expect((await both('provide_performance_feedback', { media_buy_id: 'mb_nope', measurement_period: { start: future(-2), end: future(-1) }, performance_index: 0.8 })).body.adcp_error).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND' });
      expect(invalid).toEqual([]);
      expect(answered).toBeGreaterThanOrEqual(40);
    });
  });

  it.each([
    ['MCP', mcpBody],
    ['A2A', a2aBody],
  ])('over %s, a request refused before its tool runs (a forbidden key) answers in the release it pins, as a 3.1 error', async (binding, bodyOf) => {
    const send = async (pin: Json) => {
      const text = JSON.stringify(bodyOf({ buying_mode: 'brief', brief: 'news', ...pin, marker: 1 })).replace('"marker":1', '"__proto__":{"polluted":true}');
      const res = await fetch(`${gw.url}/${binding.toLowerCase()}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${buyer}` }, body: text });
      expect(res.status).toBe(200);
      const json = (await res.json()) as Json;
      return binding === 'MCP' ? (json.result.structuredContent as Json) : (json.result.artifacts[0].parts.at(-1).data as Json);
    };
    const pinned = await send({ adcp_version: '3.1' });
    expect(pinned).toMatchObject({ adcp_version: '3.1', status: 'failed', adcp_error: { code: 'INVALID_REQUEST', recovery: 'correctable' } });
    expect(adcp31().validateResponse('get_products', pinned)).toMatchObject({ valid: true });
    // Without a pin (or with one that does not negotiate) it is 3.0's error, as before.
    for (const pin of [{}, { adcp_version: '9.0' }]) {
      const plain = await send(pin);
      expect(plain).toMatchObject({ adcp_error: { code: 'INVALID_REQUEST', recovery: 'correctable' } });
      expect(plain.adcp_version).toBeUndefined();
      expect(plain.status).toBeUndefined();
      expect(validateAdcp3('core/error.json', plain.adcp_error)).toMatchObject({ valid: true });
    }
  });

  describe.each([
    ['MCP', '/mcp', mcpBody],
    ['A2A', '/a2a', a2aBody],
  ])('credentials over %s', (_name, path, bodyOf) => {
    const send = async (args: Json, authorization?: string) => {
      const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...(authorization ? { authorization } : {}) }, body: JSON.stringify(bodyOf(args)) });
      expect(res.status).toBe(401);
      return ((await res.json()) as { error: { code: number; data: Json } }).error;
    };
    const brief = { buying_mode: 'brief', brief: 'news' };

    it('3.1: none presented is AUTH_MISSING (correctable), one refused AUTH_INVALID (terminal); 3.0 and unpinned callers still get AUTH_REQUIRED', async () => {
      const missing = await send({ ...brief, adcp_version: '3.1' });
      expect(missing).toMatchObject({ code: -32028, data: { adcp_version: '3.1', adcp_error: { code: 'AUTH_MISSING', recovery: 'correctable' } } });
      const refused = await send({ ...brief, adcp_version: '3.1' }, 'Bearer sk_not_a_key');
      expect(refused).toMatchObject({ code: -32028, data: { adcp_version: '3.1', adcp_error: { code: 'AUTH_INVALID', recovery: 'terminal' } } });
      for (const e of [missing, refused]) {
        expect(adcp31().validate('core/error.json', e.data.adcp_error)).toMatchObject({ valid: true });
        expect(e.data.adcp_error.details).toBeUndefined();
      }
      for (const args of [brief, { ...brief, adcp_version: '3.0' }, { ...brief, adcp_version: '9.0' }]) {
        for (const authorization of [undefined, 'Bearer sk_not_a_key']) {
          const e = await send(args, authorization);
          expect(e.data.adcp_error).toEqual({ code: 'AUTH_REQUIRED', message: expect.any(String), recovery: 'correctable' });
          expect(validateAdcp3('core/error.json', e.data.adcp_error)).toMatchObject({ valid: true });
        }
      }
    });
  });
});
