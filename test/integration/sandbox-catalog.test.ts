import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Json = Record<string, any>;

const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/**
 * Issue 35, item 2: a product just offered is bought. Once a buyer's sandbox has seeded products,
 * get_products under its sandbox account shows exactly those (a scripted test's world), while
 * get_products without an account shows the operator's catalog; a product offered either way is
 * bought under the sandbox account, and one offered nowhere is PRODUCT_NOT_FOUND.
 */
describe('sandbox catalog: discovery and purchase agree', () => {
  let gw: Gateway;
  let key: string;
  const call = async (name: string, args: unknown): Promise<{ isError: boolean; body: Json }> => mcpCall(gw.url, key, name, args);
  const buy = (productId: string, pricingOptionId: string, n: number) =>
    call('create_media_buy', {
      account: SANDBOX,
      brand: { domain: 'acme.example' },
      packages: [{ product_id: productId, pricing_option_id: pricingOptionId, budget: 1000 }],
      start_time: 'asap',
      end_time: future(10),
      idempotency_key: `sandbox-catalog-buy-${n}`.padEnd(24, '0'),
    });

  beforeAll(async () => {
    gw = await startTestGateway();
    key = (await issueApiKey(gw.app.ports.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const seeded = await call('comply_test_controller', {
      scenario: 'seed_product',
      account: SANDBOX,
      params: { product_id: 'fixture_display', fixture: { delivery_type: 'non_guaranteed', channels: ['display'], format_ids: [{ id: 'display_300x250' }], pricing_options: [{ pricing_option_id: 'cpm_fixture', pricing_model: 'cpm', currency: 'USD', fixed_price: 8 }] } },
    });
    expect(seeded.body).toMatchObject({ success: true });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('the sandbox lists its seeded products; without an account, the operator catalog', async () => {
    const sandboxed = await call('get_products', { account: SANDBOX, brief: 'display', buying_mode: 'brief' });
    expect(sandboxed.body.products.map((p: Json) => p.product_id)).toEqual(['fixture_display']);
    const operator = await call('get_products', { brief: 'display', buying_mode: 'brief' });
    expect(operator.body.products.map((p: Json) => p.product_id)).toContain('news_display_dynamic');
  });

  it('an operator product, offered without an account, is bought under the sandbox account; the seeded one too', async () => {
    const operatorBuy = await buy('news_display_run_of_site', 'cpm_usd_fixed', 1);
    expect({ isError: operatorBuy.isError, error: operatorBuy.body.adcp_error }).toEqual({ isError: false, error: undefined });
    expect(operatorBuy.body.media_buy_id).toEqual(expect.any(String));
    expect((await buy('fixture_display', 'cpm_fixture', 2)).isError).toBe(false);
  });

  it('a product offered nowhere is PRODUCT_NOT_FOUND', async () => {
    const none = await buy('no_such_product', 'cpm_usd_fixed', 3);
    expect(none.body.adcp_error).toMatchObject({ code: 'PRODUCT_NOT_FOUND', field: 'packages[0].product_id' });
  });
});
