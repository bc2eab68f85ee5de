import fs from 'node:fs';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import type { Writable } from 'node:stream';
import { LogMoveError, type LogSummary } from './log-file';
import { copyLog, exportLog, importLogFile, LogWriteError, type Progress } from './log-transfer';
import type { EventStore } from './port';
import type { ReadModelStore } from '../readmodel/port';
import { recordSideEffectsDone } from '../readmodel/side-effects-watermark';
import { backupSqlite, restoreSqlite } from './sqlite-backup';

/** Opens the event store a URL names (the forms EVENT_STORE_URL takes); handed in by the CLI. */
export type OpenStore = (url: string) => Promise<EventStore>;

/**
 * The read-model store a gateway on the event store `storeUrl` would use (READ_MODEL_URL, or beside
 * the events for SQL stores), or `readModelsUrl` when the operator names one: resolved at once (a
 * bad URL throws before anything opens), opened by the function returned.
 */
export type ReadModelsOf = (storeUrl: string, readModelsUrl?: string) => () => Promise<ReadModelStore>;

/** Where the configured store lives: its URL, and its file when it is SQLite. */
export interface ConfiguredStore {
  url: string;
  sqliteFile?: string;
}

export const LOG_USAGE = `usage:
  adcp-gateway log export [--from <store-url>] [--to <file>|-]   the log as NDJSON (default: stdout)
  adcp-gateway log import <file> [--to <store-url>] [--read-models <url>]
                                                                 a log file into an empty store
  adcp-gateway log copy --from <store-url> --to <store-url> [--read-models <url>]
                                                                 one store's log into another, empty one
Store URLs take the forms of EVENT_STORE_URL (sqlite:<file>, postgres://…, kurrentdb://…); the default
is the configured store. Event ids, stream versions, metadata and order are kept; the target's read
models build from the log when a gateway starts on it. Its side effects (webhooks, Kafka messages,
change-feed entries) were made at the source: import and copy record them as done up to the moved
head in the target's read-model store (READ_MODEL_URL's, or beside SQL events; --read-models names
another), so a gateway on the target makes none of them again.`;

/**
 * A progress line on stderr, at most twice a second: rewritten in place on a terminal, a line at a
 * time otherwise (a log file or CI).
 */
function progressLine(verb: string): { update: Progress; done: () => void } {
  const started = Date.now();
  let last = 0;
  let shown = false;
  const tty = process.stderr.isTTY === true;
  const write = (done: number, total: number) => {
    const seconds = Math.max(0.001, (Date.now() - started) / 1000);
    const share = total > 0 ? ` (${Math.min(100, Math.floor((done / total) * 100))}%)` : '';
    const text = `${verb} ${done}${total > 0 ? `/~${total}` : ''} events${share}, ${Math.round(done / seconds)} ev/s`;
    process.stderr.write(tty ? `\r${text}\x1b[K` : `${text}\n`);
    shown = true;
  };
  return {
    update: (done, total) => {
      if (Date.now() - last < 500) return;
      last = Date.now();
      write(done, total);
    },
    done: () => {
      if (shown && tty) process.stderr.write('\n');
    },
  };
}

/** Writes to a stream, waiting while it is full: an export streams, it never buffers the log. */
function writerTo(out: Writable, name: string): (text: string) => Promise<void> {
  // A reader that goes away (`| head`) or a full disk ends the export with one line, not a stack.
  const state: { failed?: Error } = {};
  out.on('error', (err) => (state.failed = err));
  const check = () => {
    if (state.failed) throw new LogMoveError(`cannot write to ${name}: ${state.failed.message}`);
  };
  return async (text) => {
    check();
    if (!out.write(text)) await once(out, 'drain').catch(() => undefined); // an error ends the wait too: check() reports it
    check();
  };
}

const report = (what: string, summary: LogSummary, extra: Record<string, unknown>, toStdout: boolean) => {
  process.stderr.write(`${what} ${summary.events} events in ${summary.streams} streams; digest ${summary.digest}\n`);
  if (toStdout) process.stdout.write(JSON.stringify({ [what]: summary, ...extra }) + '\n');
};

