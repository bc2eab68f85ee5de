import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { LogMoveError } from './log-file';

/** What a backup file holds, as `backup` and `restore` report it. */
export interface BackupSummary {
  file: string;
  bytes: number;
  events: number;
  /** The log's last position in the backup. */
  head: number;
}

/**
 * SQLite's online backup API, copying every page in one step: the step reads inside one read
 * transaction, so the copy is the database as it was at one instant, and in WAL mode writers go
 * on meanwhile. (Copying in small steps, the API's default, starts over whenever another
 * connection writes between two steps, which under a steady write load may be forever.)
 * The copy is written beside the destination and renamed into place, so a failed backup leaves
 * no half file under the destination's name. It is readable by its owner only (0600), from the
 * start: it holds webhook secrets and API-key hashes.
 */
async function copyDatabase(source: Database.Database, destination: string): Promise<void> {
  const partial = `${destination}.partial-${process.pid}`;
  fs.rmSync(partial, { force: true });
  try {
    // SQLite keeps the mode of a file that exists (an empty one is an empty database).
    fs.closeSync(fs.openSync(partial, 'wx', 0o600));
    await source.backup(partial, { progress: () => 0x7fffffff });
    fs.chmodSync(partial, 0o600);
    fs.renameSync(partial, destination);
  } finally {
    fs.rmSync(partial, { force: true });
  }
}

/** Refuses a file that is not a whole SQLite database holding an event log. */
function inspect(file: string): BackupSummary {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new LogMoveError(`${file}: cannot open as SQLite (${(err as Error).message})`);
  }
  try {
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new LogMoveError(`${file}: damaged (${String(check)})`);
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").get();
    if (!table) throw new LogMoveError(`${file}: holds no event log (no events table)`);
    const { events, head } = db.prepare('SELECT COUNT(*) AS events, COALESCE(MAX(position), 0) AS head FROM events').get() as { events: number; head: number };
    return { file, bytes: fs.statSync(file).size, events, head };
  } catch (err) {
    if (err instanceof LogMoveError) throw err;
    throw new LogMoveError(`${file}: not a readable database (${(err as Error).message})`);
  } finally {
    db.close();
  }
}

/**
 * `backup <file>`: a consistent copy of a live SQLite store (its events and, in the same file,
 * its read models and their checkpoints), taken while the gateway keeps writing.
 */
export async function backupSqlite(storeFile: string, destination: string): Promise<BackupSummary> {
  if (!fs.existsSync(storeFile)) throw new LogMoveError(`${storeFile}: no such store`);
  if (fs.existsSync(destination)) throw new LogMoveError(`${destination} exists: a backup is written to a new file`);
  if (!fs.existsSync(path.dirname(path.resolve(destination)))) throw new LogMoveError(`${path.dirname(destination)}: no such directory`);
  const source = new Database(storeFile, { fileMustExist: true });
  try {
    // Another process (the gateway) may hold the write lock for a moment; a read waits for it.
    source.pragma('busy_timeout = 10000');
    await copyDatabase(source, destination);
  } finally {
    source.close();
  }
  return inspect(destination);
}

/**
 * `restore <file>`: a backup checked (a whole database with an event log) and copied to where
 * the store lives. Only where no store is: the gateway must be stopped and the old file moved
 * aside, so a restore never overwrites a log by mistake.
 */
export async function restoreSqlite(backupFile: string, storeFile: string): Promise<BackupSummary> {
  const summary = inspect(backupFile);
  for (const f of [storeFile, `${storeFile}-wal`, `${storeFile}-shm`]) {
    if (fs.existsSync(f)) throw new LogMoveError(`${f} exists: stop the gateway and move the store's files aside before restoring into its place`);
  }
  fs.mkdirSync(path.dirname(path.resolve(storeFile)), { recursive: true });
  const source = new Database(backupFile, { readonly: true, fileMustExist: true });
  try {
    await copyDatabase(source, storeFile);
  } finally {
    source.close();
  }
  return { ...summary, file: storeFile, bytes: fs.statSync(storeFile).size };
}
