import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { adcp31 } from '../support/adcp31';
import { a2aCall } from '../support/a2a-call';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
type Call = (name: string, args: Json) => Promise<{ isError: boolean; body: Json }>;

/**
 * What AdCP 3.1 changes about reads and a few writes for a buyer pinned `adcp_version: "3.1"`
 * (issue 36, part 3), over MCP, A2A and REST with a version: `idempotency_key` (and the other
 * envelope fields) tolerated on every read, keyed replay of get_products (same key and payload:
 * the first answer again, `replayed: true`; another payload: IDEMPOTENCY_CONFLICT),
 * sync_governance as 3.1.19 defines it and declared in 3.1's capabilities, and the REST task
 * route answering through the negotiated release's codec. Unpinned callers: as before.
 */

/** get_products' `cache_scope` and the task `status` on errors are part 1's (issue 36): supplied only when absent. */
const part1 = (tool: string, body: Json): Json => ({ ...(tool === 'get_products' && body.products ? { cache_scope: 'public' } : {}), ...(body.adcp_error ? { status: 'failed' } : {}), ...body });

function expectValid31(tool: string, body: Json): void {
  expect({ tool, validation: adcp31().validateResponse(tool, part1(tool, body)) }).toMatchObject({ tool, validation: { valid: true } });
}

