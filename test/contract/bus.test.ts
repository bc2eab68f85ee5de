import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { EmbeddedBus } from '../../src/bus/embedded';
import { KafkaBus } from '../../src/bus/kafka';
import type { Bus } from '../../src/bus/port';
import type { StoredEvent } from '../../src/eventstore/port';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import type { ReadModelStore } from '../../src/readmodel/port';
import { SIDE_EFFECTS_DONE, recordSideEffectsDone } from '../../src/readmodel/side-effects-watermark';
import { SqliteReadModelStore } from '../../src/readmodel/sqlite';
import { KAFKA_BROKERS, describeWith, eventually } from '../support/infra';

interface Rig {
  store: SqliteEventStore;
  bus: Bus;
  /** A second bus over the same store and checkpoints (a restarted process). */
  reopen: () => Promise<Bus>;
  /** The checkpoints' store, as `log import` / `log copy` open it to record the side-effects mark. */
  checkpoints: ReadModelStore;
  cleanup: () => Promise<void>;
}

const uniq = () => randomBytes(4).toString('hex');

/** Collects deliveries per consumer; `ids` keeps duplicates so at-least-once stays visible. */
function collector() {
  const got: StoredEvent[] = [];
  return {
    got,
    handler: async (events: StoredEvent[]) => {
      got.push(...events);
    },
    ids: () => got.map((e) => e.id),
  };
}

