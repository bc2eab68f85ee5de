import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Upcaster } from '../../../src/domain/event-versions';
import type { StoredEvent } from '../../../src/eventstore/port';
import { SqliteEventStore } from '../../../src/eventstore/sqlite';
import { EventVersions, withUpcasting } from '../../../src/eventstore/upcasting';
import { tailPublicEvents } from '../../../src/public-events/tail';
import { tenantKeyer } from '../../../src/public-events/tenants';
import { PUBLIC_EVENT_TYPES, type PublicEventName } from '../../../src/public-events/types';

const stored = (type: string, data: Record<string, unknown>, schemaVersion?: number): StoredEvent => ({
  id: 'e1',
  streamId: 's',
  type,
  data,
  metadata: { time: '2026-11-27T00:00:00.000Z', ...(schemaVersion !== undefined ? { schemaVersion } : {}) },
  streamVersion: 1,
  position: 1,
});

/** A three-version history of one type: `n` renamed to `count` (v2), then `label` added with a default (v3). */
const chain: Upcaster[] = [
  { type: 'Thing', from: 2, up: (d) => ({ ...d, label: 'none' }) },
  { type: 'Thing', from: 1, up: ({ n, ...rest }) => ({ ...rest, count: n }) },
];

describe('EventVersions', () => {
  const versions = new EventVersions({ Thing: 3 }, chain);

  it('brings a v1 event (no version recorded) through every step, in order, to the current shape and version', () => {
    const old = stored('Thing', { n: 4 });
    const up = versions.upcast(old);
    expect(up.data).toEqual({ count: 4, label: 'none' });
    expect(up.metadata.schemaVersion).toBe(3);
    expect(old.data).toEqual({ n: 4 }); // the adapter's object is not touched (the memory store hands out its own)
    expect(versions.upcast(stored('Thing', { count: 1 }, 2)).data).toEqual({ count: 1, label: 'none' });
  });

  it('leaves current events, other types and events from a newer gateway as they are', () => {
    for (const e of [stored('Thing', { count: 1, label: 'x' }, 3), stored('Other', { n: 1 }), stored('Thing', { whatever: true }, 9)]) expect(versions.upcast(e)).toBe(e);
  });

  it('stamps the current version on append unless the event carries one (a copied log keeps its own)', () => {
    expect(versions.stamp({ type: 'Thing', data: {} }).metadata?.schemaVersion).toBe(3);
    expect(versions.stamp({ type: 'Other', data: {}, metadata: { principal: 'p' } }).metadata).toEqual({ principal: 'p', schemaVersion: 1 });
    expect(versions.stamp({ type: 'Thing', data: {}, metadata: { schemaVersion: 1 } }).metadata?.schemaVersion).toBe(1);
  });

  it('refuses a registry with a gap, a duplicate or a step beyond the current version when built', () => {
    expect(() => new EventVersions({ Thing: 3 }, [chain[1]!])).toThrow(/no upcaster from version 2/);
    expect(() => new EventVersions({ Thing: 3 }, [...chain, chain[0]!])).toThrow(/two upcasters/);
    expect(() => new EventVersions({ Thing: 2 }, chain)).toThrow(/at version 2/);
    expect(() => new EventVersions({ Thing: 0 }, [])).toThrow(/whole number/);
  });

  it("the gateway's own registry is complete (every raised version has its chain)", () => {
    expect(() => new EventVersions()).not.toThrow();
    expect(new EventVersions().versionOf('WebhookScheduled')).toBe(2);
  });
});

describe('withUpcasting on a real SQLite store: a published type whose shape changes', () => {
  // A rehearsal of the next change to a published event: TaskStatusChanged once named its new
  // status `to`. The old row is published (events tail, the same mapping the Kafka relay uses) in
  // the current shape and passes its public schema; read without the upcaster it fails it.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'upcast-unit-'));
  const raw = new SqliteEventStore({ file: path.join(dir, 'log.sqlite') });
  afterAll(async () => {
    await raw.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('publishes an old-shape event in the current shape, and only because of the upcaster', async () => {
    await raw.append('task-t1', [{ type: 'TaskStatusChanged', data: { task_id: 't1', from: 'submitted', to: 'completed', message: 'done', at: '2026-11-27T00:00:00.000Z' }, metadata: { time: '2026-11-27T00:00:00.000Z' } }]);
    const renamed = new EventVersions({ TaskStatusChanged: 2 }, [{ type: 'TaskStatusChanged', from: 1, up: ({ to, ...rest }) => ({ ...rest, status: to }) }]);
    const tail = async (versions: EventVersions) => {
      const lines: string[] = [];
      const problems: string[] = [];
      const counts = await tailPublicEvents(withUpcasting(raw, versions), { tenantKey: tenantKeyer(Buffer.alloc(32, 1)), streamOwner: async () => 'acme' }, { from: 0, follow: false }, new Set(Object.keys(PUBLIC_EVENT_TYPES) as PublicEventName[]), (l) => lines.push(l), (p) => problems.push(p));
      return { counts, lines: lines.map((l) => JSON.parse(l) as { data: Record<string, unknown> }), problems };
    };
    const upcast = await tail(renamed);
    expect(upcast.counts).toEqual({ printed: 1, invalid: 0 });
    expect(upcast.lines[0]!.data).toMatchObject({ previous_status: 'submitted', status: 'completed', message: 'done' });

    const control = await tail(new EventVersions({}, []));
    expect(control.counts).toEqual({ printed: 0, invalid: 1 });
    expect(control.problems[0]).toMatch(/status/);
  });
});
