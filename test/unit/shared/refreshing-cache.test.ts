import { RefreshingCache } from '../../../src/shared/refreshing-cache';

/** A cache on a hand-moved clock, and a loader whose answers the test scripts. */
function setup() {
  let now = 1_000_000;
  const cache = new RefreshingCache<string>({ ttlMs: 300_000, retryMs: 30_000, maxStaleMs: 86_400_000, now: () => now });
  const answers: (string | Error)[] = [];
  let calls = 0;
  let gate: Promise<void> | undefined;
  const load = async () => {
    calls++;
    if (gate) await gate;
    const a = answers.shift();
    if (a === undefined) throw new Error('no answer scripted');
    if (a instanceof Error) throw a;
    return a;
  };
  return {
    cache,
    load,
    answer: (...a: (string | Error)[]) => answers.push(...a),
    calls: () => calls,
    advance: (ms: number) => (now += ms),
    hold: () => {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('RefreshingCache', () => {
  it('fetches once, then answers from memory until the TTL', async () => {
    const t = setup();
    t.answer('v1');
    expect((await t.cache.get('k', t.load)).value).toBe('v1');
    t.advance(299_000);
    expect((await t.cache.get('k', t.load)).value).toBe('v1');
    expect(t.calls()).toBe(1);
  });

  it('one fetch for concurrent callers', async () => {
    const t = setup();
    t.answer('v1');
    const release = t.hold();
    const all = Promise.all([t.cache.get('k', t.load), t.cache.get('k', t.load), t.cache.refresh('k', t.load)]);
    release();
    expect((await all).map((e) => e.value)).toEqual(['v1', 'v1', 'v1']);
    expect(t.calls()).toBe(1);
  });

  it('past the TTL the old value answers at once while a refresh runs behind it', async () => {
    const t = setup();
    t.answer('v1', 'v2');
    await t.cache.get('k', t.load);
    t.advance(301_000);
    const release = t.hold();
    expect((await t.cache.get('k', t.load)).value).toBe('v1'); // not waiting for the hung refresh
    expect(t.calls()).toBe(2);
    release();
    await settle();
    expect((await t.cache.get('k', t.load)).value).toBe('v2');
    expect(t.calls()).toBe(2);
  });

  it('through an outage: the last value keeps answering, retried no sooner than retryMs, dropped after maxStaleMs', async () => {
    const t = setup();
    t.answer('v1');
    await t.cache.get('k', t.load);
    t.advance(301_000);
    t.answer(new Error('ECONNREFUSED'));
    expect((await t.cache.get('k', t.load)).value).toBe('v1');
    await settle();
    const down = await t.cache.get('k', t.load);
    expect(down).toMatchObject({ value: 'v1', error: 'ECONNREFUSED' });
    expect(t.calls()).toBe(2);
    t.advance(29_000);
    await t.cache.get('k', t.load);
    await t.cache.refresh('k', t.load); // an unknown kid during the outage does not refetch either
    expect(t.calls()).toBe(2);
    t.advance(2_000);
    t.answer(new Error('ECONNREFUSED'));
    expect((await t.cache.get('k', t.load)).value).toBe('v1');
    await settle();
    expect(t.calls()).toBe(3);
    // A day after the last good fetch, a failed refresh drops the value.
    t.advance(86_400_000);
    t.answer(new Error('ECONNREFUSED'));
    await t.cache.get('k', t.load);
    await settle();
    const gone = await t.cache.get('k', t.load);
    expect(gone.value).toBeUndefined();
    expect(gone.error).toBe('ECONNREFUSED');
  });

  it('a value older than maxStaleMs is never served: after a long idle spell the refresh is awaited', async () => {
    const t = setup();
    t.answer('v1');
    await t.cache.get('k', t.load);
    t.advance(3 * 86_400_000);
    t.answer('v2');
    expect((await t.cache.get('k', t.load)).value).toBe('v2');
    t.advance(3 * 86_400_000);
    t.answer(new Error('ECONNREFUSED'));
    const down = await t.cache.get('k', t.load);
    expect(down.value).toBeUndefined();
    expect(down.error).toBe('ECONNREFUSED');
  });

  it('with nothing fetched yet a failure is the answer, retried (and awaited) after retryMs', async () => {
    const t = setup();
    t.answer(new Error('ENOTFOUND'));
    const failed = await t.cache.get('k', t.load);
    expect(failed).toMatchObject({ error: 'ENOTFOUND', fetchedAt: 0 });
    expect(failed.value).toBeUndefined();
    t.advance(10_000);
    expect((await t.cache.get('k', t.load)).error).toBe('ENOTFOUND');
    expect(t.calls()).toBe(1);
    t.advance(21_000);
    t.answer('v1');
    expect((await t.cache.get('k', t.load)).value).toBe('v1'); // the retry is waited for: nothing stale to serve
    expect(t.calls()).toBe(2);
  });

  it('refresh() fetches at once (a rotated key), at most once per retryMs', async () => {
    const t = setup();
    t.answer('v1', 'v2', 'v3');
    await t.cache.get('k', t.load);
    t.advance(31_000);
    expect((await t.cache.refresh('k', t.load)).value).toBe('v2');
    expect((await t.cache.refresh('k', t.load)).value).toBe('v2');
    expect(t.calls()).toBe(2);
    t.advance(31_000);
    expect((await t.cache.refresh('k', t.load)).value).toBe('v3');
    expect(t.calls()).toBe(3);
  });
});
