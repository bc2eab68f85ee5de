import pg from 'pg';
import { ConcurrencyError } from '../../src/eventstore/port';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import { PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';

/**
 * Group commit on PostgreSQL (adcp_append_batch, issue 39): appends made while earlier ones are
 * out go together in one transaction. Each still succeeds or fails on its own, the log keeps no
 * hole a reader would step over, and the batching really happens (appends of several streams
 * share a transaction id).
 */
describeWith('PostgreSQL', !!PG_ADMIN_URL, 'postgres group commit', () => {
  let db: { url: string; drop: () => Promise<void> };
  let store: PostgresEventStore;
  let sql: pg.Client;

  beforeEach(async () => {
    db = await createTestDatabase();
    store = await PostgresEventStore.connect({ connectionString: db.url, pollIntervalMs: 20 });
    sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
  });
  afterEach(async () => {
    await sql.end();
    await store.close();
    await db.drop();
  });

  /** Stream ids by the transaction that wrote them. */
  async function streamsByTransaction(): Promise<string[][]> {
    const { rows } = await sql.query<{ streams: string[] }>('SELECT array_agg(DISTINCT stream_id) AS streams FROM events GROUP BY transaction_id');
    return rows.map((r) => r.streams);
  }

  it('carries concurrent appends in shared transactions, each answered with its own version and positions', async () => {
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => store.append(`s-${i}`, [{ type: 'A', data: { i } }, { type: 'B', data: { i } }], { expectedVersion: 'no_stream' })));
    expect(results.every((r) => r.nextVersion === 2)).toBe(true);
    // Two events each, at the positions the answer says, in the stream the answer is for.
    for (const [i, r] of results.entries()) {
      const events = await store.readStream(`s-${i}`);
      expect(events.map((e) => [e.type, e.position, e.streamVersion, (e.data as { i: number }).i])).toEqual([
        ['A', r.position - 1, 1, i],
        ['B', r.position, 2, i],
      ]);
    }
    expect(new Set(results.map((r) => r.position)).size).toBe(60);
    // Batched for real: some transaction wrote several streams (60 appends, two calls out at a time).
    expect(Math.max(...(await streamsByTransaction()).map((s) => s.length))).toBeGreaterThan(1);
    expect(await store.readAll({ limit: 1000 })).toHaveLength(120);
  });

  it('fails only the appends that conflict; the rest of their transaction commits and the log settles past their gaps', async () => {
    // 20 creates of one stream among 40 of distinct ones, all at once.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? store.append('contested', [{ type: 'Won', data: { i } }], { expectedVersion: 'no_stream' }) : store.append(`own-${i}`, [{ type: 'Own', data: { i } }], { expectedVersion: 'no_stream' }))),
    );
    const contested = outcomes.filter((_, i) => i % 3 === 0);
    expect(contested.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of contested.filter((x) => x.status === 'rejected')) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(ConcurrencyError);
    expect(outcomes.filter((o, i) => i % 3 !== 0 && o.status === 'fulfilled')).toHaveLength(40);
    // A transaction held both a conflict and commits (else this test shows nothing of batching).
    const { rows } = await sql.query<{ n: number }>("SELECT count(DISTINCT transaction_id)::int AS n FROM events WHERE stream_id LIKE 'own-%'");
    expect(rows[0]!.n).toBeLessThan(40);
    // Every committed event is read past the conflicts' gaps, once they settle: once every older
    // transaction on the server has ended (xids are cluster-wide: another suite's may hold it).
    const all = (await eventually(async () => {
      const read = await store.readAll({ limit: 1000 });
      return read.length === 41 ? read : undefined;
    }, 15_000, 'the log read past the gaps'))!;
    expect(all.map((e) => e.streamId).sort()).toEqual(['contested', ...Array.from({ length: 60 }, (_, i) => i).filter((i) => i % 3 !== 0).map((i) => `own-${i}`)].sort());
  });

  it('takes no position for an append refused for its expected version, so refusals leave no gap', async () => {
    await store.append('x', [{ type: 'A', data: {} }, { type: 'A', data: {} }], { expectedVersion: 'no_stream' });
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? store.append('x', [{ type: 'Late', data: {} }], { expectedVersion: 1 }) : store.append(`fresh-${i}`, [{ type: 'A', data: {} }], { expectedVersion: 'no_stream' }))));
    for (const [i, o] of outcomes.entries()) {
      if (i % 4 === 0) expect(o.status === 'rejected' && o.reason instanceof ConcurrencyError && o.reason.message).toMatch(/x/);
      else expect(o.status).toBe('fulfilled');
    }
    // Refused appends shared transactions with committed ones, and the positions run on unbroken.
    const { rows } = await sql.query<{ n: number }>("SELECT count(DISTINCT transaction_id)::int AS n FROM events WHERE stream_id LIKE 'fresh-%'");
    expect(rows[0]!.n).toBeLessThan(30);
    const positions = (await sql.query<{ position: number }>('SELECT position FROM events ORDER BY position')).rows.map((r) => Number(r.position));
    expect(positions).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
  });

  it('retries an append expecting any version that lost its race inside a group, so every writer of one stream lands once', async () => {
    await Promise.all(Array.from({ length: 30 }, (_, i) => store.append('busy', [{ type: 'Tick', data: { i } }])));
    const events = await store.readStream('busy');
    expect(events.map((e) => e.streamVersion)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => (e.data as { i: number }).i)).size).toBe(30);
  });

  it('answers an append with its own error when its event id is taken, and commits the others of its group', async () => {
    const id = '6f1c1d6e-8a52-4f3e-9d59-3f1d2a9b7c01';
    await store.append('first', [{ id, type: 'A', data: {} }]);
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 10 }, (_, i) => store.append(`ok-${i}`, [{ type: 'A', data: {} }])),
      store.append('second', [{ id, type: 'A', data: {} }]),
      ...Array.from({ length: 10 }, (_, i) => store.append(`ok-${10 + i}`, [{ type: 'A', data: {} }])),
    ]);
    const failed = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toMatchObject({ code: '23505', constraint: 'events_event_id_key' });
    expect(await store.readStream('second')).toEqual([]);
    await eventually(async () => (await store.readAll({ limit: 100 })).length === 21, 15_000, 'the log read past the refused append');
  });
});
