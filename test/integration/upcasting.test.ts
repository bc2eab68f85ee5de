import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEventStore, openReadModels, openStoreAdapter } from '../../src/app';
import { loadState } from '../../src/application/command-handler';
import { loadConfig, type Config } from '../../src/config';
import { webhookDecider, webhookStream } from '../../src/domain/webhook/webhook';
import type { EventStore, NewEvent, StoredEvent } from '../../src/eventstore/port';
import { ProjectionRunner } from '../../src/projections/runner';
import { replayInPlace } from '../support/projection-engines';
import { toPublicEvent } from '../../src/public-events/mapping';
import type { ReadModelStore } from '../../src/readmodel/port';
import { allProjections } from '../../projections';
import { PG_ADMIN_URL, createTestDatabase, describeWith } from '../support/infra';

/**
 * Issue 37 item 4, the must-show: a log written in an older event shape (here WebhookScheduled v1,
 * before 67c1aa1 renamed `report_type` to `adcp_notification_type`, and no version in the
 * metadata) is read, decided on, projected and published in the current shape, and its read
 * models equal those of the same history written in the current shape, after a rebuild too.
 */

const AT = '2026-11-20T10:00:00.000Z';
const BUY = 'mb_01upcast';

/** One buy's report webhooks and a task webhook, each attempted: the history both logs hold. */
function history(shape: 'v1' | 'current'): { stream: string; events: NewEvent[] }[] {
  const report = (key: string, kind: 'scheduled' | 'final', seq?: number) => ({
    stream: webhookStream(key),
    events: [
      {
        id: `0193a000-0000-7000-8000-0000000000${key.slice(-2)}`,
        type: 'WebhookScheduled',
        data: {
          idempotency_key: key,
          owner: 'org_buyer',
          notification_type: 'delivery_report',
          media_buy_id: BUY,
          ...(shape === 'v1' ? { report_type: kind } : { adcp_notification_type: kind }),
          ...(seq !== undefined ? { sequence_number: seq } : {}),
          url: 'https://buyer.example/hooks?token=secret',
          auth: { scheme: 'rfc9421' },
          body: JSON.stringify({ media_buy_id: BUY, notification_type: kind }),
          scheduled_at: AT,
        },
        metadata: { time: AT, principal: 'delivery-reporter' },
      },
      {
        id: `0193a000-0000-7000-8000-0000000001${key.slice(-2)}`,
        type: 'WebhookAttempted',
        data: { idempotency_key: key, attempt: 1, started_at: AT, at: AT, status: 'success', http_status_code: 204, error_message: null, response_time_ms: 12, next_attempt_at: null },
        metadata: { time: AT },
      },
    ],
  });
  const task = {
    stream: webhookStream('wh_task_03'),
    events: [
      {
        id: '0193a000-0000-7000-8000-000000000003',
        type: 'WebhookScheduled',
        // A task webhook never had an AdCP kind: the upcaster leaves it without one.
        data: { idempotency_key: 'wh_task_03', owner: 'org_buyer', notification_type: 'task_status', task_id: 'task_1', url: 'https://buyer.example/t', auth: { scheme: 'rfc9421' }, body: '{}', scheduled_at: AT },
        metadata: { time: AT },
      },
    ],
  };
  return [report('wh_rep_01', 'scheduled', 1), report('wh_rep_02', 'final', 2), task];
}

/** The old log: appended straight to the adapter, as a gateway without event versions wrote it. */
async function writeOld(config: Config): Promise<void> {
  const raw = await openStoreAdapter(config);
  try {
    for (const { stream, events } of history('v1')) await raw.append(stream, events);
  } finally {
    await raw.close();
  }
}

/** The same history written today: through the store every command uses. */
async function writeCurrent(config: Config): Promise<void> {
  const store = await openEventStore(config);
  try {
    for (const { stream, events } of history('current')) await store.append(stream, events);
  } finally {
    await store.close();
  }
}

/** Every row of every read model, in a stable order: what two logs' projections are compared by. */
async function readModelDump(rm: ReadModelStore): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const p of allProjections) {
    for (const table of p.tables) out[table] = (await rm.query<Record<string, unknown>>(`SELECT * FROM ${table}`)).map((r) => JSON.stringify(r, Object.keys(r).sort())).sort();
  }
  return out;
}

async function project(store: EventStore, rm: ReadModelStore): Promise<void> {
  const runner = new ProjectionRunner(store, rm, allProjections);
  await runner.start();
  await runner.waitFor(await store.headPosition(), undefined, 20_000);
  await runner.stop();
}

const scheduledData = (events: StoredEvent[]) => events.filter((e) => e.type === 'WebhookScheduled').map((e) => e.data as Record<string, unknown>);

