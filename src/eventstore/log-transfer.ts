import fs from 'node:fs';
import readline from 'node:readline';
import { eventLine, headerLine, LogFormatError, LogMoveError, LogTally, parseLogLine, trailerLine, type LogSummary } from './log-file';
import type { EventStore, StoredEvent } from './port';

/** Events per read and per write: large enough to amortise round trips, small enough to stream. */
const PAGE = 1000;

/**
 * A store that can take a whole log's events as they are (ids, versions, metadata and positions),
 * a batch per transaction, into an empty store: the SQL adapters. Other stores are written
 * through `append`, which keeps everything but the positions (the order stays).
 */
interface BulkImporter {
  importEvents(events: readonly StoredEvent[]): Promise<void>;
}

const canBulkImport = (store: EventStore): store is EventStore & BulkImporter => typeof (store as Partial<BulkImporter>).importEvents === 'function';

/** Called after each batch: events done so far, and the total when known. */
export type Progress = (done: number, total: number) => void;

/**
 * The log from its start up to the head it had when this began, in pages: a log still being
 * appended to exports as it was then. A page the store cannot return yet (PostgreSQL: a lower
 * position still committing) is waited for, never skipped.
 */
export async function* readLog(store: EventStore, options: { upTo?: number } = {}): AsyncGenerator<StoredEvent[]> {
  const head = options.upTo ?? (await store.headPosition());
  let from = 1;
  while (from <= head) {
    const page = (await store.readAll({ fromPosition: from, limit: PAGE })).filter((e) => e.position <= head);
    if (page.length === 0) {
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    yield page;
    from = page.at(-1)!.position + 1;
  }
}

/** The events of a log file, in pages, after its header and up to its trailer (returned separately). */
export async function* readLogFile(file: string, onTrailer: (t: LogSummary) => void = () => {}): AsyncGenerator<StoredEvent[]> {
  const lines = readline.createInterface({ input: fs.createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let lineNo = 0;
  let page: StoredEvent[] = [];
  let trailer: LogSummary | undefined;
  for await (const text of lines) {
    lineNo++;
    if (trailer) {
      if (text.trim() === '') continue;
      throw new LogFormatError(`line ${lineNo}: nothing may follow the trailer`);
    }
    const line = parseLogLine(text, lineNo);
    if ('event' in line) {
      page.push(line.event);
      if (page.length >= PAGE) {
        yield page;
        page = [];
      }
    } else if ('trailer' in line) trailer = line.trailer;
  }
  if (lineNo === 0) throw new LogFormatError('the file is empty');
  if (page.length) yield page;
  if (!trailer) throw new LogFormatError(`the file ends at line ${lineNo} without its trailer: it is cut short`);
  onTrailer(trailer);
}

/** Refuses a store that already holds events: a log moves into an empty store only. */
export async function assertEmpty(store: EventStore, name: string): Promise<void> {
  const head = await store.headPosition();
  if (head > 0) {
    throw new LogMoveError(`${name} is not empty (its log reaches position ${head}): a log is imported only into an empty store; point at a new database or file`);
  }
}

/**
 * Writes a log's events into a store in order, each batch in one transaction where the store
 * allows (its positions kept), else one append per run of one stream's events at the version it
 * held (so a conflict, which cannot happen in an empty store nobody else writes, would stop it).
 */
export async function writeLog(target: EventStore, pages: AsyncIterable<StoredEvent[]>, onProgress: Progress = () => {}, total = 0): Promise<LogSummary> {
  const tally = new LogTally();
  for await (const page of pages) {
    for (const e of page) tally.add(e);
    if (canBulkImport(target)) await target.importEvents(page);
    else await appendInOrder(target, page);
    onProgress(tally.events, total);
  }
  return tally.summary();
}

async function appendInOrder(target: EventStore, page: readonly StoredEvent[]): Promise<void> {
  for (let i = 0; i < page.length; ) {
    let j = i + 1;
    while (j < page.length && page[j]!.streamId === page[i]!.streamId) j++;
    const run = page.slice(i, j);
    await target.append(
      run[0]!.streamId,
      run.map((e) => ({ id: e.id, type: e.type, data: e.data, metadata: e.metadata })),
      { expectedVersion: run[0]!.streamVersion - 1 },
    );
    i = j;
  }
}

/** Counts and digests a store's log (or a file's) as it stands. */
export async function summarize(pages: AsyncIterable<StoredEvent[]>, onProgress: Progress = () => {}, total = 0): Promise<LogSummary> {
  const tally = new LogTally();
  for await (const page of pages) {
    for (const e of page) tally.add(e);
    onProgress(tally.events, total);
  }
  return tally.summary();
}

const same = (a: LogSummary, b: LogSummary) => a.events === b.events && a.streams === b.streams && a.digest === b.digest;
const describe = (s: LogSummary) => `${s.events} events in ${s.streams} streams, ${s.digest}`;

/** Reads the target back and checks it holds exactly what was written. */
async function verify(target: EventStore, written: LogSummary): Promise<void> {
  const read = await summarize(readLog(target));
  if (!same(read, written)) throw new LogMoveError(`the target does not read back what was written: wrote ${describe(written)}, reads ${describe(read)}`);
}

/**
 * `log import`: a log file into an empty store. The file is checked whole first (every line, its
 * versions, its trailer's counts and digest), so a damaged or cut-short file writes nothing; the
 * target is then read back and must give the same digest.
 */
export async function importLogFile(file: string, target: EventStore, onProgress: Progress = () => {}): Promise<LogSummary> {
  let trailer: LogSummary | undefined;
  const checked = await summarize(readLogFile(file, (t) => (trailer = t)));
  if (!same(checked, trailer!)) throw new LogFormatError(`the file holds ${describe(checked)} but its trailer says ${describe(trailer!)}`);
  await assertEmpty(target, 'the target store');
  const written = await writeLog(target, readLogFile(file), onProgress, checked.events);
  if (!same(written, checked)) throw new LogFormatError(`the file changed while it was imported (read ${describe(written)}, checked ${describe(checked)})`);
  await verify(target, written);
  return written;
}

/** `log copy`: one store's log into another, empty one, then read back and compared. */
export async function copyLog(source: EventStore, target: EventStore, onProgress: Progress = () => {}): Promise<LogSummary> {
  await assertEmpty(target, 'the target store');
  const head = await source.headPosition();
  const written = await writeLog(target, readLog(source, { upTo: head }), onProgress, head);
  await verify(target, written);
  return written;
}

/**
 * `log export`: the log up to the head it had when this began, as a log file (see log-file.ts),
 * written a page at a time through `write` (which should wait while its sink is full).
 */
export async function exportLog(store: EventStore, write: (text: string) => Promise<void>, onProgress: Progress = () => {}): Promise<LogSummary> {
  const head = await store.headPosition();
  await write(headerLine({ source: store.kind, exported_at: new Date().toISOString(), head }) + '\n');
  const tally = new LogTally();
  for await (const page of readLog(store, { upTo: head })) {
    let chunk = '';
    for (const e of page) {
      tally.add(e);
      chunk += eventLine(e) + '\n';
    }
    await write(chunk);
    onProgress(tally.events, head);
  }
  const summary = tally.summary();
  await write(trailerLine(summary) + '\n');
  return summary;
}
