import type { StoredEvent } from '../../src/eventstore/port';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import { mediaBuys } from '../../projections/media-buys';
import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner } from '../../src/projections/runner';
import type { ReadModelStore } from '../../src/readmodel/port';
import { PG_ADMIN_URL, describeWith, eventually } from '../support/infra';
import { postgresProjectionEngines, replayInPlace, type ProjectionEngines } from '../support/projection-engines';

/**
 * Inline projections on PostgreSQL (Projection.consistency, issue 39): media buys and tasks are
 * written in the append's own transaction, so a command answers after one commit; the runner
 * applies the same events after commit, and the statements apply each event once however often
 * they run.
 */

const AT = '2026-11-27T10:00:00.000Z';

/** A create whose terms have keys out of jsonb's order (longer before shorter), nested too. */
function created(id: string, owner: string, taskId?: string) {
  return {
    type: 'MediaBuyCreated',
    data: {
      status: taskId ? 'pending_approval' : 'active',
      ...(taskId ? { task_id: taskId } : {}),
      at: AT,
      media_buy_id: id,
      owner,
      buyer_ref: `ref-${id}`,
      packages: [{ product_id: 'news_display_run_of_site', package_id: `${id}-p1`, budget: 1000, pricing_option_id: 'cpm_usd_fixed', targeting_overlay: { geo_country_any_of: ['US'], axe: 1 } }],
      start_time: 'asap',
      end_time: '2026-12-27T00:00:00.000Z',
      push_notification_config: { url: 'https://buyer.example/hook', token: 'secret-token', authentication: { schemes: ['Bearer'], credentials: 'x'.repeat(32) } },
    },
  };
}

async function rowsOf(rm: ReadModelStore): Promise<Record<string, unknown[]>> {
  return {
    media_buys: await rm.query('SELECT * FROM media_buys ORDER BY media_buy_id'),
    tasks: await rm.query('SELECT * FROM tasks ORDER BY task_id'),
    task_history: await rm.query('SELECT * FROM task_history ORDER BY task_id, position'),
  };
}

/**
 * A projection whose statement fails on a `Poison` event (a CHECK constraint): the append must not
 * commit. Idempotent per event, as an inline projection must be (the runner applies it too).
 */