describe('AdCP 3.1 reads, sync_governance and REST with a version', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    gw = await startTestGateway();
    const now = new Date().toISOString();
    for (const org of ['mcp', 'a2a', 'rest']) keys[org] = (await issueApiKey(gw.app.store, { org: `${org}-reader`, role: 'buyer' }, { now })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await gw?.stop();
  });

  const SANDBOX_BRAND = { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' };
  /** 3.1's envelope on a request: the pin, a fresh read key, context and ext. */
  const pin = (args: Json, key: string = randomUUID()): Json => ({ adcp_version: '3.1', idempotency_key: key, context: { correlation_id: `c-${randomUUID()}` }, ext: { acme: { trace: 't' } }, ...args });

  /** POST /api/tasks/{task}: the status and the body. */
  const rest = async (task: string, body: Json, key = keys.rest!) => {
    const res = await fetch(`${gw.url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };

  describe.each<[string, () => Call]>([
    ['MCP', () => (name, args) => mcpCall(gw.url, keys.mcp!, name, args, { validate: false })],
    ['A2A', () => (name, args) => a2aCall(gw.url, keys.a2a!, name, args)],
    ['REST', () => async (name, args) => {
      const { status, body } = await rest(name, args);
      return { isError: status >= 400, body };
    }],
  ])('over %s', (binding, callOf) => {
    const seed = async (productId: string) => {
      // REST has no controller (it is an MCP/A2A tool): seed through MCP under the same buyer.
      const key = binding === 'A2A' ? keys.a2a! : binding === 'MCP' ? keys.mcp! : keys.rest!;
      const { body } = await mcpCall(gw.url, key, 'comply_test_controller', { adcp_version: '3.1', account: { sandbox: true }, scenario: 'seed_product', params: { product_id: productId, fixture: { channels: ['display'], pricing_options: [{ pricing_option_id: 'cpm', pricing_model: 'cpm', currency: 'USD', fixed_price: 5 }] } } }, { validate: false });
      expect(body).toMatchObject({ success: true });
    };

    it('every read tolerates the 3.1 envelope (idempotency_key, context, ext) and echoes context', async () => {
      const call = callOf();
      for (const [tool, args] of [
        ['get_products', { buying_mode: 'brief', brief: 'outdoor' }],
        ['list_creative_formats', {}],
        ['list_accounts', { sandbox: true }],
        ['get_media_buys', {}],
        ['list_creatives', {}],
        ...(binding === 'REST' ? [] : [['get_adcp_capabilities', {}]]),
      ] as [string, Json][]) {
        const sent = pin(args);
        const { isError, body } = await call(tool, sent);
        expect({ tool, isError }).toEqual({ tool, isError: false });
        expect(body).toMatchObject({ adcp_version: '3.1', context: sent.context });
      }
    });

    it('get_products keyed replay: same key and payload answer the first answer again, marked replayed; another payload is IDEMPOTENCY_CONFLICT', async () => {
      const call = callOf();
      const key = randomUUID();
      const request = { buying_mode: 'brief', brief: 'display', account: SANDBOX_BRAND };
      const first = await call('get_products', pin(request, key));
      expect(first.isError).toBe(false);
      expect(first.body.replayed).toBeUndefined();
      expectValid31('get_products', first.body);
      // The catalog changes: a fresh read sees it, the replay does not (it is the first answer).
      const seeded = `replay_probe_${binding.toLowerCase()}`;
      await seed(seeded);
      const fresh = await call('get_products', pin(request));
      expect(fresh.body.products.map((p: Json) => p.product_id)).toContain(seeded);
      const again = await call('get_products', pin(request, key));
      expect(again.isError).toBe(false);
      expect(again.body.replayed).toBe(true);
      expect(again.body.products).toEqual(first.body.products);
      expectValid31('get_products', again.body);
      // context is the caller's per request, not part of the payload.
      expect(again.body.context).not.toEqual(first.body.context);
      const conflict = await call('get_products', pin({ ...request, brief: 'video' }, key));
      expect(conflict.isError).toBe(true);
      expect(conflict.body.adcp_error).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
      expect(adcp31().validate('core/error.json', conflict.body.adcp_error)).toMatchObject({ valid: true });
      expectValid31('get_products', conflict.body);
      // A key that is not one is refused before any replay is looked up.
      const malformed = await call('get_products', pin(request, 'short'));
      expect(malformed.isError).toBe(true);
      expect(malformed.body.adcp_error).toMatchObject({ code: 'INVALID_REQUEST', field: 'idempotency_key' });
    });

    it('a caller without a pin: a read key is ignored as before (no replay), answers 3.0.6-valid', async () => {
      const call = callOf();
      const key = randomUUID();
      const request = { buying_mode: 'brief', brief: 'display', idempotency_key: key, ...(binding === 'REST' ? { adcp_major_version: 3 } : {}) };
      const first = await call('get_products', request);
      const second = await call('get_products', { ...request, brief: 'video' });
      expect([first.isError, second.isError]).toEqual([false, false]);
      expect(second.body.replayed).toBeUndefined();
      expect(second.body.adcp_version).toBeUndefined();
      expect(validateAdcp3Response('get_products', second.body)).toMatchObject({ valid: true });
    });

    it('sync_governance in 3.1: one agent per account, answered {url} only, valid against 3.1.19; two agents or categories are refused', async () => {
      const call = callOf();
      const agent = { url: 'https://governance.example/mcp', authentication: { schemes: ['Bearer'], credentials: 'x'.repeat(40) } };
      const { isError, body } = await call('sync_governance', pin({ accounts: [{ account: SANDBOX_BRAND, governance_agents: [agent] }] }));
      expect(isError).toBe(false);
      expect(body).toMatchObject({ adcp_version: '3.1', status: 'completed', accounts: [{ status: 'synced', governance_agents: [{ url: agent.url }] }] });
      expect(body.accounts[0].governance_agents[0]).toEqual({ url: agent.url });
      expectValid31('sync_governance', body);
      for (const [governance_agents, field] of [
        [[agent, { ...agent, url: 'https://governance2.example/mcp' }], 'accounts[0].governance_agents'],
        [[{ ...agent, categories: ['budget_authority'] }], 'accounts[0].governance_agents[0].categories'],
      ] as const) {
        const refused = await call('sync_governance', pin({ accounts: [{ account: SANDBOX_BRAND, governance_agents }] }));
        expect(refused.isError).toBe(true);
        expect(refused.body.adcp_error).toMatchObject({ code: 'INVALID_REQUEST', field });
        expectValid31('sync_governance', refused.body);
      }
      // 3.0 keeps what 3.0 allows: categories accepted and echoed.
      const three = await call('sync_governance', { accounts: [{ account: SANDBOX_BRAND, governance_agents: [{ ...agent, categories: ['budget_authority'] }] }], idempotency_key: randomUUID(), ...(binding === 'REST' ? { adcp_major_version: 3 } : {}) });
      expect(three.isError).toBe(false);
      expect(three.body.accounts[0].governance_agents[0]).toEqual({ url: agent.url, categories: ['budget_authority'] });
      expect(validateAdcp3Response('sync_governance', three.body)).toMatchObject({ valid: true });
    });
  });

  describe.each<[string, () => Call]>([
    ['MCP', () => (name, args) => mcpCall(gw.url, keys.mcp!, name, args, { validate: false })],
    ['A2A', () => (name, args) => a2aCall(gw.url, keys.a2a!, name, args)],
  ])('capabilities over %s', (_binding, callOf) => {
    it('3.1 declares governance_aware (sync_governance is consulted) and every controller scenario; 3.0 is unchanged', async () => {
      const call = callOf();
      const pinned = await call('get_adcp_capabilities', pin({}));
      expect(pinned.body.media_buy.governance_aware).toBe(true);
      expect(pinned.body.compliance_testing.scenarios).toEqual(expect.arrayContaining(['seed_account', 'force_get_products_arm', 'force_upstream_unavailable', 'seed_product']));
      expectValid31('get_adcp_capabilities', pinned.body);
      const plain = await call('get_adcp_capabilities', {});
      expect(plain.body.media_buy.governance_aware).toBeUndefined();
      expect(plain.body.compliance_testing.scenarios).toEqual(['force_media_buy_status', 'force_account_status', 'force_creative_status', 'simulate_delivery', 'simulate_budget_spend']);
      expect(validateAdcp3Response('get_adcp_capabilities', plain.body)).toMatchObject({ valid: true });
    });
  });

  describe('REST with a version', () => {
    it('adcp_version "3.1": the 3.1 codec answers (echo, task status), valid against 3.1.19; a newer 3.x is served as 3.1', async () => {
      for (const version of ['3.1', '3.7']) {
        const { status, body } = await rest('get_products', pin({ adcp_version: version, buying_mode: 'brief', brief: 'video' }));
        expect(status).toBe(200);
        expect(body).toMatchObject({ adcp_version: '3.1', status: 'completed' });
        expect(body.products.length).toBeGreaterThan(0);
        expectValid31('get_products', body);
      }
    });

    it('errors in the negotiated release: VERSION_UNSUPPORTED across majors (400, supported_versions, no echo); a 3.1 error names 3.1', async () => {
      const unsupported = await rest('get_products', { adcp_version: '4.0', buying_mode: 'brief', brief: 'video', context: { n: 1 } });
      expect(unsupported.status).toBe(400);
      expect(unsupported.body).toMatchObject({ adcp_error: { code: 'VERSION_UNSUPPORTED', details: { supported_versions: ['3.0', '3.1'] } }, context: { n: 1 } });
      expect(unsupported.body.adcp_version).toBeUndefined();
      expect(adcp31().validate('core/error.json', unsupported.body.adcp_error)).toMatchObject({ valid: true });
      const invalid = await rest('get_media_buys', { adcp_version: '3.1', media_buy_ids: 'not-a-list' });
      // The spec's status for a validation error, as for every REST answer.
      expect(invalid.status).toBe(422);
      expect(invalid.body).toMatchObject({ adcp_version: '3.1', adcp_error: { field: expect.stringContaining('media_buy_ids') } });
      expect(invalid.body.errors).toEqual([invalid.body.adcp_error]);
      expect(adcp31().validate('core/error.json', invalid.body.adcp_error)).toMatchObject({ valid: true });
      const unauthenticated = await rest('get_products', { adcp_version: '3.1', buying_mode: 'brief', brief: 'video' }, 'sk_not_a_key');
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.body.adcp_error).toBeDefined();
    });

    it('without adcp_version: the spec shape as before, and adcp_major_version 3 alone the 3.0 answer as before', async () => {
      const spec = await rest('get_products', { brief: 'video' });
      expect(spec.status).toBe(200);
      expect(spec.body.adcp_version).toBeUndefined();
      expect(spec.body.status).toBeUndefined();
      const specError = await rest('get_media_buys', { media_buy_ids: 'not-a-list' });
      expect(specError.body.error).toBeDefined();
      expect(specError.body.adcp_error).toBeUndefined();
      const three = await rest('get_products', { adcp_major_version: 3, buying_mode: 'brief', brief: 'video' });
      expect(three.body.adcp_version).toBeUndefined();
      expect(three.body.status).toBeUndefined();
      expect(validateAdcp3Response('get_products', three.body)).toMatchObject({ valid: true });
    });
  });
});