async function withStores<T>(open: OpenStore, urls: string[], fn: (stores: EventStore[]) => Promise<T>): Promise<T> {
  const stores: EventStore[] = [];
  try {
    for (const url of urls) stores.push(await open(url));
    return await fn(stores);
  } finally {
    for (const s of stores) await s.close();
  }
}

/** `log export|import|copy`; returns the exit code. */
export async function logCommand(args: string[], configured: ConfiguredStore, open: OpenStore, readModelsOf: ReadModelsOf): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { from: { type: 'string' }, to: { type: 'string' }, 'read-models': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const readModelsUrl = values['read-models'];
  const [sub, file, ...extra] = positionals;
  if (values.help) {
    process.stdout.write(LOG_USAGE + '\n');
    return 0;
  }
  if (extra.length) throw new LogUsageError(`log: unexpected ${extra.join(' ')}\n${LOG_USAGE}`);
  if (sub === 'export') {
    if (file) throw new LogUsageError(`log export writes to --to <file> (or - for stdout), not to a positional argument\n${LOG_USAGE}`);
    if (readModelsUrl) throw new LogUsageError('log export reads the log only; --read-models is for import and copy');
    const to = values.to ?? '-';
    // Owner-only (0600): a log holds webhook secrets, API-key hashes and OAuth grants.
    const out: Writable = to === '-' ? process.stdout : fs.createWriteStream(to, { flags: 'wx', mode: 0o600 });
    if (to !== '-') await openedOrRefused(out, to);
    const progress = progressLine('exported');
    const summary = await withStores(open, [values.from ?? configured.url], ([store]) => exportLog(store!, writerTo(out, to === '-' ? 'stdout' : to), progress.update));
    progress.done();
    if (to !== '-') {
      out.end();
      await once(out, 'finish');
    }
    report('exported', summary, { file: to === '-' ? null : to }, to !== '-');
    return 0;
  }
  if (sub === 'import') {
    if (!file) throw new LogUsageError(`log import: the file to import is required\n${LOG_USAGE}`);
    if (values.from) throw new LogUsageError('log import reads the file it is given; --from is for export and copy');
    if (!fs.existsSync(file)) throw new LogMoveError(`${file}: no such file`);
    const target = values.to ?? configured.url;
    const progress = progressLine('imported');
    const openReadModels = readModelsOf(target, readModelsUrl);
    let done = 0;
    const summary = await withStores(open, [target], ([store]) =>
      withReadModels(openReadModels, async (readModels) => {
        const imported = await sideEffectsDoneEvenIfCut(readModels, store!, () => importLogFile(file, store!, progress.update));
        done = await recordSideEffectsDone(readModels, await store!.headPosition());
        return imported;
      }),
    );
    progress.done();
    report('imported', summary, { to: redact(target), side_effects_done_up_to: done }, true);
    reportSideEffects(done);
    process.stderr.write('the read models build from this log when a gateway starts on the store\n');
    return 0;
  }
  if (sub === 'copy') {
    if (!values.from || !values.to) throw new LogUsageError(`log copy: --from <store-url> and --to <store-url> are both required\n${LOG_USAGE}`);
    if (values.from === values.to) throw new LogUsageError('log copy: --from and --to name the same store');
    const progress = progressLine('copied');
    const to = values.to;
    const openReadModels = readModelsOf(to, readModelsUrl);
    let done = 0;
    const summary = await withStores(open, [values.from, to], ([source, target]) =>
      withReadModels(openReadModels, async (readModels) => {
        const copied = await sideEffectsDoneEvenIfCut(readModels, target!, () => copyLog(source!, target!, progress.update));
        done = await recordSideEffectsDone(readModels, await target!.headPosition());
        return copied;
      }),
    );
    progress.done();
    report('copied', summary, { from: redact(values.from), to: redact(to), side_effects_done_up_to: done }, true);
    reportSideEffects(done);
    process.stderr.write('the read models build from this log when a gateway starts on the target store\n');
    return 0;
  }
  throw new LogUsageError(`log: expected export, import or copy\n${LOG_USAGE}`);
}

