import { allProjections } from '../../projections';
import { openEventStore, openReadModels } from '../../src/app';
import { loadConfig } from '../../src/config';
import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner } from '../../src/projections/runner';
import { SigningKeystore } from '../../src/signing/keystore';
import { AttemptClaims } from '../../src/webhooks/attempt-claims';
import { WebhookDeliveryWorker } from '../../src/webhooks/delivery-worker';
import { WebhookPoster } from '../../src/webhooks/http-poster';
import { startTestGateway, tempDir } from '../support/gateway';
import { eventually } from '../support/infra';
import { startReceiver } from '../support/receiver';

/** A projection new to the database: the runner replays the whole log for it. */
const newcomer: Projection = { name: 'replay-probe', version: 1, tables: [], ddl: { sqlite: [], postgres: [] }, handles: ['WebhookScheduled'], evolve: () => [] };

describe('webhook delivery and a replaying projection runner', () => {
  it('fires delivered before a restart are not sent again when projections replay the log', async () => {
    const receiver = await startReceiver();
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir, ALLOW_PRIVATE_WEBHOOK_URLS: '1' };
    const gw = await startTestGateway(env);
    try {
      for (let i = 0; i < 3; i++) {
        await gw.app.store.append(`webhook-replay-${i}`, [
          {
            type: 'WebhookScheduled',
            data: { idempotency_key: `whk_replay_${i}_xxxxxxxxxxxx`, owner: 'acme', notification_type: 'task_status', url: `${receiver.origin}/hook`, auth: { scheme: 'rfc9421' }, body: JSON.stringify({ i }), scheduled_at: new Date().toISOString() },
          },
        ], { expectedVersion: 'no_stream' });
      }
      await eventually(() => receiver.received.length === 3, 15_000, 'three deliveries');
      // Every attempt recorded and projected before the restart.
      await eventually(async () => (await gw.app.store.readAll({ limit: 10_000 })).filter((e) => e.type === 'WebhookAttempted').length === 3, 10_000, 'attempts recorded');
    } finally {
      await gw.stop();
    }

    // The same data, a runner with one more projection (it starts from position 0), and a worker.
    const config = loadConfig({ ...env, LOG_LEVEL: 'silent' });
    const store = await openEventStore(config);
    const readModels = await openReadModels(config);
    const projections = new ProjectionRunner(store, readModels, [...allProjections, newcomer]);
    const worker = new WebhookDeliveryWorker({
      store,
      readModels,
      projections,
      keys: new SigningKeystore({ file: config.webhookSigning.keysFile }, 'request-signing'),
      poster: new WebhookPoster({ allowPrivate: true }),
      claims: await AttemptClaims.open(readModels, 30_000),
      log: { warn: () => {}, error: () => {} } as never,
    });
    try {
      await projections.start();
      await worker.start();
      await projections.waitFor(await store.headPosition());
      expect(projections.caughtUpWith(await store.headPosition())).toBe(true);
      // Give a wrong re-send every chance to happen (the worker polls its queue every 500 ms).
      await new Promise((r) => setTimeout(r, 1500));
      expect(receiver.received).toHaveLength(3);
    } finally {
      await worker.stop();
      await projections.stop();
      await readModels.close();
      await store.close();
      await receiver.close();
    }
  }, 60_000);
});
