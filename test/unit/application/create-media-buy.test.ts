import { generateKeyPairSync } from 'node:crypto';
import { allProjections } from '../../../projections';
import { mediaBuyQueries } from '../../../projections/media-buys';
import { DEMO_CATALOG, publishCatalog } from '../../../src/application/catalog';
import type { ApplicationSettings, TaskPorts } from '../../../src/application/ports';
import { runTaskConsistently, type TaskContext } from '../../../src/application/tasks/context';
import { createMediaBuy } from '../../../src/application/tasks/media-buy-tasks';
import { MemoryEventStore } from '../../../src/eventstore/memory';
import { withAppendWatermark } from '../../../src/eventstore/watermark';
import { ProjectionRunner } from '../../../src/projections/runner';
import { MediaBuyCache } from '../../../src/caches/media-buy-cache';
import { QueryCache } from '../../../src/caches/query-cache';
import { SqliteReadModelStore } from '../../../src/readmodel/sqlite';
import { AppError } from '../../../src/shared/errors';

/**
 * create_media_buy as the application runs it, on ports built here in memory (the event log, the
 * read models in an in-memory SQLite, the projections over them, a fixed clock): no HTTP, no
 * composition root, no file. What the task answers, appends and shows to the next read.
 */
describe('create_media_buy on in-memory ports', () => {
  const NOW = new Date('2026-03-02T10:00:00.000Z');
  let ports: TaskPorts;
  let runner: ProjectionRunner;

  async function portsWith(settings: Partial<ApplicationSettings> = {}): Promise<TaskPorts> {
    const store = withAppendWatermark(new MemoryEventStore());
    const readModels = new SqliteReadModelStore(':memory:');
    await publishCatalog(store, DEMO_CATALOG, { now: NOW.toISOString(), principal: 'system' });
    runner = new ProjectionRunner(store, readModels, allProjections);
    await runner.start();
    const { privateKey } = generateKeyPairSync('ed25519');
    return {
      store,
      readModels,
      projections: runner,
      clock: () => NOW,
      cache: new QueryCache(),
      mediaBuyCache: new MediaBuyCache(),
      settings: { publicUrl: undefined, approvalPolicy: 'rules', allowPrivateWebhookUrls: false, originOverrides: new Map(), ...settings },
      signer: { activeKey: () => ({ kid: 'unit', alg: 'ed25519', privateKey }) },
      log: require('pino')({ level: 'silent' }),
    };
  }

  const buyer = (org = 'org_acme'): TaskContext => ({ ports, principal: { org, keyId: `key_${org}`, role: 'buyer' } });
  const request = (over: Record<string, unknown> = {}) => ({
    buyer_ref: 'q2-news',
    brand_manifest: { url: 'https://acme.example' },
    packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
    start_time: 'asap',
    end_time: '2026-04-01T00:00:00.000Z',
    ...over,
  });

  beforeEach(async () => {
    ports = await portsWith();
  });
  afterEach(async () => {
    await runner.stop();
    await ports.readModels.close();
    await ports.store.close();
  });

  it('creates an active buy, starting at the clock it is handed, and the next read shows it', async () => {
    const answer = await runTaskConsistently(createMediaBuy, request(), buyer());
    expect(answer).toMatchObject({ buyer_ref: 'q2-news', status: 'active', currency: 'USD', total_budget: 1000, start_time: NOW.toISOString() });
    const id = answer.media_buy_id as string;

    const events = await ports.store.readStream(`media-buy-${id}`);
    expect(events.map((e) => e.type)).toEqual(['MediaBuyCreated']);
    expect(events[0]!.metadata).toMatchObject({ principal: 'key_org_acme', time: NOW.toISOString() });
    // Read-your-writes: the read model has it when the task answers, for its owner only.
    expect(await mediaBuyQueries.byId(ports.readModels, 'org_acme', id)).toMatchObject({ media_buy_id: id, status: 'active' });
    expect(await mediaBuyQueries.byId(ports.readModels, 'org_other', id)).toBeUndefined();
  });

  it('waits for the seller when a product requires approval: pending, with a task recorded first', async () => {
    const answer = await runTaskConsistently(createMediaBuy, request({ packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 5000 }] }), buyer());
    expect(answer).toMatchObject({ status: 'pending', task_id: expect.stringMatching(/^task_/) });
    const task = await ports.store.readStream(`task-${answer.task_id as string}`);
    expect(task.map((e) => e.type)).toEqual(['TaskSubmitted']);
    expect(task[0]!.position).toBeLessThan((await ports.store.readStream(`media-buy-${answer.media_buy_id as string}`))[0]!.position);
  });

  it('follows the approval setting it is handed', async () => {
    await runner.stop();
    ports = await portsWith({ approvalPolicy: 'manual' });
    expect(await runTaskConsistently(createMediaBuy, request(), buyer())).toMatchObject({ status: 'pending' });
  });

  it('answers a replay of the same idempotency_key with the first answer, marked replayed, appending nothing', async () => {
    const key = 'unit-create-0000000001';
    const first = await runTaskConsistently(createMediaBuy, request({ idempotency_key: key }), buyer());
    const head = await ports.store.headPosition();
    const again = await runTaskConsistently(createMediaBuy, request({ idempotency_key: key }), buyer());
    expect(again).toEqual({ ...first, replayed: true });
    expect(await ports.store.headPosition()).toBe(head);
  });

  it('refuses an unknown product and a taken buyer_ref with their codes and fields, appending nothing', async () => {
    const head = await ports.store.headPosition();
    const unknown = runTaskConsistently(createMediaBuy, request({ packages: [{ product_id: 'nope', pricing_option_id: 'cpm_usd_fixed', budget: 10 }] }), buyer());
    await expect(unknown).rejects.toBeInstanceOf(AppError);
    await expect(unknown).rejects.toMatchObject({ code: 'PRODUCT_NOT_FOUND', field: 'packages[0].product_id' });
    expect(await ports.store.headPosition()).toBe(head);

    await runTaskConsistently(createMediaBuy, request(), buyer());
    await expect(runTaskConsistently(createMediaBuy, request(), buyer())).rejects.toMatchObject({ code: 'CONFLICT', field: 'buyer_ref' });
    // Another buyer's buyer_ref is its own.
    await expect(runTaskConsistently(createMediaBuy, request(), buyer('org_other'))).resolves.toMatchObject({ status: 'active' });
  });

  it('refuses invalid input before it runs (the schema is the one parser)', async () => {
    await expect(runTaskConsistently(createMediaBuy, request({ end_time: 'soon' }), buyer())).rejects.toMatchObject({ code: 'VALIDATION_ERROR', field: 'end_time' });
  });
});
