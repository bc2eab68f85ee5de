import fs from 'node:fs';
import path from 'node:path';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, ROOT, startTestGateway, tempDir } from '../support/gateway';
import { eventually } from '../support/infra';
import { startReceiver } from '../support/receiver';

/**
 * Impairments from catalog changes: a publisher property a live buy's product sold leaves the
 * operator's catalog → an open impairment (get_media_buys `impairments[]`, health `impaired`) and
 * one webhook on the buy's persistent channel; it comes back → resolved, one closing webhook with
 * the same notification_id.
 */
describe('impairments (catalog republished under a running buy)', () => {
  it('opens on a depublished property, fires once, and resolves when it returns', async () => {
    const demo = JSON.parse(fs.readFileSync(path.join(ROOT, 'src/domain/catalog/demo-catalog.json'), 'utf8'));
    const withRecipes = structuredClone(demo);
    withRecipes.products.find((p: { product_id: string }) => p.product_id === 'news_display_run_of_site').publisher_domains = ['news.example', 'recipes.example'];
    const withoutRecipes = structuredClone(withRecipes);
    withoutRecipes.publisher_properties = withoutRecipes.publisher_properties.filter((p: { publisher_domain: string }) => p.publisher_domain !== 'recipes.example');
    withoutRecipes.products = withoutRecipes.products
      .filter((p: { product_id: string }) => p.product_id !== 'recipes_homepage_takeover')
      .map((p: { publisher_domains: string[] }) => ({ ...p, publisher_domains: p.publisher_domains.filter((d) => d !== 'recipes.example') }));

    const dir = tempDir();
    const catalogFile = path.join(dir, 'catalog.json');
    fs.writeFileSync(catalogFile, JSON.stringify(withRecipes));
    const receiver = await startReceiver();
    const env = { DATA_DIR: dir, CATALOG_FILE: catalogFile, APPROVAL_POLICY: 'never', ALLOW_PRIVATE_WEBHOOK_URLS: '1' };
    let gw = await startTestGateway(env);
    let buyer = '';
    const task = async (name: string, body: unknown) =>
      (await (await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) })).json()) as Record<string, any>;
    try {
      buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const created = await task('create_media_buy', {
        buyer_ref: 'imp-1',
        brand_manifest: { url: 'https://acme.example' },
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 900 }],
        start_time: { type: 'asap' },
        end_time: new Date(Date.now() + 10 * 86_400_000).toISOString(),
        push_notification_config: { url: `${receiver.origin}/persistent`, operation_id: 'op-persistent' },
      });
      expect(created.status).toBe('active');
      const before = await task('get_media_buys', { media_buy_id: created.media_buy_id });
      expect(before.media_buys[0]).toMatchObject({ health: 'ok', impairments: [] });
      await gw.stop();

      fs.writeFileSync(catalogFile, JSON.stringify(withoutRecipes));
      gw = await startTestGateway(env);
      const opened = (await eventually(async () => {
        const r = await task('get_media_buys', { media_buy_id: created.media_buy_id });
        return r.media_buys[0].impairments.length === 1 ? r.media_buys[0] : undefined;
      }, 20_000, 'impairment open'))!;
      expect(opened.health).toBe('impaired');
      const imp = opened.impairments[0];
      expect(imp).toMatchObject({
        resource_type: 'property',
        resource_id: 'recipes.example',
        package_ids: [created.packages[0].package_id],
        transition: { from: 'published', to: 'depublished' },
        reason_code: 'property_depublished',
      });
      expect(imp.impairment_id).toMatch(/^imp_/);
      const fire = (await eventually(() => receiver.received.find((w) => w.json.notification_id === imp.impairment_id), 20_000, 'impairment webhook'))!;
      expect(fire.json).toMatchObject({ operation_id: 'op-persistent', result: { notification_type: 'impairment', media_buy_id: created.media_buy_id, impairment: { impairment_id: imp.impairment_id } } });
      expect(fire.headers['signature-input']).toContain('tag="adcp/webhook-signing/v1"');
      // The typed graph: the impairment on the buy, and the webhook that told of it in its activity.
      const TYPED = 'query($id: ID!) { mediaBuy(id: $id) { impairments { id reasonCode resourceId packageIds resolvedAt } webhookActivity { notificationType state } } }';
      const typed = async () => (await graphql(gw.url, TYPED, { id: created.media_buy_id }, buyer)).body.data!.mediaBuy;
      expect((await typed()).impairments).toEqual([{ id: imp.impairment_id, reasonCode: 'property_depublished', resourceId: 'recipes.example', packageIds: [created.packages[0].package_id], resolvedAt: null }]);
      await eventually(async () => (await typed()).webhookActivity.some((a: { notificationType: string; state: string }) => a.notificationType === 'impairment' && a.state === 'delivered'), 20_000, 'the impairment webhook in the buy’s activity');
      await gw.stop();

      // The same catalog again (a restart without changes) opens nothing new and fires nothing.
      gw = await startTestGateway(env);
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      await gw.stop();

      fs.writeFileSync(catalogFile, JSON.stringify(withRecipes));
      gw = await startTestGateway(env);
      await eventually(async () => (await task('get_media_buys', { media_buy_id: created.media_buy_id })).media_buys[0].impairments.length === 0, 20_000, 'resolved');
      const fires = (await eventually(() => {
        const f = receiver.received.filter((w) => w.json.notification_id === imp.impairment_id);
        return f.length === 2 ? f : undefined;
      }, 20_000, 'closing webhook'))!;
      expect(fires[1]!.json.result.impairment).toMatchObject({ impairment_id: imp.impairment_id, resolved_at: expect.any(String) });
      expect(fires[0]!.json.idempotency_key).not.toBe(fires[1]!.json.idempotency_key);
      expect((await task('get_media_buys', { media_buy_id: created.media_buy_id })).media_buys[0].health).toBe('ok');
      expect(receiver.received.filter((w) => w.json.result?.notification_type === 'impairment')).toHaveLength(2);
      expect((await typed()).impairments).toEqual([expect.objectContaining({ id: imp.impairment_id, resolvedAt: expect.any(String) })]);
    } finally {
      await gw.stop();
      await receiver.close();
    }
  }, 90_000);
});
