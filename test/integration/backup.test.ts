import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { EventStore, ReadAllOptions, SubscribeOptions, BatchHandler } from '../../src/eventstore/port';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import { restoreSqlite } from '../../src/eventstore/sqlite-backup';
import { eventStoreContract } from '../contract/event-store.contract';
import { BIN, ROOT, tempDir } from '../support/gateway';

const run = promisify(execFile);

/** Events in the store before the load starts, so the backup has pages enough to take a while. */
const PREFILL = Number(process.env.BACKUP_TEST_PREFILL ?? 20_000);

const cli = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env }, timeout: 60_000 });

/**
 * The restored store as the contract suite expects to find a store: empty to its readers. The
 * log it restored stays in it and every write lands after it; reads and subscriptions start past
 * it (the suite's "read from position 0" means "from what the suite wrote").
 */
class PastRestoredLog implements EventStore {
  readonly kind: string;
  constructor(
    private inner: EventStore,
    private restoredHead: number,
  ) {
    this.kind = inner.kind;
  }
  append: EventStore['append'] = (s, e, o) => this.inner.append(s, e, o);
  readStream: EventStore['readStream'] = (s, o) => this.inner.readStream(s, o);
  readAll(o: ReadAllOptions = {}) {
    return this.inner.readAll({ ...o, fromPosition: Math.max(o.fromPosition ?? 0, this.restoredHead + 1) });
  }
  async headPosition() {
    const head = await this.inner.headPosition();
    return head > this.restoredHead ? head : 0;
  }
  subscribe(handler: BatchHandler, o: SubscribeOptions = {}) {
    return this.inner.subscribe(handler, { ...o, fromPosition: Math.max(o.fromPosition ?? 0, this.restoredHead + 1) });
  }
  close() {
    return this.inner.close();
  }
}

const dir = tempDir('adcp-backup-');
const liveFile = path.join(dir, 'live.sqlite');
const backupFile = path.join(dir, 'backup.sqlite');

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('backup of a SQLite store under a write load, and restore', () => {
  /** Appends the load acknowledged before the backup command started: each must be in the backup. */
  let ackedBefore: { id: string; stream: string; version: number }[] = [];
  let ackedDuring = 0;

  beforeAll(async () => {
    const live = new SqliteEventStore({ file: liveFile });
    for (let i = 0; i < PREFILL; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => live.append(`prefill-${(i + j) % 997}`, [{ type: 'Prefilled', data: { n: i + j, pad: 'x'.repeat(200) } }])));
    }
    const acked: { id: string; stream: string; version: number }[] = [];
    let stop = false;
    // Eight writers, each on its own streams at the version it expects: every acknowledgement is
    // a committed append at a known version.
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let n = 0; !stop; n++) {
        const stream = `load-${w}-${n % 50}`;
        const version = Math.floor(n / 50);
        const id = `0190${String(w).padStart(4, '0')}-0000-7000-8000-${String(n).padStart(12, '0')}`;
        await live.append(stream, [{ id, type: 'Loaded', data: { w, n } }], { expectedVersion: version });
        acked.push({ id, stream, version: version + 1 });
      }
    });
    while (acked.length < 2000) await new Promise((r) => setImmediate(r));
    ackedBefore = acked.slice();
    const backup = cli(['backup', backupFile], { EVENT_STORE_URL: `sqlite:${liveFile}`, DATA_DIR: dir });
    const { stdout } = await backup;
    ackedDuring = acked.length - ackedBefore.length;
    stop = true;
    await Promise.all(writers);
    await live.close();
    expect(JSON.parse(stdout).backup.events).toBeGreaterThanOrEqual(PREFILL + ackedBefore.length);
  }, 120_000);

  it('went on while the load kept appending, and holds every append acknowledged before it began', async () => {
    expect(ackedDuring).toBeGreaterThan(0);
    const restoredFile = path.join(dir, 'restored', 'adcp.sqlite');
    const { stdout, stderr } = await cli(['restore', backupFile], { EVENT_STORE_URL: `sqlite:${restoredFile}`, DATA_DIR: dir });
    expect(stderr).toMatch(/^restored \d+ events/);
    const restored = new SqliteEventStore({ file: restoredFile });
    try {
      for (const a of ackedBefore) {
        const [e] = await restored.readStream(a.stream, { fromVersion: a.version, limit: 1 });
        expect(e?.id).toBe(a.id);
      }
      const restoredHead = await restored.headPosition();
      expect(JSON.parse(stdout).restored.head).toBe(restoredHead);
      // A consistent copy: the log has no hole (positions 1..head all there, in one snapshot).
      const count = (restored.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
      expect(count).toBe(restoredHead);
    } finally {
      await restored.close();
    }
  });

  it('refuses to restore over an existing store, and to back up onto an existing file', async () => {
    await expect(cli(['restore', backupFile], { EVENT_STORE_URL: `sqlite:${liveFile}`, DATA_DIR: dir })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/exists: stop the gateway and move the store's files aside/),
    });
    await expect(cli(['backup', backupFile], { EVENT_STORE_URL: `sqlite:${liveFile}`, DATA_DIR: dir })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/exists: a backup is written to a new file/),
    });
  });

  it('refuses a file that is not a backup, writing nothing', async () => {
    const junk = path.join(dir, 'junk.sqlite');
    fs.writeFileSync(junk, 'not a database at all, just text that is long enough to have a header');
    const target = path.join(dir, 'never', 'adcp.sqlite');
    await expect(cli(['restore', junk], { EVENT_STORE_URL: `sqlite:${target}`, DATA_DIR: dir })).rejects.toMatchObject({ code: 1 });
    expect(fs.existsSync(target)).toBe(false);
  });

  it('names pg_dump for a PostgreSQL store instead of pretending', async () => {
    await expect(cli(['backup', path.join(dir, 'pg.dump')], { EVENT_STORE_URL: 'postgres://postgres@127.0.0.1:1/none', DATA_DIR: dir })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/pg_dump/),
    });
  });
});

// Each contract test gets its own restore of the backup taken under load.
let n = 0;
let file = '';
let head = 0;
eventStoreContract('sqlite restored from a backup taken under writes', {
  create: async () => {
    file = path.join(dir, `contract-${++n}`, 'adcp.sqlite');
    head = (await restoreSqlite(backupFile, file)).head;
    expect(head).toBeGreaterThan(PREFILL);
    return new PastRestoredLog(new SqliteEventStore({ file, pollIntervalMs: 20 }), head);
  },
  second: async () => new PastRestoredLog(new SqliteEventStore({ file, pollIntervalMs: 20 }), head),
  concurrentProcesses: async (stream, perProcess) => {
    const child = path.join(__dirname, '..', 'support', 'sqlite-appender.js');
    const outs = await Promise.all([0, 1].map(() => run(process.execPath, [child, file, stream, String(perProcess)], { timeout: 60_000 })));
    return outs.map((o) => Number(o.stdout));
  },
});