function upcastingSuite(engine: string, available: boolean, configs: () => Promise<{ old: Config; current: Config; cleanup: () => Promise<void> }>): void {
  describeWith(engine, available, `upcasting on ${engine}: an old-shape log reads, projects and publishes as the current one`, () => {
    let old: Config;
    let current: Config;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ old, current, cleanup } = await configs());
      await writeOld(old);
      await writeCurrent(current);
    });
    afterAll(() => cleanup?.());

    it('history is untouched: the adapter still holds v1 rows without a version, the current log records version 2', async () => {
      const raw = await openStoreAdapter(old);
      const rawNew = await openStoreAdapter(current);
      try {
        const [a, b] = [await raw.readAll(), await rawNew.readAll()];
        expect(scheduledData(a).map((d) => d.report_type)).toEqual(['scheduled', 'final', undefined]);
        expect(a.every((e) => e.metadata.schemaVersion === undefined)).toBe(true);
        expect(b.filter((e) => e.type === 'WebhookScheduled').map((e) => e.metadata.schemaVersion)).toEqual([2, 2, 2]);
        expect(b.filter((e) => e.type === 'WebhookAttempted').map((e) => e.metadata.schemaVersion)).toEqual([1, 1]);
      } finally {
        await raw.close();
        await rawNew.close();
      }
    });

    it('every read path (readAll, readStream, subscribe) and the decider see the current shape', async () => {
      const store = await openEventStore(old);
      try {
        const expected = (await (async () => {
          const s = await openEventStore(current);
          try {
            return scheduledData(await s.readAll());
          } finally {
            await s.close();
          }
        })());
        expect(expected.map((d) => d.adcp_notification_type)).toEqual(['scheduled', 'final', undefined]);

        const all = await store.readAll();
        expect(scheduledData(all)).toEqual(expected);
        expect(all.filter((e) => e.type === 'WebhookScheduled').every((e) => e.metadata.schemaVersion === 2)).toBe(true);

        const stream = await store.readStream(webhookStream('wh_rep_02'));
        expect(scheduledData(stream)).toEqual([expected[1]]);

        const seen: StoredEvent[] = [];
        const sub = store.subscribe((batch) => void seen.push(...batch), { batchSize: 2 });
        await sub.caughtUp;
        await sub.stop();
        expect(scheduledData(seen)).toEqual(expected);

        const { state } = await loadState(store, webhookStream('wh_rep_01'), webhookDecider);
        expect(state.state === 'none' ? undefined : state.scheduled.adcp_notification_type).toBe('scheduled');
      } finally {
        await store.close();
      }
    });

    it('projections and a rebuild give the same read models as the log written in the current shape; without upcasting they would not', async () => {
      const [oldStore, oldRm, curStore, curRm] = [await openEventStore(old), await openReadModels(old), await openEventStore(current), await openReadModels(current)];
      try {
        await project(oldStore, oldRm);
        await project(curStore, curRm);
        const want = await readModelDump(curRm);
        expect(want.webhook_activity!.map((r) => JSON.parse(r).notification_type).sort()).toEqual(['final', 'scheduled', 'task_status']);
        expect(await readModelDump(oldRm)).toEqual(want);

        for (const p of allProjections) await replayInPlace(oldStore, oldRm, p);
        expect(await readModelDump(oldRm)).toEqual(want);

        // The control: the same rebuild reading the adapter as stored shows what the upcaster fixes.
        const raw = await openStoreAdapter(old);
        try {
          await replayInPlace(raw, oldRm, allProjections.find((p) => p.name === 'webhooks')!);
          const unfixed = await readModelDump(oldRm);
          expect(unfixed.webhook_activity!.map((r) => JSON.parse(r).notification_type).sort()).toEqual(['delivery_report', 'delivery_report', 'task_status']);
        } finally {
          await raw.close();
        }
      } finally {
        await oldRm.close();
        await curRm.close();
        await oldStore.close();
        await curStore.close();
      }
    });

    it('the public mapping publishes the old log as it publishes the current one', async () => {
      const [oldStore, curStore] = [await openEventStore(old), await openEventStore(current)];
      try {
        const published = async (s: EventStore) => (await s.readAll()).map((e) => toPublicEvent(e)).filter((p) => p !== undefined);
        const want = await published(curStore);
        expect(want.map((p) => p.name)).toEqual(['webhook.delivery_attempted', 'webhook.delivery_attempted']);
        expect(await published(oldStore)).toEqual(want);
      } finally {
        await oldStore.close();
        await curStore.close();
      }
    });
  });
}

upcastingSuite('SQLite', true, async () => {
  const dirs = [fs.mkdtempSync(path.join(os.tmpdir(), 'upcast-old-')), fs.mkdtempSync(path.join(os.tmpdir(), 'upcast-cur-'))];
  const [old, current] = dirs.map((d) => loadConfig({ DATA_DIR: d }));
  return { old: old!, current: current!, cleanup: async () => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })) };
});

upcastingSuite('PostgreSQL', Boolean(PG_ADMIN_URL), async () => {
  const dbs = [await createTestDatabase('adcp_upcast'), await createTestDatabase('adcp_upcast')];
  const [old, current] = dbs.map((db) => loadConfig({ DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'upcast-pg-')), EVENT_STORE_URL: db.url }));
  return { old: old!, current: current!, cleanup: async () => { for (const db of dbs) await db.drop(); } };
});
