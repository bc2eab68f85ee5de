import { ConcurrencyError, type EventStore, type StoredEvent } from '../../src/eventstore/port';
import { eventually } from '../support/infra';

export interface StoreFactory {
  /** A fresh, empty store. */
  create(): Promise<EventStore>;
  /** A second handle on the same store (another connection, or another process for SQLite). */
  second?(first: EventStore): Promise<EventStore>;
  cleanup?(): Promise<void>;
  /** Two-process concurrent appenders (SQLite); returns the successes per process. */
  concurrentProcesses?(stream: string, perProcess: number): Promise<number[]>;
}

const ev = (type: string, data: unknown = {}) => ({ type, data });

/** The event store contract, written once and run against every adapter. */
export function eventStoreContract(name: string, factory: StoreFactory): void {
  describe(`EventStore contract: ${name}`, () => {
    let store: EventStore;
    const others: EventStore[] = [];

    beforeEach(async () => {
      store = await factory.create();
    });
    afterEach(async () => {
      for (const o of others.splice(0)) await o.close();
      await store.close();
      await factory.cleanup?.();
    });

    it('appends and reads a stream in order with metadata', async () => {
      const r1 = await store.append('order-1', [ev('Created', { n: 1 }), ev('Updated', { n: 2 })], { expectedVersion: 'no_stream' });
      expect(r1.nextVersion).toBe(2);
      const r2 = await store.append('order-1', [ev('Updated', { n: 3 })], {
        expectedVersion: 2,
      });
      expect(r2.nextVersion).toBe(3);
      expect(r2.position).toBeGreaterThan(r1.position);
      const events = await store.readStream('order-1');
      expect(events.map((e) => [e.type, e.streamVersion, (e.data as { n: number }).n])).toEqual([
        ['Created', 1, 1],
        ['Updated', 2, 2],
        ['Updated', 3, 3],
      ]);
      expect(events[0]!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(typeof events[0]!.metadata.time).toBe('string');
      expect(await store.readStream('order-1', { fromVersion: 2, limit: 1 })).toHaveLength(1);
      expect(await store.readStream('missing')).toEqual([]);
    });

    it('keeps caller metadata (principal, correlation, causation)', async () => {
      await store.append('m-1', [
        { type: 'X', data: {}, metadata: { principal: 'org-a', correlationId: 'c-1', causationId: 'e-0', time: '2026-01-01T00:00:00.000Z' } },
      ]);
      const [e] = await store.readStream('m-1');
      expect(e!.metadata).toMatchObject({ principal: 'org-a', correlationId: 'c-1', causationId: 'e-0', time: '2026-01-01T00:00:00.000Z' });
    });

    it('orders readAll by global position across streams', async () => {
      for (let i = 0; i < 20; i++) await store.append(`s-${i % 3}`, [ev('E', { i })]);
      const all = await store.readAll({ fromPosition: 0, limit: 100 });
      expect(all.map((e) => (e.data as { i: number }).i)).toEqual([...Array(20).keys()]);
      for (let i = 1; i < all.length; i++) expect(all[i]!.position).toBeGreaterThan(all[i - 1]!.position);
      const tail = await store.readAll({ fromPosition: all[10]!.position, limit: 5 });
      expect(tail.map((e) => (e.data as { i: number }).i)).toEqual([10, 11, 12, 13, 14]);
      expect(await store.headPosition()).toBe(all[19]!.position);
    });

    it('enforces every expected-version mode and appends nothing on conflict', async () => {
      await expect(store.append('c', [ev('A')], { expectedVersion: 'exists' })).rejects.toBeInstanceOf(ConcurrencyError);
      await store.append('c', [ev('A')], { expectedVersion: 'no_stream' });
      await expect(store.append('c', [ev('B')], { expectedVersion: 'no_stream' })).rejects.toMatchObject({ code: 'CONFLICT', actual: 1 });
      await expect(store.append('c', [ev('B'), ev('C')], { expectedVersion: 0 })).rejects.toMatchObject({ actual: 1 });
      await expect(store.append('c', [ev('B')], { expectedVersion: 5 })).rejects.toMatchObject({ actual: 1 });
      await store.append('c', [ev('B')], { expectedVersion: 'exists' });
      await store.append('c', [ev('C')], { expectedVersion: 'any' });
      await store.append('c', [ev('D')], { expectedVersion: 3 });
      expect((await store.readStream('c')).map((e) => e.type)).toEqual(['A', 'B', 'C', 'D']);
      // The refused appends may leave gaps in the positions; readAll steps over one once every
      // transaction older than the event after it has ended, on the whole server (PostgreSQL), so
      // another suite's long transaction there holds the read back for its duration.
      await eventually(async () => (await store.readAll()).length >= 4, 30_000, 'readAll past the refused appends');
      expect(await store.readAll()).toHaveLength(4);
    });

    it('appends made together fail alone: a version conflict and an unserialisable event reject only their own append', async () => {
      await store.append('grp-conflict', [ev('A')]);
      const results = await Promise.allSettled([
        store.append('grp-ok-1', [ev('A')]),
        store.append('grp-conflict', [ev('B')], { expectedVersion: 0 }),
        // The second event cannot be stored as JSON: nothing of this append may remain.
        store.append('grp-bad', [ev('A'), ev('B', { n: 1n } as never)]),
        store.append('grp-ok-2', [ev('A'), ev('B')]),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(ConcurrencyError);
      expect(await store.readStream('grp-bad')).toEqual([]);
      expect((await store.readStream('grp-ok-2')).map((e) => e.type)).toEqual(['A', 'B']);
      expect((await store.readStream('grp-conflict')).map((e) => e.type)).toEqual(['A']);
      // (Past the failed appends' gaps, as in the test above.)
      const grp = async () => (await store.readAll({ limit: 100 })).filter((e) => e.streamId.startsWith('grp-')).map((e) => e.streamId);
      await eventually(async () => (await grp()).length >= 4, 30_000, 'readAll past the failed appends');
      expect(await grp()).toEqual(['grp-conflict', 'grp-ok-1', 'grp-ok-2', 'grp-ok-2']);
    });

    it('lets exactly one of two concurrent appenders win (two connections)', async () => {
      const other = factory.second ? await factory.second(store) : store;
      if (other !== store) others.push(other);
      await store.append('race', [ev('Start')]);
      let wins = 0;
      let conflicts = 0;
      for (let round = 0; round < 25; round++) {
        const version = (await store.readStream('race')).length;
        const results = await Promise.allSettled([
          store.append('race', [ev('A', { round })], { expectedVersion: version }),
          other.append('race', [ev('B', { round })], { expectedVersion: version }),
        ]);
        for (const r of results) {
          if (r.status === 'fulfilled') wins++;
          else if (r.reason instanceof ConcurrencyError) conflicts++;
          else throw r.reason;
        }
      }
      expect(wins).toBe(25);
      expect(conflicts).toBe(25);
      const versions = (await store.readStream('race')).map((e) => e.streamVersion);
      expect(versions).toEqual([...Array(26).keys()].map((i) => i + 1));
    });

    if (factory.concurrentProcesses) {
      it('lets two processes append to one stream without losing or duplicating a version', async () => {
        const successes = await factory.concurrentProcesses!('proc-race', 200);
        const events = await store.readStream('proc-race');
        expect(events.length).toBe(successes.reduce((a, b) => a + b, 0));
        expect(events.map((e) => e.streamVersion)).toEqual(events.map((_, i) => i + 1));
        expect(successes.every((n) => n > 0)).toBe(true);
      });
    }

    it('catches up, then follows live appends without gaps or duplicates', async () => {
      for (let i = 0; i < 300; i++) await store.append(`live-${i % 7}`, [ev('Before', { i })]);
      const seen: StoredEvent[] = [];
      const sub = store.subscribe(async (batch) => void seen.push(...batch), { batchSize: 64 });
      await sub.caughtUp;
      expect(seen).toHaveLength(300);
      const writers = [0, 1, 2].map(async (w) => {
        for (let i = 0; i < 100; i++) await store.append(`live-w${w}`, [ev('After', { w, i })]);
      });
      await Promise.all(writers);
      await eventually(() => seen.length >= 600, 20_000, '600 events delivered');
      await sub.stop();
      expect(seen).toHaveLength(600);
      const positions = seen.map((e) => e.position);
      expect(new Set(positions).size).toBe(600);
      for (let i = 1; i < positions.length; i++) expect(positions[i]!).toBeGreaterThan(positions[i - 1]!);
      expect(positions).toEqual((await store.readAll({ limit: 1000 })).map((e) => e.position));
    });

    it('under contention (8 appenders on two handles), a live subscriber sees every event once, in position order', async () => {
      const other = factory.second ? await factory.second(store) : store;
      if (other !== store) others.push(other);
      const seen: StoredEvent[] = [];
      const sub = store.subscribe(async (batch) => void seen.push(...batch), { batchSize: 50 });
      await sub.caughtUp;
      // Appends to shared and to own streams, of one and of several events: commits land in any order.
      const appended = await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          const handle = w % 2 ? other : store;
          let n = 0;
          for (let i = 0; i < 40; i++) {
            const events = Array.from({ length: 1 + (i % 3) }, (_, k) => ev('Contended', { w, i, k }));
            await handle.append(i % 4 === 0 ? 'contended-shared' : `contended-${w}`, events);
            n += events.length;
          }
          return n;
        }),
      );
      const total = appended.reduce((a, b) => a + b, 0);
      await eventually(() => seen.length >= total, 30_000, `${total} events delivered`);
      await sub.stop();
      const positions = seen.map((e) => e.position);
      expect(positions).toHaveLength(total);
      for (let i = 1; i < positions.length; i++) expect(positions[i]!).toBeGreaterThan(positions[i - 1]!);
      expect(positions).toEqual((await store.readAll({ limit: 10_000 })).map((e) => e.position));
      const shared = (await store.readStream('contended-shared')).map((e) => e.streamVersion);
      expect(shared).toEqual(shared.map((_, i) => i + 1));
      expect(shared).toHaveLength(8 * 19); // per appender: i = 0, 4, …, 36 with 1 + i % 3 events each
    });

    it('subscribes from a position and retries a failing batch', async () => {
      for (let i = 0; i < 10; i++) await store.append('retry', [ev('E', { i })]);
      const all = await store.readAll();
      let failures = 0;
      const seen: number[] = [];
      const sub = store.subscribe(
        async (batch) => {
          if (failures === 0) {
            failures++;
            throw new Error('transient');
          }
          seen.push(...batch.map((e) => (e.data as { i: number }).i));
        },
        { fromPosition: all[4]!.position, onError: () => {} },
      );
      await eventually(() => seen.length >= 6, 20_000, 'retried batch');
      await sub.stop();
      expect(seen).toEqual([4, 5, 6, 7, 8, 9]);
    });

    it('round-trips large and unicode payloads exactly', async () => {
      const unicode = {
        text: 'Grüße, 世界! 🎉🇫🇷 עברית العربية ñ Z̤͔ͧ̑̓ä͖̭̈̇ \u2028 \\ "quoted" \t tab',
        astral: '𝕬𝖉𝕮𝕻 🚀',
        nested: { arr: [1, 2.5, -3, true, null, 'x'], deep: { k: 'v' } },
      };
      const big = { blob: 'x'.repeat(1024 * 1024), list: Array.from({ length: 2000 }, (_, i) => ({ i, s: `item-${i}` })) };
      await store.append('payload', [ev('Unicode', unicode), ev('Big', big)]);
      const [u, b] = await store.readStream('payload');
      expect(u!.data).toEqual(unicode);
      expect(b!.data).toEqual(big);
    });

    it('refuses U+0000 and unpaired surrogates in any string of data or metadata on every adapter, writing nothing; a backslash before u0000 and paired surrogates are fine', async () => {
      for (const [data, metadata] of [
        [{ buyer_ref: 'a\u0000b' }, {}],
        [{ nested: [{ deep: '\u0000' }] }, {}],
        [{ ['k\u0000']: 1 }, {}],
        [{ ok: true }, { principal: 'p\u0000' }],
        [{ after_backslash: '\\\u0000' }, {}],
        [{ lone_high: 'a\ud800' }, {}],
        [{ ['\udfff']: 'lone low as a key' }, {}],
      ] as const) {
        await expect(store.append('nul', [ev('Ok', { first: true }), { type: 'Nul', data, metadata }])).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
      }
      expect(await store.readStream('nul')).toEqual([]);
      const literal = { text: '\\u0000 is six characters here', two: '\\\\u0000', emoji: '\ud83d\ude00', escapedText: '\\ud800' };
      await store.append('nul', [ev('Literal', literal)]);
      expect((await store.readStream('nul'))[0]!.data).toEqual(literal);
    });

    it('an unstorable event in one of several concurrent appends fails that append alone', async () => {
      const results = await Promise.allSettled([
        store.append('group-1', [ev('A', { n: 1 })]),
        store.append('group-2', [ev('B', { n: 2 }), { type: 'Bad', data: { x: 'lone \ud800' } }]),
        store.append('group-3', [ev('C', { n: 3 })], { expectedVersion: 'no_stream' }),
      ]);
      expect(results.map((r) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'ok'))).toEqual(['ok', 'INVALID_REQUEST', 'ok']);
      expect({ one: await store.readStream('group-1'), two: await store.readStream('group-2'), three: await store.readStream('group-3') }).toMatchObject({
        one: [{ type: 'A', data: { n: 1 } }],
        two: [],
        three: [{ type: 'C', data: { n: 3 } }],
      });
    });

    it('stamps the commit time on metadata ahead of the caller\'s keys', async () => {
      await store.append('stamped', [{ type: 'X', data: {}, metadata: { principal: 'p', correlationId: 'c' } }, { type: 'Y', data: {} }]);
      const [x, y] = await store.readStream('stamped');
      expect({ x: Object.keys(x!.metadata), y: Object.keys(y!.metadata) }).toEqual({ x: ['time', 'principal', 'correlationId'], y: ['time'] });
      expect(Date.parse(x!.metadata.time as string)).toBeGreaterThan(0);
    });

    it('a stream id holding U+0000 or an unpaired surrogate reads as empty and cannot be appended to', async () => {
      for (const id of ['client\u0000', 'lone\ud800', '\udc00low']) {
        expect(await store.readStream(id)).toEqual([]);
        await expect(store.append(id, [ev('Ok', {})])).rejects.toMatchObject({ code: 'VALIDATION_ERROR', field: 'streamId' });
      }
      await store.append('pair\ud83d\ude00', [ev('Ok', {})]);
      expect(await store.readStream('pair\ud83d\ude00')).toHaveLength(1);
    });

    it('stores and pages a 10,000-event stream', async () => {
      const batch = (start: number) => Array.from({ length: 500 }, (_, i) => ev('Tick', { n: start + i }));
      for (let i = 0; i < 20; i++) await store.append('long', batch(i * 500), { expectedVersion: i * 500 });
      const events = await store.readStream('long');
      expect(events).toHaveLength(10_000);
      expect(events[9_999]!.streamVersion).toBe(10_000);
      expect((events[9_999]!.data as { n: number }).n).toBe(9_999);
      let count = 0;
      let from = 0;
      for (;;) {
        const page = await store.readAll({ fromPosition: from, limit: 1500 });
        if (page.length === 0) break;
        count += page.length;
        from = page[page.length - 1]!.position + 1;
      }
      expect(count).toBe(10_000);
    });

    it('rejects invalid input with a validation error', async () => {
      await expect(store.append('', [ev('A')])).rejects.toMatchObject({ code: 'VALIDATION_ERROR', field: 'streamId' });
      await expect(store.append('s', [ev('')])).rejects.toMatchObject({ code: 'VALIDATION_ERROR', field: 'events[0].type' });
      await expect(store.append('s', [ev('A')], { expectedVersion: -4 })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    });
  });
}