function busContract(name: string, open: () => Promise<Rig>, groupWait: number): void {
  describe(`Bus contract: ${name}`, () => {
    let rig: Rig;
    const extra: Bus[] = [];
    beforeEach(async () => {
      rig = await open();
      await rig.bus.start();
    });
    afterEach(async () => {
      for (const b of extra.splice(0)) await b.close();
      await rig.bus.close();
      await rig.cleanup();
    });

    const appendMany = async (n: number, prefix = 's') => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        await rig.store.append(`${prefix}-${i % 4}`, [{ type: 'Tick', data: { i, prefix } }]);
      }
      for (const e of await rig.store.readAll({ limit: 100_000 })) ids.push(e.id);
      return ids;
    };

    it('delivers every event to each named group, in order per stream', async () => {
      const ids = await appendMany(40);
      const a = collector();
      const b = collector();
      const ga = rig.bus.consumer(`a-${uniq()}`);
      const gb = rig.bus.consumer(`b-${uniq()}`);
      await ga.start(a.handler);
      await gb.start(b.handler);
      await eventually(() => new Set(a.ids()).size === 40 && new Set(b.ids()).size === 40, groupWait, 'both groups');
      expect(new Set(a.ids())).toEqual(new Set(ids));
      expect(new Set(b.ids())).toEqual(new Set(ids));
      for (const c of [a, b]) {
        const byStream = new Map<string, number[]>();
        for (const e of c.got) byStream.set(e.streamId, [...(byStream.get(e.streamId) ?? []), e.streamVersion]);
        for (const versions of byStream.values()) expect(versions).toEqual([...versions].sort((x, y) => x - y));
      }
      // A live append after the consumers caught up reaches them too.
      await rig.store.append('live', [{ type: 'Tick', data: { live: true } }]);
      await eventually(() => a.got.some((e) => e.streamId === 'live') && b.got.some((e) => e.streamId === 'live'), groupWait, 'live');
    });

    it('resumes a group from its checkpoint after a restart, without replaying what it acknowledged', async () => {
      const group = `resume-${uniq()}`;
      await appendMany(10, 'first');
      const first = collector();
      const c1 = rig.bus.consumer(group);
      await c1.start(first.handler);
      await eventually(() => new Set(first.ids()).size === 10, groupWait, 'first 10');
      await c1.stop();
      await rig.bus.close();

      await appendMany(5, 'second');
      const bus2 = await rig.reopen();
      extra.push(bus2);
      await bus2.start();
      const second = collector();
      await bus2.consumer(group).start(second.handler);
      await eventually(() => new Set(second.ids()).size >= 5, groupWait, 'next 5');
      // Give a wrongly replaying consumer time to show it, then check nothing old came back.
      await rig.store.append('marker', [{ type: 'Tick', data: {} }]);
      await eventually(() => second.got.some((e) => e.streamId === 'marker'), groupWait, 'marker');
      expect(second.got.filter((e) => (e.data as { prefix?: string }).prefix === 'first')).toEqual([]);
      expect(second.got.filter((e) => (e.data as { prefix?: string }).prefix === 'second')).toHaveLength(5);
    });

    it('starts past a moved log\'s side-effects mark (the source made those effects), and resumes there after a restart', async () => {
      // What `log copy` leaves: a log nobody has consumed here yet, marked as done up to its head.
      await rig.bus.close();
      await appendMany(12, 'moved');
      const mark = await rig.store.headPosition();
      expect(await recordSideEffectsDone(rig.checkpoints, mark)).toBe(mark);
      expect(await recordSideEffectsDone(rig.checkpoints, mark - 5)).toBe(mark); // never moves back
      expect((await rig.checkpoints.getCheckpoint(SIDE_EFFECTS_DONE)).position).toBe(mark);

      const group = `moved-${uniq()}`;
      const bus2 = await rig.reopen();
      extra.push(bus2);
      await bus2.start(); // Kafka: the relay starts here, past the mark
      const after = collector();
      await bus2.consumer(group).start(after.handler);
      await rig.store.append('new', [{ type: 'Tick', data: { prefix: 'new' } }]);
      await eventually(() => after.got.some((e) => e.streamId === 'new'), groupWait, 'the event after the move');
      expect(after.got.map((e) => e.streamId)).toEqual(['new']);
      await bus2.close();

      // Restarted: neither the moved events nor the one it acknowledged come back.
      await rig.store.append('newer', [{ type: 'Tick', data: { prefix: 'newer' } }]);
      const bus3 = await rig.reopen();
      extra.push(bus3);
      await bus3.start();
      const restarted = collector();
      await bus3.consumer(group).start(restarted.handler);
      await eventually(() => restarted.got.some((e) => e.streamId === 'newer'), groupWait, 'the event after the restart');
      expect(restarted.got.map((e) => e.streamId)).toEqual(['newer']);
    });

    it('redelivers a batch whose handler failed (at-least-once)', async () => {
      await appendMany(6, 'retry');
      let failures = 0;
      const seen: string[] = [];
      await rig.bus.consumer(`retry-${uniq()}`).start(async (events) => {
        if (failures === 0 && events.some((e) => (e.data as { i: number }).i === 3)) {
          failures++;
          throw new Error('handler failed once');
        }
        seen.push(...events.map((e) => e.id));
      });
      await eventually(() => new Set(seen).size === 6, groupWait * 2, 'all six after a failure');
      expect(failures).toBe(1);
    });
  });
}

