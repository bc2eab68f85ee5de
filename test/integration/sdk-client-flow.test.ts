import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { startReceiver } from '../support/receiver';
import { sdkClientSteps } from '../support/sdk-client';
import { sdkVerifyWebhooks } from '../support/sdk-oracle';

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };

/**
 * The spec's flow driven by `@adcp/sdk`'s own buyer client, over MCP and over A2A: products, formats, a buy
 * that waits for the seller (approved through GraphQL), creatives, delivery. The task's webhooks
 * reach a buyer endpoint and the SDK's verifier checks every signature.
 */
describe.each([
  { protocol: 'mcp' as const, path: '/mcp' },
  // A2A clients are pointed at the agent's base URL; the card there names the endpoint.
  { protocol: 'a2a' as const, path: '' },
])('@adcp/sdk client over $protocol drives the media-buy flow', ({ protocol, path }) => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let buyer: string;
  let seller: string;

  beforeAll(async () => {
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
    receiver = await startReceiver();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
    seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, ctx)).key;
  });
  afterAll(async () => {
    await receiver?.close();
    await gw?.stop();
  });

  it('get_products → list_creative_formats → create_media_buy (seller approves) → sync_creatives → get_media_buy_delivery', async () => {
    const agentUrl = `${gw.url}${path}`;
    const [synced, products, formats, created] = await sdkClientSteps({
      agentUrl,
      protocol,
      token: buyer,
      steps: [
        { method: 'syncAccounts', params: { accounts: [{ ...ACCOUNT, billing: 'operator' }] } },
        { method: 'getProducts', params: { buying_mode: 'brief', brief: 'premium connected TV sports', account: ACCOUNT } },
        { method: 'listCreativeFormats', params: {} },
        {
          method: 'createMediaBuy',
          params: {
            account: ACCOUNT,
            brand: { domain: 'acme-outdoor.com' },
            start_time: 'asap',
            end_time: future(20),
            // A guaranteed product: the seller signs the IO first.
            packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
            push_notification_config: { url: `${receiver.origin}/adcp/create_media_buy`, operation_id: `op-sdk-flow-${protocol}` },
          },
        },
      ],
    });
    expect(synced).toMatchObject({ success: true, data: { accounts: [{ action: 'created', status: 'active', sandbox: false }] } });
    expect(products!.success).toBe(true);
    expect(products!.data!.products.map((p: { product_id: string }) => p.product_id)).toContain('premium_ctv_guaranteed');
    const video = (formats!.data!.formats as { format_id: { agent_url: string; id: string } }[]).find((f) => f.format_id.id === 'video_16x9_30s')!;
    expect(video).toBeDefined();
    expect(created).toMatchObject({ success: true, status: 'submitted', data: { status: 'submitted', task_id: expect.any(String) } });
    const taskId = created!.data!.task_id as string;

    const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: taskId }, seller);
    expect(approved.body.errors).toBeUndefined();
    const completed = (await eventually(() => receiver.received.find((w) => w.json.status === 'completed'), 20_000, 'the completed webhook'))!;
    const buyId = completed.json.result.media_buy_id as string;
    expect(completed.json).toMatchObject({ task_id: taskId, operation_id: `op-sdk-flow-${protocol}`, task_type: 'create_media_buy', protocol: 'media-buy', result: { media_buy_id: buyId } });

    const jwks = ((await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] }).keys;
    const verdicts = await sdkVerifyWebhooks(jwks, receiver.received.map((w) => ({ method: w.method, url: w.url, headers: w.headers, body: w.body })));
    expect(verdicts.length).toBeGreaterThanOrEqual(2);
    expect(verdicts.map((v) => v.status)).toEqual(verdicts.map(() => 'verified'));
    expect(receiver.received.map((w) => w.json.status)).toEqual(expect.arrayContaining(['working', 'completed']));

    const [buys, creatives, delivery, task] = await sdkClientSteps({
      agentUrl,
      protocol,
      token: buyer,
      steps: [
        { method: 'getMediaBuys', params: { account: ACCOUNT, media_buy_ids: [buyId] } },
        {
          method: 'syncCreatives',
          params: {
            account: ACCOUNT,
            creatives: [{ creative_id: 'spot-30s', name: 'Spot 30s', format_id: video.format_id, assets: { video: { asset_type: 'video', url: 'https://cdn.acme-outdoor.com/spot.mp4', width: 1920, height: 1080, duration_ms: 30000 } } }],
            assignments: [{ creative_id: 'spot-30s', package_id: completed.json.result.packages[0].package_id }],
          },
        },
        { method: 'getMediaBuyDelivery', params: { account: ACCOUNT, media_buy_ids: [buyId] } },
        { method: 'executeTask', params: { task: 'tasks_get', params: { task_id: taskId, include_result: true } } },
      ],
    });
    expect(buys).toMatchObject({ success: true, data: { media_buys: [{ media_buy_id: buyId, confirmed_at: expect.any(String) }] } });
    expect(creatives).toMatchObject({ success: true, data: { creatives: [{ creative_id: 'spot-30s', action: 'created', status: 'approved' }] } });
    expect(delivery).toMatchObject({ success: true, data: { currency: 'USD', media_buy_deliveries: [{ media_buy_id: buyId, by_package: [expect.objectContaining({ pricing_model: 'cpm' })] }] } });
    expect(task).toMatchObject({ success: true, data: { task_id: taskId, status: 'completed', protocol: 'media-buy' } });
  }, 120_000);
});