const poisoned: Projection = {
  name: 'poisoned',
  version: 1,
  consistency: 'inline',
  tables: ['poisoned_rows'],
  ddl: { sqlite: [], postgres: ['CREATE TABLE IF NOT EXISTS poisoned_rows (position BIGINT PRIMARY KEY, version BIGINT NOT NULL, n INTEGER NOT NULL CHECK (n > 0))'] },
  handles: ['Fine', 'Poison'],
  evolve: (e) => [{ sql: 'INSERT INTO poisoned_rows (position, version, n) VALUES (?, ?, ?) ON CONFLICT (position) DO NOTHING', params: [e.position, e.streamVersion, e.type === 'Poison' ? -1 : 1] }],
};

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'inline projections on PostgreSQL', () => {
  let e: ProjectionEngines;
  const runners: ProjectionRunner[] = [];

  beforeEach(async () => {
    e = await postgresProjectionEngines();
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) await r.stop();
    await e.cleanup();
  });

  /** A runner over `projections` whose inline ones the store writes with each append. */
  async function inlineRunner(projections: readonly Projection[]): Promise<ProjectionRunner> {
    const runner = new ProjectionRunner(e.store, e.rm, projections, undefined, 50);
    runners.push(runner);
    await runner.start();
    (e.store as PostgresEventStore).writeInline(runner.inlineWrites());
    return runner;
  }

  it('commits the rows with the append, before any batch of the runner, and the runner applying the same events later changes nothing', async () => {
    const runner = await inlineRunner([mediaBuys]);
    const heard: StoredEvent[][] = [];
    runner.onWritten((events) => heard.push([...events]));
    await runner.stop(); // nothing applies after commit from here: what shows was written inline
    const a = await e.store.append('media-buy-mb_a', [created('mb_a', 'org1', 'task_a')], { expectedVersion: 'no_stream' });
    await e.store.append('task-task_a', [{ type: 'TaskSubmitted', data: { task_id: 'task_a', owner: 'org1', task_type: 'create_media_buy', resource_id: 'mb_a', message: 'waiting', at: AT } }], { expectedVersion: 'no_stream' });
    await e.store.append('media-buy-mb_a', [{ type: 'MediaBuyApproved', data: { media_buy_id: 'mb_a', at: AT } }], { expectedVersion: 1 });
    await e.store.append('task-task_a', [{ type: 'TaskStatusChanged', data: { task_id: 'task_a', status: 'completed', message: 'approved', actor: 'seller', at: AT } }], { expectedVersion: 1 });

    const inline = await rowsOf(e.rm);
    expect(inline.media_buys).toEqual([expect.objectContaining({ media_buy_id: 'mb_a', status: 'active', revision: 2, position: a.position })]);
    expect(inline.tasks).toEqual([expect.objectContaining({ task_id: 'task_a', status: 'completed' })]);
    expect(inline.task_history).toHaveLength(2);
    // No credential or token reached a row.
    expect(JSON.stringify(inline)).not.toMatch(/secret-token|xxxxxxxx/);
    // The runner's checkpoint did not move: it had stopped.
    expect((await e.rm.getCheckpoint('media-buys')).position).toBe(0);
    // Announced at each commit, before the append returned (what drops cached buys).
    expect(heard.map((b) => b.map((x) => x.type))).toEqual([['MediaBuyCreated'], ['TaskSubmitted'], ['MediaBuyApproved'], ['TaskStatusChanged']]);

    // A runner now applies all four again: nothing changes, and the rows equal a replay from scratch.
    const second = new ProjectionRunner(e.store, e.rm, [mediaBuys], undefined, 50);
    runners.push(second);
    await second.start();
    await second.waitFor(await e.store.headPosition(), undefined, 10_000);
    expect(await rowsOf(e.rm)).toEqual(inline);
    await second.stop();
    await replayInPlace(e.store, e.rm, mediaBuys);
    expect(await rowsOf(e.rm)).toEqual(inline);
  });

  it('commits nothing, event or row, when an inline statement fails', async () => {
    await inlineRunner([poisoned]);
    const first = await e.store.append('s', [{ type: 'Fine', data: {} }], { expectedVersion: 'no_stream' });
    await expect(e.store.append('s', [{ type: 'Fine', data: {} }, { type: 'Poison', data: {} }], { expectedVersion: 1 })).rejects.toThrow(/check constraint/);
    expect((await e.store.readStream('s')).map((x) => x.type)).toEqual(['Fine']);
    expect(await e.rm.query('SELECT position, version FROM poisoned_rows')).toEqual([{ position: first.position, version: 1 }]);
    // The stream goes on from where it was, on the same pool.
    const third = await e.store.append('s', [{ type: 'Fine', data: {} }, { type: 'Fine', data: {} }], { expectedVersion: 1 });
    expect(await e.rm.query('SELECT position, version FROM poisoned_rows ORDER BY position')).toEqual([
      { position: first.position, version: 1 },
      { position: third.position - 1, version: 2 },
      { position: third.position, version: 3 },
    ]);
  });

  it('writes statements whose parameters cannot be sent as text (an array) in the append transaction too, and rolls both back on failure', async () => {
    const arrayed: Projection = {
      name: 'arrayed',
      version: 1,
      consistency: 'inline',
      tables: ['arrayed_rows'],
      ddl: { sqlite: [], postgres: ['CREATE TABLE IF NOT EXISTS arrayed_rows (position BIGINT PRIMARY KEY, version BIGINT NOT NULL, tags TEXT[] NOT NULL CHECK (cardinality(tags) > 0))'] },
      handles: ['Tagged'],
      evolve: (x) => [{ sql: 'INSERT INTO arrayed_rows (position, version, tags) VALUES (?, ?, ?) ON CONFLICT (position) DO NOTHING', params: [x.position, x.streamVersion, (x.data as { tags: string[] }).tags] }],
    };
    await inlineRunner([arrayed]);
    const a = await e.store.append('t', [{ type: 'Tagged', data: { tags: ['a', "b'c"] } }, { type: 'Tagged', data: { tags: ['d'] } }], { expectedVersion: 'no_stream' });
    await expect(e.store.append('t', [{ type: 'Tagged', data: { tags: [] } }], { expectedVersion: 2 })).rejects.toThrow(/check constraint/);
    expect((await e.store.readStream('t')).length).toBe(2);
    expect(await e.rm.query('SELECT position, version, tags FROM arrayed_rows ORDER BY position')).toEqual([
      { position: a.position - 1, version: 1, tags: ['a', "b'c"] },
      { position: a.position, version: 2, tags: ['d'] },
    ]);
  });

  it('under concurrent appends with the runner applying the same events: each applied once, the rows equal a replay from scratch', async () => {
    const runner = await inlineRunner([mediaBuys]);
    // Half the buys come through a second instance writing inline too, as instances sharing a
    // database do: the runner here applies its events after commit while it goes on writing the same
    // buys' rows inline. Its own runner is never started: only its inline writes are wanted.
    const peer = await PostgresEventStore.connect({ connectionString: (e.store as PostgresEventStore).pool.options.connectionString!, pollIntervalMs: 20 });
    peer.writeInline(new ProjectionRunner(peer, e.rm, [mediaBuys], undefined, 50).inlineWrites());
    const buys = 40;
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < buys; i = next++) {
          const id = `mb_${String(i).padStart(3, '0')}`;
          const store = i % 4 < 2 ? e.store : peer;
          const task = i % 2 ? `task_${i}` : undefined;
          await store.append(`media-buy-${id}`, [created(id, `org${i % 3}`, task)], { expectedVersion: 'no_stream' });
          if (task) {
            await store.append(`task-${task}`, [{ type: 'TaskSubmitted', data: { task_id: task, owner: `org${i % 3}`, task_type: 'create_media_buy', resource_id: id, message: 'waiting', at: AT } }], { expectedVersion: 'no_stream' });
            await store.append(`task-${task}`, [{ type: 'TaskStatusChanged', data: { task_id: task, status: 'working', message: 'looking', actor: 'seller', at: AT } }], { expectedVersion: 1 });
          }
          // Several events in one append, then one more: revision counts every event once.
          await store.append(`media-buy-${id}`, [
            { type: 'MediaBuyStatusChanged', data: { media_buy_id: id, status: 'paused', at: AT } },
            { type: 'MediaBuyUpdated', data: { media_buy_id: id, at: AT, changed: ['end_time'], terms: { ...created(id, `org${i % 3}`).data, end_time: '2027-01-01T00:00:00.000Z' } } },
          ], { expectedVersion: 1 });
          await store.append(`media-buy-${id}`, [{ type: 'MediaBuyStatusChanged', data: { media_buy_id: id, status: 'active', at: AT } }], { expectedVersion: 3 });
        }
      }),
    );
    await peer.close();
    await runner.waitFor(await e.store.headPosition(), undefined, 20_000);
    await eventually(async () => (await e.rm.getCheckpoint('media-buys')).position >= (await e.store.headPosition()), 20_000, 'the runner past every event');
    const rows = await rowsOf(e.rm);
    expect(rows.media_buys).toHaveLength(buys);
    expect(new Set(rows.media_buys.map((r) => (r as { revision: number }).revision))).toEqual(new Set([4]));
    expect(rows.task_history).toHaveLength(buys);
    await runner.stop();
    await replayInPlace(e.store, e.rm, mediaBuys);
    expect(await rowsOf(e.rm)).toEqual(rows);
  }, 60_000);

  it('a command waits for no inline projection, and for a waited one only when it appended what that one handles', async () => {
    const counted: Projection = {
      name: 'counted',
      version: 1,
      tables: ['counted_rows'],
      ddl: { sqlite: [], postgres: ['CREATE TABLE IF NOT EXISTS counted_rows (position BIGINT PRIMARY KEY)'] },
      handles: ['Counted'],
      evolve: (x) => [{ sql: 'INSERT INTO counted_rows (position) VALUES (?)', params: [x.position] }],
    };
    // The runner's writes wait at a gate: while it is shut, nothing is applied after commit.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const gated = new Proxy(e.rm, {
      get(target, key) {
        if (key === 'applyBatches') return async (...args: Parameters<ReadModelStore['applyBatches']>) => (await gate, target.applyBatches(...args));
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const runner = new ProjectionRunner(e.store, gated, [mediaBuys, counted], undefined, 50);
    runners.push(runner);
    await runner.start();
    (e.store as PostgresEventStore).writeInline(runner.inlineWrites());
    const appendedTypes = new Map<string, number>();
    const bought = await e.store.append('media-buy-mb_w', [created('mb_w', 'org1')], { expectedVersion: 'no_stream' });
    appendedTypes.set('MediaBuyCreated', bought.position);
    // Inline only: resolves with the gate shut (waiting for the runner would hang past the test's timeout).
    await runner.waitFor(bought.position, appendedTypes, 600_000);
    expect(await e.rm.query('SELECT media_buy_id FROM media_buys')).toEqual([{ media_buy_id: 'mb_w' }]);
    expect(runner.status().find((x) => x.name === 'media-buys')!.position).toBeLessThan(bought.position);
    // A waited projection that handles what was appended: held until the runner has written it.
    const counted1 = await e.store.append('c', [{ type: 'Counted', data: {} }]);
    appendedTypes.set('Counted', counted1.position);
    let resolved = false;
    const waiting = runner.waitFor(counted1.position, appendedTypes, 600_000).then(() => (resolved = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 10));
    expect(resolved).toBe(false);
    open();
    await waiting;
    expect(await e.rm.query('SELECT position FROM counted_rows')).toEqual([{ position: counted1.position }]);
  });
});
