import http from 'node:http';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually, freePort } from '../support/infra';

describe('a buyer whose webhook endpoint is down (DESIGN §6: loses no webhook)', () => {
  it('refused connections are recorded and retried with back-off; the webhooks arrive once the endpoint is back, one idempotency_key each', async () => {
    const port = await freePort();
    const received: { status: string; key: string }[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status: string; idempotency_key: string };
        received.push({ status: body.status, key: body.idempotency_key });
        res.writeHead(200).end();
      });
    });
    const gw = await startTestGateway({ APPROVAL_POLICY: 'manual', ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
    try {
      const now = { now: new Date().toISOString() };
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      const seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const call = async (name: string, body: unknown) =>
        (await (await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) })).json()) as Record<string, any>;
      const created = await call('create_media_buy', {
        buyer_ref: 'endpoint-down',
        brand_manifest: { url: 'https://acme.example' },
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
        start_time: { type: 'asap' },
        end_time: new Date(Date.now() + 7 * 86_400_000).toISOString(),
        push_notification_config: { url: `http://127.0.0.1:${port}/webhooks/create_media_buy/agent_1/rt_down`, operation_id: 'op-down' },
      });
      expect((await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: created.task_id }, seller)).body.data).toEqual({ approveTask: 'completed' });
      const activity = async () =>
        ((await call('get_media_buys', { media_buy_id: created.media_buy_id, include_webhook_activity: true })).media_buys[0].webhook_activity as Record<string, any>[]) ?? [];

      // Nobody listens: attempts fail as connection errors, and keep being retried.
      await eventually(async () => (await activity()).filter((a) => a.status === 'connection_error').length >= 4, 30_000, 'failed attempts');
      const failed = (await activity()).filter((a) => a.status === 'connection_error');
      expect(failed[0]).toMatchObject({ http_status_code: null, error_message: expect.stringContaining('ECONNREFUSED') });

      // The endpoint comes back: both status changes arrive, each under the key its failed attempts had.
      await new Promise<void>((r) => receiver.listen(port, '127.0.0.1', r));
      await eventually(() => new Set(received.map((w) => w.status)).size === 2, 60_000, 'delivery after the endpoint returned');
      expect([...new Set(received.map((w) => w.status))].sort()).toEqual(['completed', 'working']);
      const final = await eventually(async () => {
        const a = await activity();
        return a.filter((x) => x.status === 'success').length === 2 ? a : undefined;
      }, 10_000, 'success recorded');
      for (const w of received) expect(final!.filter((a) => a.idempotency_key === w.key).some((a) => a.status === 'connection_error')).toBe(true);
    } finally {
      await gw.stop();
      if (receiver.listening) await new Promise((r) => receiver.close(r));
    }
  }, 120_000);
});
