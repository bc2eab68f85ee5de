import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const LIVE_ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };

/**
 * The MCP binding as AdCP buyers and the official runner reach it: transport, auth, the 3.0
 * answers and their errors, and bad input of every kind answered without a 5xx or a partial write.
 */
describe('MCP binding (POST /mcp)', () => {
  let gw: Gateway;
  let buyer: string;
  let other: string;
  let seller: string;

  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: (text ? JSON.parse(text) : undefined) as Json };
  };
  const call = async (name: string, args: unknown, key = buyer) => {
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, { authorization: `Bearer ${key}` });
    expect(res.status).toBe(200);
    return res.json.result as { isError?: boolean; structuredContent: Json; content: { type: string; text: string }[] };
  };
  const eventCount = async () => (await gw.app.store.readAll({ limit: 1_000_000 })).length;

  beforeAll(async () => {
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, ctx)).key;
    seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, ctx)).key;
    for (const key of [buyer, other]) {
      const synced = await call('sync_accounts', { accounts: [{ ...LIVE_ACCOUNT, billing: 'operator' }], idempotency_key: `sync-accounts-${key.slice(3, 11)}-0001` }, key);
      expect(synced.isError).toBeFalsy();
    }
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('asks for credentials the way MCP clients discover them (401, WWW-Authenticate naming the protected-resource metadata)', async () => {
    const none = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(none.status).toBe(401);
    const challenge = none.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(`resource_metadata="${gw.url}/.well-known/oauth-protected-resource/mcp"`);
    // The refusal answers the request it refuses (AdCP's reserved -32028, AdCP's error beside it).
    expect(none.json).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32028, data: { adcp_error: { code: 'AUTH_REQUIRED' } } } });

    const bad = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { authorization: 'Bearer sk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain('error="invalid_token"');

    const prm = await fetch(`${gw.url}/.well-known/oauth-protected-resource/mcp`);
    expect(prm.status).toBe(200);
    expect(await prm.json()).toMatchObject({ resource: `${gw.url}/mcp`, authorization_servers: [expect.any(String)] });
  });

  it('speaks Streamable HTTP statelessly: initialize and tools/list, and a bare tools/call with Accept: application/json', async () => {
    const init = await post(
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1' } } },
      { authorization: `Bearer ${buyer}`, accept: 'application/json, text/event-stream' },
    );
    expect(init.status).toBe(200);
    expect(init.headers.get('content-type')).toMatch(/application\/json/);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    expect(init.json.result.capabilities).toHaveProperty('tools');

    const list = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { authorization: `Bearer ${buyer}` });
    const names = (list.json.result.tools as { name: string }[]).map((t) => t.name);
    for (const tool of ['get_adcp_capabilities', 'get_products', 'list_creative_formats', 'create_media_buy', 'update_media_buy', 'get_media_buys', 'get_media_buy_delivery', 'sync_creatives', 'list_creatives', 'tasks_get', 'tasks_list', 'list_accounts', 'sync_accounts', 'comply_test_controller', 'call_adcp_agent', 'preview_creative']) {
      expect(names).toContain(tool);
    }

    const caps = await call('get_adcp_capabilities', { context: { correlation_id: 'c-1' } });
    expect(caps.isError).toBeFalsy();
    expect(caps.structuredContent).toMatchObject({ status: 'completed', adcp: { major_versions: [3], idempotency: { supported: true } }, supported_protocols: expect.arrayContaining(['media_buy']), context: { correlation_id: 'c-1' } });
    expect(JSON.parse(caps.content[0]!.text)).toEqual(caps.structuredContent);

    expect((await fetch(`${gw.url}/mcp`, { headers: { authorization: `Bearer ${buyer}` } })).status).toBe(405);
  });

  it('creates, reads and updates a buy in AdCP 3.0 shapes, and call_adcp_agent runs the same tasks', async () => {
    const products = (await call('get_products', { buying_mode: 'brief', brief: 'news display', account: LIVE_ACCOUNT })).structuredContent;
    const product = (products.products as Json[]).find((p) => p.product_id === 'news_display_run_of_site')!;
    expect(product.pricing_options[0]).toMatchObject({ pricing_model: 'cpm', fixed_price: 8.5 });
    expect(product.reporting_capabilities).toBeDefined();

    const created = await call('create_media_buy', {
      account: LIVE_ACCOUNT,
      brand: { domain: 'acme-outdoor.com' },
      idempotency_key: 'mcp-test-create-0001',
      start_time: 'asap',
      end_time: future(10),
      packages: [{ product_id: product.product_id, pricing_option_id: product.pricing_options[0].pricing_option_id, budget: 2000 }],
      context: { correlation_id: 'c-2' },
    });
    expect(created.isError).toBeFalsy();
    const buy = created.structuredContent;
    expect(buy).toMatchObject({ media_buy_id: expect.any(String), status: 'pending_creatives', idempotency_key: 'mcp-test-create-0001', context: { correlation_id: 'c-2' } });
    expect(buy).not.toHaveProperty('buyer_ref');

    const paused = await call('update_media_buy', { account: LIVE_ACCOUNT, media_buy_id: buy.media_buy_id, paused: true, idempotency_key: 'mcp-test-pause-00001' });
    expect(paused.structuredContent).toMatchObject({ media_buy_id: buy.media_buy_id, status: 'paused' });

    const viaGeneric = await call('call_adcp_agent', { task: 'get_media_buys', params: { media_buy_ids: [buy.media_buy_id] } });
    expect(viaGeneric.structuredContent.media_buys[0]).toMatchObject({ media_buy_id: buy.media_buy_id, status: 'paused' });

    // Errors through call_adcp_agent name fields as the task's own params did: the spec's shape here.
    const badUpdate = await call('call_adcp_agent', { task: 'update_media_buy', params: { media_buy_id: buy.media_buy_id, idempotency_key: 'mcp-test-generic-upd1', updates: { packages: [{ package_id: 'nope', budget: 5 }] } } });
    expect(badUpdate.structuredContent.adcp_error).toMatchObject({ code: 'PACKAGE_NOT_FOUND', field: 'updates.packages[0].package_id' });

    const forwarded = await call('call_adcp_agent', { task: 'get_products', params: {}, agent_url: 'https://other-seller.example.com/mcp' });
    expect(forwarded.isError).toBe(true);
    expect(forwarded.structuredContent.adcp_error).toMatchObject({ code: 'UNSUPPORTED_FEATURE', field: 'agent_url' });
  });

  it('answers bad input with a JSON-RPC or AdCP error, never a 5xx, and writes nothing', async () => {
    const before = await eventCount();
    const auth = { authorization: `Bearer ${buyer}` };

    const parse = await post('{"jsonrpc": "2.0", "id": 1, "method": ', auth);
    expect(parse.status).toBe(400);
    expect(parse.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 } });

    const notRpc = await post({ hello: 'world' }, auth);
    expect(notRpc.status).toBeGreaterThanOrEqual(400);
    expect(notRpc.status).toBeLessThan(500);
    expect(notRpc.json.error).toBeDefined();

    const big = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_products', arguments: { brief: 'x'.repeat(2 * 1024 * 1024) } } }, auth);
    expect(big.status).toBe(413);
    expect(big.json).toMatchObject({ jsonrpc: '2.0', error: { data: { adcp_error: { code: 'INVALID_REQUEST' } } } });

    const unknown = await call('no_such_tool', { context: { n: 1 } });
    expect(unknown.isError).toBe(true);
    expect(unknown.structuredContent).toMatchObject({ adcp_error: { code: 'INVALID_REQUEST', field: 'name', recovery: 'correctable' }, context: { n: 1 } });

    const badParams = await call('create_media_buy', { account: LIVE_ACCOUNT, brand: { domain: 'acme-outdoor.com' }, idempotency_key: 'mcp-test-bad-000001', start_time: 'asap', end_time: future(3), packages: 'everything' });
    expect(badParams.isError).toBe(true);
    expect(badParams.structuredContent.adcp_error).toMatchObject({ field: 'packages' });
    expect(badParams.structuredContent.errors).toHaveLength(1);

    const noKey = await call('create_media_buy', { account: LIVE_ACCOUNT, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(3), packages: [] });
    expect(noKey.structuredContent.adcp_error).toMatchObject({ code: 'INVALID_REQUEST', field: 'idempotency_key' });

    const version = await call('get_products', { buying_mode: 'brief', brief: 'x', adcp_major_version: 2 });
    expect(version.structuredContent.adcp_error).toMatchObject({ code: 'VERSION_UNSUPPORTED', field: 'adcp_major_version' });

    const notArgs = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_products', arguments: [1, 2] } }, auth);
    expect(notArgs.status).toBeLessThan(500);

    const asSeller = await call('get_media_buys', {}, seller);
    expect(asSeller.structuredContent.adcp_error).toMatchObject({ code: 'PERMISSION_DENIED' });

    // Valid JSON with a __proto__ key (the fuzzer's find): the tool's own error, context echoed.
    const poisoned = await post('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_products","arguments":{"buying_mode":"brief","brief":"x","context":{"n":2},"catalog":{"__proto__":{"role":"admin"}}}}}', auth);
    expect(poisoned.status).toBe(200);
    expect(poisoned.json).toMatchObject({ id: 7, result: { isError: true, structuredContent: { adcp_error: { code: 'INVALID_REQUEST', recovery: 'correctable' }, context: { n: 2 } } } });
    expect(({} as Record<string, unknown>).role).toBeUndefined();

    expect(await eventCount()).toBe(before);
  });

  it("keeps buyers apart: another buyer's buy is not found, and the sandbox controller refuses live buys and accounts", async () => {
    const products = (await call('get_products', { buying_mode: 'brief', brief: 'news', account: LIVE_ACCOUNT })).structuredContent.products as Json[];
    const p = products.find((x) => x.product_id === 'news_display_run_of_site')!;
    const created = (
      await call('create_media_buy', { account: LIVE_ACCOUNT, brand: { domain: 'acme-outdoor.com' }, idempotency_key: 'mcp-test-isolation-01', start_time: 'asap', end_time: future(5), packages: [{ product_id: p.product_id, pricing_option_id: 'cpm_usd_fixed', budget: 1000 }] })
    ).structuredContent;
    const before = await eventCount();
    // A filter: another buyer's id lists nothing, as an unknown id does.
    const listed = await call('get_media_buys', { media_buy_ids: [created.media_buy_id] }, other);
    expect(listed.isError).toBeFalsy();
    expect(listed.structuredContent.media_buys).toEqual([]);
    for (const [tool, args] of [
      ['update_media_buy', { account: LIVE_ACCOUNT, media_buy_id: created.media_buy_id, paused: true, idempotency_key: 'mcp-test-isolation-02' }],
      ['get_media_buy_delivery', { media_buy_ids: [created.media_buy_id] }],
    ] as const) {
      const res = await call(tool, args, other);
      expect(res.isError).toBe(true);
      expect(res.structuredContent.adcp_error.code).toBe('MEDIA_BUY_NOT_FOUND');
    }
    const forced = await call('comply_test_controller', { scenario: 'force_media_buy_status', params: { media_buy_id: created.media_buy_id, status: 'active' } });
    expect(forced.structuredContent).toMatchObject({ success: false, error: 'FORBIDDEN' });
    const liveAccount = await call('comply_test_controller', { scenario: 'simulate_delivery', account: LIVE_ACCOUNT, params: { media_buy_id: created.media_buy_id, impressions: 10 } });
    expect(liveAccount.structuredContent).toMatchObject({ success: false, error: 'FORBIDDEN' });
    expect(await eventCount()).toBe(before);
  });

  it('sandbox controller: simulated delivery and budget spend show in delivery reports; forced statuses follow the lifecycle', async () => {
    const sandbox = { brand: { domain: 'acme.example' }, operator: 'agency.example' };
    const created = (
      await call('create_media_buy', { account: sandbox, brand: { domain: 'acme.example' }, idempotency_key: 'mcp-test-sandbox-0001', start_time: 'asap', end_time: future(10), packages: [{ product_id: 'test-product', pricing_option_id: 'default', budget: 1000 }] })
    ).structuredContent;
    expect(created).toMatchObject({ media_buy_id: expect.any(String), status: 'pending_creatives' });
    const id = created.media_buy_id as string;

    const simulated = await call('comply_test_controller', { scenario: 'simulate_delivery', account: sandbox, params: { media_buy_id: id, impressions: 5000, clicks: 25, reported_spend: { amount: 50, currency: 'USD' } } });
    expect(simulated.structuredContent).toMatchObject({ success: true, cumulative: { impressions: 5000, clicks: 25, reported_spend: { amount: 50 } } });
    const again = await call('comply_test_controller', { scenario: 'simulate_delivery', account: sandbox, params: { media_buy_id: id, impressions: 1000 } });
    expect(again.structuredContent.cumulative).toMatchObject({ impressions: 6000 });
    const spent = await call('comply_test_controller', { scenario: 'simulate_budget_spend', account: sandbox, params: { media_buy_id: id, spend_percentage: 95 } });
    expect(spent.structuredContent).toMatchObject({ success: true, cumulative: { spend: { amount: 950 } } });
    const delivery = (await call('get_media_buy_delivery', { media_buy_ids: [id] })).structuredContent;
    expect(delivery.media_buy_deliveries[0].totals).toMatchObject({ impressions: 6000, clicks: 25, spend: 950 });

    const toActive = await call('comply_test_controller', { scenario: 'force_media_buy_status', account: sandbox, params: { media_buy_id: id, status: 'active' } });
    expect(toActive.structuredContent).toMatchObject({ success: true, previous_state: 'pending_creatives', current_state: 'active' });
    expect((await call('get_media_buys', { media_buy_ids: [id] })).structuredContent.media_buys[0].status).toBe('active');
    const done = await call('comply_test_controller', { scenario: 'force_media_buy_status', account: sandbox, params: { media_buy_id: id, status: 'completed' } });
    expect(done.structuredContent).toMatchObject({ success: true, current_state: 'completed' });
    const back = await call('comply_test_controller', { scenario: 'force_media_buy_status', account: sandbox, params: { media_buy_id: id, status: 'active' } });
    expect(back.structuredContent).toMatchObject({ success: false, error: 'INVALID_TRANSITION', current_state: 'completed' });
    const unknown = await call('comply_test_controller', { scenario: 'force_media_buy_status', account: sandbox, params: { media_buy_id: 'mb_nope', status: 'active' } });
    expect(unknown.structuredContent).toMatchObject({ success: false, error: 'NOT_FOUND' });
    const bad = await call('comply_test_controller', { scenario: 'simulate_budget_spend', account: sandbox, params: { media_buy_id: id, spend_percentage: 140 } });
    expect(bad.structuredContent).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
  });
});
