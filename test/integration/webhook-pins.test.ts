import { generateKeyPairSync } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

/**
 * A publisher's adagents.json `signing_keys[]` pin, applied by an endpoint registered with
 * pinPublisherDomain: a webhook signed with a key outside the pin is refused (key_unknown) even
 * though the seller's JWKS publishes it; once the pin lists that key, it verifies.
 */
describe('adagents.json signing-key pins on the receiver', () => {
  it('refuses keys outside the pin, accepts pinned ones', async () => {
    const seller = await startTestGateway({ APPROVAL_POLICY: 'manual', ALLOW_PRIVATE_WEBHOOK_URLS: '1', PUBLIC_URL: 'https://seller.example' });
    const stranger = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const sellerKey = ((await (await fetch(`${seller.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] }).keys[0]!;
    const pinned = (keys: Record<string, unknown>[]) => ({
      body: { $schema: 'x', last_updated: '2026-11-23T10:00:00Z', authorized_agents: [{ url: 'https://seller.example/mcp', authorized_for: 'All', authorization_type: 'property_tags', property_tags: ['all'], signing_keys: keys }] },
    });
    const served: Record<string, unknown> = { '/.well-known/adagents.json': pinned([{ kid: 'stranger', kty: 'OKP', crv: 'Ed25519', x: stranger.x }]) };
    const origins = await startOrigins({ 'pinning-publisher.example': served as never });
    const buyerGw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: `seller.example=${seller.url},${origins.overrides}` });
    try {
      const now = { now: new Date().toISOString() };
      const sellerBuyer = (await issueApiKey(seller.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      const sellerOp = (await issueApiKey(seller.app.store, { org: 'pub', role: 'seller' }, now)).key;
      const buyer = (await issueApiKey(buyerGw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      const admin = (await issueApiKey(buyerGw.app.store, { org: 'ops', role: 'admin' }, now)).key;
      for (const gw of [seller, buyerGw]) await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const revalidate = async () => {
        await buyerGw.app.rateLimiter.release('revalidate-domain:pinning-publisher.example');
        const r = await fetch(`${buyerGw.url}/api/registry/publisher/pinning-publisher.example/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
        expect(((await r.json()) as { adagents_valid: boolean }).adagents_valid).toBe(true);
      };
      await revalidate();
      const endpoint = (await graphql(buyerGw.url, 'mutation { registerWebhookEndpoint(agentId: "adcp_gateway", senderDomain: "seller.example", pinPublisherDomain: "pinning-publisher.example") }', undefined, buyer)).body.data!
        .registerWebhookEndpoint as { url_template: string };
      const url = endpoint.url_template.replace('{task_type}', 'create_media_buy');
      const order = async (ref: string) => {
        const r = await fetch(`${seller.url}/api/tasks/create_media_buy`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${sellerBuyer}` },
          body: JSON.stringify({ buyer_ref: ref, brand_manifest: { url: 'https://acme.example' }, packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 100 }], start_time: { type: 'asap' }, end_time: new Date(Date.now() + 86_400_000 * 3).toISOString(), push_notification_config: { url, operation_id: `op-${ref}` } }),
        });
        const taskId = ((await r.json()) as { task_id: string }).task_id;
        await graphql(seller.url, 'mutation($t: ID!) { requestInput(taskId: $t, reason: "need IO") }', { t: taskId }, sellerOp);
        return taskId;
      };
      const activity = async (taskId: string) => {
        const r = await fetch(`${seller.url}/api/tasks/get_media_buys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${sellerBuyer}` }, body: JSON.stringify({ include_webhook_activity: true }) });
        const buys = ((await r.json()) as { media_buys: { webhook_activity: { task_id?: string; status: string; http_status_code: number | null }[] }[] }).media_buys;
        return buys.flatMap((b) => b.webhook_activity).filter((a) => a.task_id === taskId && a.status !== 'pending');
      };

      const refused = await order('pin-1');
      const first = (await eventually(async () => (await activity(refused)).at(-1), 20_000, 'first attempt'))!;
      expect(first).toMatchObject({ status: 'failed', http_status_code: 401 });

      served['/.well-known/adagents.json'] = pinned([sellerKey]);
      await revalidate();
      const accepted = await order('pin-2');
      await eventually(async () => (await activity(accepted)).some((a) => a.status === 'success'), 20_000, 'pinned key accepted');
      const got = await graphql(buyerGw.url, 'query($t: String) { receivedWebhooks(taskId: $t) { id sender status taskId data } }', { t: accepted }, buyer);
      expect(got.body.data!.receivedWebhooks).toHaveLength(1);
    } finally {
      await buyerGw.stop();
      await seller.stop();
      await origins.close();
    }
  }, 60_000);
});
