import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openStoreAdapter } from '../../src/app';
import { loadConfig } from '../../src/config';
import { LogTally, eventLine, headerLine, trailerLine } from '../../src/eventstore/log-file';
import type { EventStore, StoredEvent } from '../../src/eventstore/port';
import { PG_ADMIN_URL, createTestDatabase, describeWith } from '../support/infra';
import { BIN, ROOT, tempDir } from '../support/gateway';

const run = promisify(execFile);

/**
 * Crafted logs (issue 45, findings 3 and 4): each one well formed line by line, with one event in
 * it that a store or what reads the log after it cannot take. Each is refused whole, with one
 * line naming its line, before anything is written: the poison sits past the first 1,000 events,
 * which the importer wrote (and committed) in one batch before it met the bad one.
 */

const EVENTS = 1_200;
const POISON_AT = 1_100; // the event's index; its line is POISON_AT + 2 (the header is line 1)

const cli = (args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'silent', ...env }, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });

/** A good log: clock ticks on a few streams, the kind of event the gateway writes. */
function goodEvents(): StoredEvent[] {
  const versions = new Map<string, number>();
  return Array.from({ length: EVENTS }, (_, i) => {
    const streamId = `clock-${i % 7}`;
    const streamVersion = (versions.get(streamId) ?? 0) + 1;
    versions.set(streamId, streamVersion);
    return { id: randomUUID(), streamId, streamVersion, position: i + 1, type: 'ClockAdvanced', data: { seconds: 60 }, metadata: { time: new Date(1_767_225_600_000 + i * 1000).toISOString(), principal: 'cli' } };
  });
}

/** The events as a log file, with a trailer that matches them (so only the content can be wrong). */
function writeLog(file: string, events: StoredEvent[], lineOf: (e: StoredEvent) => string = eventLine): void {
  const tally = new LogTally();
  for (const e of events) tally.add(e);
  const lines = [headerLine({ source: 'sqlite', exported_at: new Date().toISOString(), head: events.length }), ...events.map(lineOf), trailerLine(tally.summary())];
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

const withPoison = (change: (e: StoredEvent, all: StoredEvent[]) => StoredEvent): StoredEvent[] => {
  const events = goodEvents();
  events[POISON_AT] = change(events[POISON_AT]!, events);
  return events;
};

const LINE = POISON_AT + 2;

/** Each crafted log, and what the refusal must say of it. */
const CRAFTED: { name: string; events: () => StoredEvent[]; says: RegExp }[] = [
  { name: 'an id used before, in the same case', events: () => withPoison((e, all) => ({ ...e, id: all[3]!.id })), says: /is used by an earlier event/ },
  { name: 'an id used before, in another case', events: () => withPoison((e, all) => ({ ...e, id: all[3]!.id.toUpperCase() })), says: /is used by an earlier event \(ids are compared without case\)/ },
  { name: 'a NUL in data', events: () => withPoison((e) => ({ ...e, data: { seconds: 60, note: 'a\u0000b' } })), says: /data holds a NUL character/ },
  { name: 'an unpaired surrogate in data', events: () => withPoison((e) => ({ ...e, data: { seconds: 60, note: 'x\ud800y' } })), says: /data holds an unpaired surrogate/ },
  { name: 'an unpaired surrogate in a key of the metadata', events: () => withPoison((e) => ({ ...e, metadata: { ...e.metadata, ['k\udc00']: 1 } })), says: /metadata key holds an unpaired surrogate/ },
  { name: 'data null', events: () => withPoison((e) => ({ ...e, type: 'MediaBuyCreated', data: null })), says: /data of MediaBuyCreated must be a JSON object, not null/ },
  { name: 'data an array', events: () => withPoison((e) => ({ ...e, data: [1] })), says: /must be a JSON object, not an array/ },
  { name: 'an unknown event type', events: () => withPoison((e) => ({ ...e, type: 'MediaBuyCreatd' })), says: /type "MediaBuyCreatd" is not an event type this gateway writes/ },
];

const countSqlite = (file: string): number => {
  if (!fs.existsSync(file)) return 0;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'events'").get() as { n: number }).n === 0 ? 0 : (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

async function countPg(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const exists = (await c.query("SELECT to_regclass('events') AS t")).rows[0].t;
    return exists ? Number((await c.query('SELECT COUNT(*) AS n FROM events')).rows[0].n) : 0;
  } finally {
    await c.end();
  }
}

/** One line on stderr, naming the place, and nothing on stdout: no stack trace. */
function expectOneLine(err: { code?: number; stdout?: string; stderr?: string }, where: string, says: RegExp): void {
  expect(err.code).toBe(1);
  expect(err.stdout).toBe('');
  const lines = err.stderr!.trimEnd().split('\n');
  expect(lines).toEqual([expect.stringMatching(new RegExp(`^adcp-gateway: ${where}: `))]);
  expect(lines[0]).toMatch(says);
}

const refused = async (args: string[], env?: Record<string, string>) => {
  const outcome = await cli(args, env).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => err,
  );
  return outcome;
};

