import fs from 'node:fs';
import { eventLine, headerLine, LogFormatError, LogMoveError, LogTally, MAX_EVENT_LINE_BYTES, parseLogLine, trailerLine, type LogSummary } from './log-file';
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

/**
 * A file's lines, numbered from 1, read a chunk at a time: a line longer than `maxBytes` is refused
 * as soon as it passes that (its start dropped, never held whole), and bytes that are not UTF-8
 * are refused too (a stream decoder would turn them into U+FFFD, changing the event unseen).
 */
export async function* fileLines(file: string, maxBytes = MAX_EVENT_LINE_BYTES): AsyncGenerator<{ text: string; lineNo: number }> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const input = fs.createReadStream(file, { highWaterMark: 1 << 20 });
  let parts: Buffer[] = [];
  let held = 0;
  let lineNo = 0;
  const line = (last: Buffer): { text: string; lineNo: number } => {
    let bytes = parts.length ? Buffer.concat([...parts, last]) : last;
    parts = [];
    held = 0;
    lineNo++;
    if (bytes.at(-1) === 0x0d) bytes = bytes.subarray(0, -1); // CRLF
    try {
      return { text: decoder.decode(bytes), lineNo };
    } catch {
      throw new LogFormatError(`line ${lineNo}: not UTF-8 text`);
    }
  };
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
        if (held + nl - start > maxBytes) throw tooLong(lineNo + 1, maxBytes);
        yield line(chunk.subarray(start, nl));
        start = nl + 1;
      }
      const rest = chunk.subarray(start);
      held += rest.length;
      if (held > maxBytes) throw tooLong(lineNo + 1, maxBytes);
      if (rest.length) parts.push(rest);
    }
    if (held > 0) yield line(Buffer.alloc(0));
  } finally {
    input.destroy();
  }
}

const tooLong = (lineNo: number, maxBytes: number) =>
  new LogFormatError(`line ${lineNo}: longer than ${maxBytes} bytes, the most one event may take (refused without reading it whole)`);

/**
 * The events of a log file, in pages, after its header and up to its trailer (returned separately).
 * With `tally`, every event is added to it as it is read, so an error names the event's line.
 */
export async function* readLogFile(file: string, onTrailer: (t: LogSummary) => void = () => {}, tally?: LogTally): AsyncGenerator<StoredEvent[]> {
  let lineNo = 0;
  let page: StoredEvent[] = [];
  let trailer: LogSummary | undefined;
  for await (const { text, lineNo: n } of fileLines(file)) {
    lineNo = n;
    if (trailer) {
      if (text.trim() === '') continue;
      throw new LogFormatError(`line ${lineNo}: nothing may follow the trailer`);
    }
    const line = parseLogLine(text, lineNo);
    if ('event' in line) {
      tally?.add(line.event, `line ${lineNo}`);
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
 * Writing failed after the checks passed (the engine refused a batch, a connection dropped, a disk
 * filled): `written` events are in the target, which is no longer empty.
 */
export class LogWriteError extends LogMoveError {
  constructor(
    message: string,
    readonly written: number,
  ) {
    super(message);
  }
}

/** writeLog, with a failure said in one line that tells how far it got. */
async function writeChecked(target: EventStore, pages: AsyncIterable<StoredEvent[]>, onProgress: Progress, total: number): Promise<LogSummary> {
  let done = 0;
  try {
    return await writeLog(target, pages, (n, t) => onProgress((done = n), t), total);
  } catch (err) {
    if (err instanceof LogMoveError) throw err;
    throw new LogWriteError(`writing to the target failed after ${done} of ${total} events: ${(err as Error).message}`, done);
  }
}

/**
 * `log import`: a log file into an empty store. The file is checked whole first, in one streaming
 * pass (every line, its versions, each event's content and id, its trailer's counts and digest),
 * so a damaged, cut-short or crafted file writes nothing; the target is then read back and must
 * give the same digest.
 */
export async function importLogFile(file: string, target: EventStore, onProgress: Progress = () => {}): Promise<LogSummary> {
  let trailer: LogSummary | undefined;
  const check = new LogTally({ checkContent: true });
  for await (const _page of readLogFile(file, (t) => (trailer = t), check)) void _page;
  const checked = check.summary();
  if (!same(checked, trailer!)) throw new LogFormatError(`the file holds ${describe(checked)} but its trailer says ${describe(trailer!)}`);
  await assertEmpty(target, 'the target store');
  const written = await writeChecked(target, readLogFile(file), onProgress, checked.events);
  if (!same(written, checked)) throw new LogFormatError(`the file changed while it was imported (read ${describe(written)}, checked ${describe(checked)})`);
  await verify(target, written);
  return written;
}

/**
 * `log copy`: one store's log into another, empty one, then read back and compared. The source is
 * read twice: checked whole first (as an imported file is: a store can hold an event appended
 * past the gateway, and the target's engine may refuse what the source's took), then copied.
 */
export async function copyLog(source: EventStore, target: EventStore, onProgress: Progress = () => {}): Promise<LogSummary> {
  await assertEmpty(target, 'the target store');
  const head = await source.headPosition();
  const check = new LogTally({ checkContent: true });
  for await (const page of readLog(source, { upTo: head })) for (const e of page) check.add(e, `the source's event at position ${e.position}`);
  const written = await writeChecked(target, readLog(source, { upTo: head }), onProgress, head);
  if (!same(written, check.summary())) throw new LogMoveError(`the source changed while it was copied (copied ${describe(written)}, checked ${describe(check.summary())})`);
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
