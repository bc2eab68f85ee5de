import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { issueApiKey } from '../../src/application/api-keys';
import { ROOT, graphql, startTestGateway } from '../support/gateway';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { startReceiver } from '../support/receiver';

const run = promisify(execFile);
/** A broker of this file's own (the suite's shared one must not be stopped under other tests). */
const PRIVATE = { KAFKA_PORT: '19392', KAFKA_CONTROLLER_PORT: '19393' };
const kafka = (verb: 'start' | 'stop' | 'restart') =>
  run('bash', [path.join(ROOT, 'scripts', 'kafka.sh'), verb], { env: { ...process.env, ...PRIVATE }, timeout: 150_000 });

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

// KAFKA_BROKERS says the suite could start a broker here (java and Maven are present).
describeWith('PostgreSQL and Kafka', Boolean(PG_ADMIN_URL && KAFKA_BROKERS), 'a Kafka restart (DESIGN §6: loses no webhook)', () => {
  it('status changes made while the broker is down are delivered as signed webhooks once it is back, none lost', async () => {
    await kafka('start');
    const db = await createTestDatabase('adcp_kafka_restart');
    const receiver = await startReceiver();
    let gw: Awaited<ReturnType<typeof startTestGateway>> | undefined;
    try {
      gw = await startTestGateway({
        EVENT_STORE_URL: db.url,
        KAFKA_BROKERS: `127.0.0.1:${PRIVATE.KAFKA_PORT}`,
        KAFKA_TOPIC: `adcp.restart.${Date.now()}`,
        APPROVAL_POLICY: 'manual',
        ALLOW_PRIVATE_WEBHOOK_URLS: '1',
      });
      const now = { now: new Date().toISOString() };
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      const seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
      await eventually(async () => (await fetch(`${gw!.url}/readyz`)).status === 200, 30_000, 'readyz');
      const create = async (i: number) => {
        const res = await fetch(`${gw!.url}/api/tasks/create_media_buy`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` },
          body: JSON.stringify({
            buyer_ref: `restart-${i}`,
            brand_manifest: { url: 'https://acme.example' },
            packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
            start_time: { type: 'asap' },
            end_time: future(7),
            push_notification_config: { url: `${receiver.origin}/webhooks/create_media_buy/agent_1/rt_restart_${i}`, operation_id: `op-restart-${i}` },
          }),
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as { task_id: string }).task_id;
      };
      const approve = async (taskId: string) =>
        expect((await graphql(gw!.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, seller)).body.data).toEqual({ approveTask: 'completed' });
      const statuses = (taskId: string) => [...new Set(receiver.received.filter((w) => w.json.task_id === taskId).map((w) => w.json.status as string))].sort();

      // The path works before the outage.
      const before = await create(0);
      await approve(before);
      await eventually(() => statuses(before).length === 2, 60_000, 'webhooks before the outage');

      // The broker goes down; the buyer and the operator carry on (commands do not need Kafka).
      await kafka('stop');
      const during = [await create(1), await create(2), await create(3)];
      for (const t of during) await approve(t);

      // Back on the same data: every status change made meanwhile reaches the buyer.
      await kafka('restart');
      await eventually(() => during.every((t) => statuses(t).length === 2), 120_000, 'webhooks for the changes made during the outage');
      for (const t of [before, ...during]) expect(statuses(t)).toEqual(['completed', 'working']);
      // At-least-once, deduplicable: every copy of a status carries one idempotency_key.
      for (const t of during) {
        for (const status of ['working', 'completed']) {
          const keys = new Set(receiver.received.filter((w) => w.json.task_id === t && w.json.status === status).map((w) => w.json.idempotency_key));
          expect(keys.size).toBe(1);
        }
      }
    } finally {
      await gw?.stop();
      await receiver.close();
      await db.drop();
      await kafka('stop');
    }
  }, 300_000);
});