describe('log import refuses a crafted log whole, naming its line (SQLite target)', () => {
  const dir = tempDir('adcp-log-checks-');

  it('a good log of the same events imports', async () => {
    const file = path.join(dir, 'good.ndjson');
    writeLog(file, goodEvents());
    const db = path.join(dir, 'good', 'adcp.sqlite');
    const { stdout } = await cli(['log', 'import', file, '--to', `sqlite:${db}`]);
    expect(JSON.parse(stdout).imported.events).toBe(EVENTS);
    expect(countSqlite(db)).toBe(EVENTS);
  });

  it.each(CRAFTED)('$name', async ({ name, events, says }) => {
    const file = path.join(dir, `${name.replace(/\W+/g, '-')}.ndjson`);
    writeLog(file, events());
    const db = path.join(dir, name.replace(/\W+/g, '-'), 'adcp.sqlite');
    expectOneLine(await refused(['log', 'import', file, '--to', `sqlite:${db}`]), `line ${LINE}`, says);
    expect(countSqlite(db)).toBe(0);
    // Nothing was written, so the same import of a fixed file goes through (no "not empty").
    writeLog(file, goodEvents());
    expect(JSON.parse((await cli(['log', 'import', file, '--to', `sqlite:${db}`])).stdout).imported.events).toBe(EVENTS);
  });

  it('a position of 2^52 or more (later positions would lose precision)', async () => {
    const events = goodEvents();
    const last = events.length - 1;
    events[last] = { ...events[last]!, position: 2 ** 52 };
    const file = path.join(dir, 'position.ndjson');
    writeLog(file, events);
    const db = path.join(dir, 'position', 'adcp.sqlite');
    expectOneLine(await refused(['log', 'import', file, '--to', `sqlite:${db}`]), `line ${last + 2}`, /position must be a positive integer below 2\^52/);
    expect(countSqlite(db)).toBe(0);
  });

  it('a line longer than the most one event may take (16 MiB), refused without reading it whole', async () => {
    const events = withPoison((e) => ({ ...e, data: { seconds: 60, blob: 'x'.repeat(17 * 1024 * 1024) } }));
    const file = path.join(dir, 'long.ndjson');
    writeLog(file, events);
    const db = path.join(dir, 'long', 'adcp.sqlite');
    expectOneLine(await refused(['log', 'import', file, '--to', `sqlite:${db}`]), `line ${LINE}`, /longer than 16777216 bytes, the most one event may take/);
    expect(countSqlite(db)).toBe(0);
    fs.rmSync(file);
  });
});

describe('files that hold the log are its owner\'s only', () => {
  it('log export --to and backup write 0600 files (they hold webhook secrets)', async () => {
    const dir = tempDir('adcp-log-modes-');
    const env = { DATA_DIR: dir };
    const log = path.join(dir, 'good.ndjson');
    writeLog(log, goodEvents());
    await cli(['log', 'import', log, '--to', `sqlite:${path.join(dir, 'adcp.sqlite')}`]);
    const exported = path.join(dir, 'export.ndjson');
    await cli(['log', 'export', '--to', exported], env);
    const backup = path.join(dir, 'backup.sqlite');
    await cli(['backup', backup], env);
    expect((fs.statSync(exported).mode & 0o777).toString(8)).toBe('600');
    expect((fs.statSync(backup).mode & 0o777).toString(8)).toBe('600');
  });
});

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'log import and log copy into PostgreSQL refuse a crafted log whole', () => {
  const dir = tempDir('adcp-log-checks-pg-');
  let target: { url: string; drop: () => Promise<void> };

  beforeAll(async () => {
    target = await createTestDatabase('adcp_logchecks');
  });
  afterAll(async () => {
    await target?.drop();
  });

  it.each(CRAFTED.filter((c) => /id used before, in another case|NUL|unpaired surrogate in data|data null/.test(c.name)))('import: $name', async ({ name, events, says }) => {
    const file = path.join(dir, `${name.replace(/\W+/g, '-')}.ndjson`);
    writeLog(file, events());
    expectOneLine(await refused(['log', 'import', file, '--to', target.url]), `line ${LINE}`, says);
    expect(await countPg(target.url)).toBe(0);
  });

  it('copy: a SQLite store holding an event PostgreSQL cannot take (a NUL, past the first 1,000) is refused before anything is written, naming its position', async () => {
    const sourceFile = path.join(dir, 'source', 'adcp.sqlite');
    const source: EventStore = await openStoreAdapter(loadConfig({ ...process.env, EVENT_STORE_URL: `sqlite:${sourceFile}` }));
    try {
      for (let i = 0; i < POISON_AT; i += 100) await source.append(`clock-${i}`, Array.from({ length: 100 }, () => ({ type: 'ClockAdvanced', data: { seconds: 60 } })));
      await source.append('clock-poison', [{ type: 'ClockAdvanced', data: { seconds: 60 } }]);
    } finally {
      await source.close();
    }
    // The stores refuse a NUL on append; one written past the gateway (by hand, an older version).
    const raw = new Database(sourceFile);
    raw.prepare('UPDATE events SET data = ? WHERE position = ?').run(JSON.stringify({ seconds: 60, note: 'a\u0000b' }), POISON_AT + 1);
    raw.close();
    expectOneLine(await refused(['log', 'copy', '--from', `sqlite:${sourceFile}`, '--to', target.url]), `the source's event at position ${POISON_AT + 1}`, /data holds a NUL character/);
    expect(await countPg(target.url)).toBe(0);
  });
});
