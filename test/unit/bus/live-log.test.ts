import { LiveLog } from '../../../src/bus/live-log';
import { liveEvents, MAX_WAITING } from '../../../src/application/live-events';
import { MemoryEventStore } from '../../../src/eventstore/memory';
import type { StoredEvent } from '../../../src/eventstore/port';
import { eventually } from '../../support/infra';

const fail = (err: unknown) => {
  throw err;
};

describe('the live log', () => {
  let store: MemoryEventStore;
  let live: LiveLog;
  const append = (n: number, stream = (i: number) => `s-${i % 7}`) =>
    (async () => {
      for (let i = 0; i < n; i++) {
        await store.append(stream(i), [{ type: 'Tick', data: { i, owner: i % 2 ? 'acme' : 'globex' } }]);
        if (i % 25 === 0) await new Promise((r) => setImmediate(r));
      }
    })();

  beforeEach(async () => {
    store = new MemoryEventStore();
    await append(1200); // more than one catch-up read
    live = new LiveLog(store, fail, 50);
  });
  afterEach(async () => {
    await live.stop();
    await store.close();
  });

  it('a follower resuming from a position gets every later event once, in order, while appends go on', async () => {
    const got: number[] = [];
    const more = append(300);
    live.follow(100, (events) => got.push(...events.map((e) => e.position)), fail);
    await more;
    const expected = (await store.readAll({ fromPosition: 101, limit: 10_000 })).map((e) => e.position);
    expect(expected.length).toBe(1400);
    await eventually(() => got.length >= expected.length, 10_000, 'every event');
    expect(got).toEqual(expected);
  });

  it('a follower from now gets only what comes after, and nothing once stopped', async () => {
    const got: number[] = [];
    const follow = live.follow(undefined, (events) => got.push(...events.map((e) => e.position)), fail);
    await follow.ready;
    await append(10);
    await eventually(() => got.length === 10, 10_000, 'the new events');
    expect(got[0]).toBe(1201);
    follow.stop();
    await append(5);
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toHaveLength(10);
  });

  it('reads the store only while someone follows (and a little after)', async () => {
    const reads = jest.spyOn(store, 'readAll');
    await append(20);
    await new Promise((r) => setTimeout(r, 50));
    expect(reads).not.toHaveBeenCalled(); // nobody follows: the log costs nothing
    const follow = live.follow(undefined, () => undefined, fail);
    await follow.ready;
    await append(5);
    await eventually(() => reads.mock.calls.length > 0, 5_000, 'the store to be read');
    follow.stop();
    await new Promise((r) => setTimeout(r, 200)); // past the idle delay (50 ms here)
    const after = reads.mock.calls.length;
    await append(20);
    await new Promise((r) => setTimeout(r, 100));
    expect(reads.mock.calls.length).toBe(after);
  });

  it('liveEvents: selects in log order; a subscriber that falls too far behind gets what waited, then an error saying how to resume', async () => {
    const mine = liveEvents(live, 0, (e: StoredEvent) => ((e.data as { owner: string }).owner === 'acme' ? (e.data as { i: number }).i : undefined));
    expect(await mine.next()).toEqual({ value: 1, done: false }); // the log's first acme event
    expect(await mine.next()).toEqual({ value: 3, done: false });
    await mine.return!();

    // Never read while the 1,200 events already logged arrive: more than MAX_WAITING wait.
    const slow = liveEvents(live, 0, (e: StoredEvent) => e.position);
    await new Promise((r) => setTimeout(r, 200));
    const values: number[] = [];
    let error: unknown;
    try {
      for (;;) {
        const r = await slow.next();
        if (r.done) break;
        values.push(r.value);
      }
    } catch (err) {
      error = err;
    }
    expect(values).toEqual(Array.from({ length: MAX_WAITING }, (_, i) => i + 1));
    expect(String(error)).toContain(`fell ${MAX_WAITING} events behind`);
  });
});
