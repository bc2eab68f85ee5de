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
    // Over A2A the client also registers its own webhooks the A2A way (configuration.pushNotificationConfig,
    // HMAC-signed with its secret): those come back in A2A's own envelope, and the client verifies them.
    const webhooks = protocol === 'a2a' ? { urlTemplate: `${receiver.origin}/sdk/{task_type}/{operation_id}`, secret: 'a2a-flow-secret-0123456789abcdef-0123' } : undefined;
    const [synced, products, formats, created] = await sdkClientSteps({
      agentUrl,
      protocol,
      webhooks,
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

    // Registered in the task's input: the MCP-style envelope, RFC 9421-signed, whatever the transport.
    const mcpStyle = receiver.received.filter((w) => w.path.startsWith('/adcp/'));
    const jwks = ((await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] }).keys;
    const verdicts = await sdkVerifyWebhooks(jwks, mcpStyle.map((w) => ({ method: w.method, url: w.url, headers: w.headers, body: w.body })));
    expect(verdicts.length).toBeGreaterThanOrEqual(2);
    expect(verdicts.map((v) => v.status)).toEqual(verdicts.map(() => 'verified'));
    expect(mcpStyle.map((w) => w.json.status)).toEqual(expect.arrayContaining(['working', 'completed']));

    if (webhooks) {
      // Registered the A2A way: a TaskStatusUpdateEvent for `working`, the whole Task for `completed`.
      const a2aFinal = (await eventually(() => receiver.received.find((w) => w.path.startsWith('/sdk/create_media_buy/') && w.json.kind === 'task'), 20_000, 'the A2A completed Task'))!;
      const a2a = receiver.received.filter((w) => w.path.startsWith('/sdk/create_media_buy/'));
      expect(a2a.map((w) => `${w.json.kind}:${w.json.status.state}`)).toEqual(expect.arrayContaining(['status-update:working', 'task:completed']));
      expect(a2aFinal.json).toMatchObject({ id: taskId, contextId: expect.any(String), status: { state: 'completed' } });
      const verified = await sdkClientSteps({
        agentUrl,
        protocol,
        webhooks,
        token: buyer,
        steps: a2a.map((w) => {
          const [, , taskType, operationId] = w.path.split('/');
          return { method: 'handleWebhook', params: { payload: w.json, taskType, operationId, signature: w.headers['x-adcp-signature'], timestamp: w.headers['x-adcp-timestamp'], rawBody: w.body } };
        }),
      });
      expect(verified.map((v) => v.error)).toEqual(a2a.map(() => undefined));
      expect(verified.map((v) => v.data?.status)).toEqual(a2a.map((w) => w.json.status.state));
      expect(verified.find((v) => v.data?.status === 'completed')!.data).toMatchObject({ task_id: taskId, payload: { media_buy_id: buyId } });
      // The same bytes with a forged signature are refused by the client.
      const forged = await sdkClientSteps({ agentUrl, protocol, webhooks, token: buyer, steps: [{ method: 'handleWebhook', params: { payload: a2aFinal.json, taskType: 'create_media_buy', operationId: 'x', signature: `sha256=${'0'.repeat(64)}`, timestamp: a2aFinal.headers['x-adcp-timestamp'], rawBody: a2aFinal.body } }] });
      expect(forged[0]).toMatchObject({ success: false, error: expect.stringMatching(/signature/i) });
    }

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