/**
 * The target's read-model store, opened before anything is written (a store it cannot reach stops
 * the move with nothing done): a checked import or copy records there that the moved log's side
 * effects are done up to its head (see readmodel/side-effects-watermark.ts).
 */
async function withReadModels<T>(openReadModels: () => Promise<ReadModelStore>, fn: (readModels: ReadModelStore) => Promise<T>): Promise<T> {
  let readModels: ReadModelStore;
  try {
    readModels = await openReadModels();
  } catch (err) {
    throw new LogMoveError(`cannot open the target's read-model store (where the moved log's side effects are recorded as done): ${(err as Error).message}`);
  }
  try {
    return await fn(readModels);
  } finally {
    await readModels.close();
  }
}

/**
 * Runs a move; if writing fails part way (everything was checked first, so an engine or the
 * connection failed), the events already in the target are recorded as done too (their side
 * effects were made at the source), and the error says what is left: a target to drop and a move
 * to run again into an empty one.
 */
async function sideEffectsDoneEvenIfCut<T>(readModels: ReadModelStore, target: EventStore, move: () => Promise<T>): Promise<T> {
  try {
    return await move();
  } catch (err) {
    if (!(err instanceof LogWriteError)) throw err;
    const head = await target.headPosition().catch(() => 0);
    const done = head > 0 ? await recordSideEffectsDone(readModels, head).catch(() => 0) : 0;
    const mark = done > 0 ? `; side effects recorded as done up to position ${done}` : '';
    throw new LogMoveError(`${err.message}. The target's log reaches position ${head}${mark}: drop it and run the move again into an empty store`);
  }
}

const reportSideEffects = (head: number) =>
  process.stderr.write(`side effects (webhooks, Kafka messages, change-feed entries) recorded as done up to position ${head}: a gateway on the target makes only those of new events\n`);

/** A store URL as it may be printed: without a password. */
function redact(url: string): string {
  return url.replace(/^([a-z+]+:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}

async function openedOrRefused(out: Writable, file: string): Promise<void> {
  try {
    await once(out, 'open');
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new LogMoveError(code === 'EEXIST' ? `${file} exists: an export is written to a new file` : `${file}: ${(err as Error).message}`);
  }
}

/** A command line that does not say what to do; the CLI prints it and exits 2. */
export class LogUsageError extends Error {}

/** `backup <file>` and `restore <file>` of the configured SQLite store; returns the exit code. */
export async function backupCommand(command: 'backup' | 'restore', args: string[], configured: ConfiguredStore): Promise<number> {
  const [file, ...extra] = args;
  if (!file || extra.length || file.startsWith('-')) throw new LogUsageError(`usage: adcp-gateway ${command} <file>`);
  if (!configured.sqliteFile) {
    throw new LogMoveError(
      `${command} works on the SQLite store; this gateway's store is ${redact(configured.url).split(':')[0]}: see docs/operations.md (PostgreSQL: pg_dump / pg_restore) and the files to copy besides it`,
    );
  }
  if (command === 'backup') {
    const summary = await backupSqlite(configured.sqliteFile, file);
    process.stderr.write(`backed up ${summary.events} events (log head ${summary.head}) to ${file}, ${summary.bytes} bytes; copy the signing-key files beside it (docs/operations.md)\n`);
    process.stdout.write(JSON.stringify({ backup: summary }) + '\n');
    return 0;
  }
  const summary = await restoreSqlite(file, configured.sqliteFile);
  process.stderr.write(`restored ${summary.events} events (log head ${summary.head}) into ${configured.sqliteFile}\n`);
  process.stdout.write(JSON.stringify({ restored: summary }) + '\n');
  return 0;
}