busContract(
  'embedded',
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-bus-'));
    const file = path.join(dir, 'db.sqlite');
    const store = new SqliteEventStore({ file, pollIntervalMs: 20 });
    const rms: SqliteReadModelStore[] = [];
    const rm = () => {
      const r = new SqliteReadModelStore(file);
      rms.push(r);
      return r;
    };
    return {
      store,
      bus: new EmbeddedBus(store, rm()),
      reopen: async () => new EmbeddedBus(store, rm()),
      checkpoints: rm(),
      cleanup: async () => {
        for (const r of rms) await r.close();
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  15_000,
);

describeWith('Kafka', !!KAFKA_BROKERS, 'kafka bus', () => {
  const brokers = (KAFKA_BROKERS ?? '').split(',');

  busContract(
    'kafka',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-kbus-'));
      const file = path.join(dir, 'db.sqlite');
      const store = new SqliteEventStore({ file, pollIntervalMs: 20 });
      const topic = `adcp.events.test-${uniq()}`;
      const rms: SqliteReadModelStore[] = [];
      const make = () => {
        const r = new SqliteReadModelStore(file);
        rms.push(r);
        return new KafkaBus(store, r, { brokers, topic, clientId: 'bus-contract', partitions: 3 });
      };
      return {
        store,
        bus: make(),
        reopen: async () => make(),
        checkpoints: (() => {
          const r = new SqliteReadModelStore(file);
          rms.push(r);
          return r;
        })(),
        cleanup: async () => {
          for (const r of rms) await r.close();
          await store.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    },
    45_000,
  );

  it('passes over messages that are not events (reported, not retried forever), delivering the events around them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-kjunk-'));
    const file = path.join(dir, 'db.sqlite');
    const store = new SqliteEventStore({ file, pollIntervalMs: 20 });
    const rm = new SqliteReadModelStore(file);
    const topic = `adcp.events.test-${uniq()}`;
    const reported: string[] = [];
    const bus = new KafkaBus(store, rm, { brokers, topic, clientId: 'bus-junk', partitions: 1, onError: (err) => reported.push((err as Error).message) });
    const producer = new Kafka({ clientId: 'junk', brokers, logLevel: logLevel.NOTHING }).producer();
    const got: string[] = [];
    try {
      await bus.start();
      await store.append('s-1', [{ type: 'Before', data: {} }]);
      await eventually(() => bus.publishedPosition() > 0, 45_000, 'relay published the first event');
      await producer.connect();
      // A tombstone, text, JSON of the wrong shape, and an event-like object without a position.
      await producer.send({ topic, messages: [{ key: 's-1', value: null }, { key: 's-1', value: 'not json' }, { key: 's-1', value: '[1,2]' }, { key: 's-1', value: JSON.stringify({ id: 'x', streamId: 's-1', type: 'Forged', data: {} }) }] });
      await store.append('s-1', [{ type: 'After', data: {} }]);
      await bus.consumer('junk-reader').start(async (events) => {
        for (const e of events) got.push(e.type);
      });
      await eventually(() => got.includes('After'), 45_000, 'the event after the junk');
      expect(got).toEqual(['Before', 'After']);
      // onError also hears of transient broker trouble; only the skips are this test's.
      const skipped = reported.filter((m) => m.startsWith('skipped a message'));
      expect(skipped.map((m) => m.replace(/\(topic [^,]+, /, '('))).toEqual([1, 2, 3, 4].map((o) => `skipped a message that is not an event (partition 0, offset ${o})`));
    } finally {
      await producer.disconnect();
      await bus.close();
      await rm.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('publishes each event to the topic keyed by stream id with type, position and event-id headers', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-kraw-'));
    const file = path.join(dir, 'db.sqlite');
    const store = new SqliteEventStore({ file, pollIntervalMs: 20 });
    const rm = new SqliteReadModelStore(file);
    const topic = `adcp.events.test-${uniq()}`;
    const bus = new KafkaBus(store, rm, { brokers, topic, clientId: 'bus-raw' });
    const raw = new Kafka({ clientId: 'raw', brokers, logLevel: logLevel.NOTHING }).consumer({ groupId: `raw-${uniq()}` });
    try {
      await bus.start();
      const { position } = await store.append('media_buy-1', [{ type: 'MediaBuyCreated', data: { ü: 'ünïcödé' } }]);
      const [stored] = await store.readStream('media_buy-1');
      const got: { key?: string; headers: Record<string, string>; value: unknown }[] = [];
      await raw.connect();
      await raw.subscribe({ topic, fromBeginning: true });
      await raw.run({
        eachMessage: async ({ message }) => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
          got.push({ key: message.key?.toString(), headers, value: JSON.parse(message.value!.toString()) });
        },
      });
      await eventually(() => got.length === 1, 45_000, 'raw message');
      expect(got[0]!.key).toBe('media_buy-1');
      expect(got[0]!.headers).toEqual({ type: 'MediaBuyCreated', position: String(position), 'event-id': stored!.id });
      expect(got[0]!.value).toEqual(JSON.parse(JSON.stringify(stored)));
      expect(bus.publishedPosition()).toBe(position);
    } finally {
      await raw.disconnect();
      await bus.close();
      await rm.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
