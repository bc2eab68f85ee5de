import { createHash, type Hash } from 'node:crypto';
import { isKnownEventType } from '../domain/event-types';
import { canonicalJson } from '../shared/canonical-json';
import { isObject } from '../shared/objects';
import type { StoredEvent } from './port';

/**
 * The log as a file: NDJSON, one header line, one line per event in global order, one trailer
 * line saying how many events and streams it holds and their digest. `log export` writes it,
 * `log import` reads it (and refuses a file whose trailer does not match what it holds).
 */
export const LOG_FORMAT = 'adcp-gateway-log/1';

export interface LogHeader {
  format: typeof LOG_FORMAT;
  /** The engine the log was read from (sqlite, postgres, …). */
  source: string;
  exported_at: string;
  /** The source's head position when the export began: the export holds the log up to it. */
  head: number;
}

export interface LogTrailer {
  end: { events: number; streams: number; digest: string };
}

/** What a log holds, as `log export`, `log import` and `log copy` report it. */
export interface LogSummary {
  events: number;
  streams: number;
  /** `sha256:<hex>` over every event's id, stream, version, type, data and metadata, in order. */
  digest: string;
}

/** A log cannot move as asked (a bad file, a non-empty target, a copy that does not verify): the CLI prints its message. */
export class LogMoveError extends Error {}

/** A log file that is not one, or not whole. */
export class LogFormatError extends LogMoveError {}

export function eventLine(e: StoredEvent): string {
  return JSON.stringify({ id: e.id, stream_id: e.streamId, stream_version: e.streamVersion, position: e.position, type: e.type, data: e.data, metadata: e.metadata });
}

export function headerLine(header: Omit<LogHeader, 'format'>): string {
  return JSON.stringify({ format: LOG_FORMAT, ...header });
}

export function trailerLine(summary: LogSummary): string {
  return JSON.stringify({ end: summary } satisfies LogTrailer);
}

/**
 * The most one line of a log file (one event) may take, in bytes. The file is read a chunk at a
 * time and a longer line is refused as soon as it passes this, never held whole: a 100 MB line
 * took 1.8 GB to import. The gateway's own events are far smaller (a request body is at most
 * BODY_LIMIT_BYTES, 1 MiB by default).
 */
export const MAX_EVENT_LINE_BYTES = 16 * 1024 * 1024;

/**
 * Positions and stream versions stay below 2^52: a JavaScript number holds every integer up to
 * 2^53 exactly, and a log imported near that would have the positions the store assigns next
 * rounded (two events at one position).
 */
export const MAX_POSITION = 2 ** 52 - 1;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const positiveInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

/** One line of a log file: its header, an event or its trailer. Throws LogFormatError naming the line. */
export function parseLogLine(text: string, lineNo: number): { header: LogHeader } | { event: StoredEvent } | { trailer: LogTrailer['end'] } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new LogFormatError(`line ${lineNo}: not JSON (${(err as Error).message})`);
  }
  if (!isObject(v)) throw new LogFormatError(`line ${lineNo}: not a JSON object`);
  if (lineNo === 1) {
    if (v.format !== LOG_FORMAT) throw new LogFormatError(`line 1: not an adcp-gateway log (expected "format":"${LOG_FORMAT}")`);
    return { header: v as unknown as LogHeader };
  }
  if ('end' in v) {
    const end = v.end;
    if (!isObject(end) || !Number.isSafeInteger(end.events) || !Number.isSafeInteger(end.streams) || typeof end.digest !== 'string') {
      throw new LogFormatError(`line ${lineNo}: a trailer must be {"end":{"events","streams","digest"}}`);
    }
    return { trailer: end as unknown as LogTrailer['end'] };
  }
  const bad = (field: string, want: string) => new LogFormatError(`line ${lineNo}: ${field} must be ${want}`);
  if (typeof v.id !== 'string' || !UUID.test(v.id)) throw bad('id', 'a UUID');
  if (typeof v.stream_id !== 'string' || v.stream_id.length === 0 || v.stream_id.length > 512) throw bad('stream_id', '1..512 characters');
  if (!positiveInt(v.stream_version) || v.stream_version > MAX_POSITION) throw bad('stream_version', `a positive integer below 2^52`);
  if (!positiveInt(v.position) || v.position > MAX_POSITION) throw bad('position', `a positive integer below 2^52`);
  if (typeof v.type !== 'string' || v.type.length === 0 || v.type.length > 256) throw bad('type', '1..256 characters');
  if (!('data' in v)) throw bad('data', 'present');
  if (!isObject(v.metadata) || typeof v.metadata.time !== 'string') throw bad('metadata', 'an object with a time');
  return {
    event: { id: v.id, streamId: v.stream_id, streamVersion: v.stream_version, position: v.position, type: v.type, data: v.data, metadata: v.metadata as StoredEvent['metadata'] },
  };
}

/**
 * What is wrong with an event's content, if anything, for a log that is moved into a store: the
 * store and everything that reads the log after it (projections, the public mapping, the relay)
 * expect a type this gateway writes, data that is a JSON object, and text every engine keeps as
 * it is (PostgreSQL's jsonb refuses NUL and unpaired surrogates, so a copy would stop half way).
 */
export function eventProblem(e: StoredEvent): string | undefined {
  if (!isKnownEventType(e.type)) return `type ${JSON.stringify(e.type)} is not an event type this gateway writes`;
  if (!isObject(e.data)) return `data of ${e.type} must be a JSON object, not ${e.data === null ? 'null' : Array.isArray(e.data) ? 'an array' : typeof e.data}`;
  if (!positiveInt(e.position) || e.position > MAX_POSITION) return `position ${e.position} is not a positive integer below 2^52`;
  if (!positiveInt(e.streamVersion) || e.streamVersion > MAX_POSITION) return `stream_version ${e.streamVersion} is not a positive integer below 2^52`;
  const text = badText(e.streamId) ?? badText(e.type);
  if (text) return `stream_id or type ${text}`;
  const inData = badTextIn(e.data);
  if (inData) return `data ${inData}`;
  const inMetadata = badTextIn(e.metadata);
  if (inMetadata) return `metadata ${inMetadata}`;
  return undefined;
}

/** A high surrogate not followed by a low one, or a low one not after a high one (matched on UTF-16 code units). */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const badText = (s: string): string | undefined =>
  s.includes('\u0000') ? 'holds a NUL character (\\u0000)' : UNPAIRED_SURROGATE.test(s) ? 'holds an unpaired surrogate (not Unicode text)' : undefined;

/** The first bad string (key or value) in a JSON value, walked without recursion (any depth). */
function badTextIn(value: unknown): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      const bad = badText(v);
      if (bad) return `${bad}: ${JSON.stringify(v.slice(0, 40))}`;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, inner] of Object.entries(v)) {
        const bad = badText(k);
        if (bad) return `key ${bad}: ${JSON.stringify(k.slice(0, 40))}`;
        stack.push(inner);
      }
    }
  }
  return undefined;
}

/**
 * Counts a log's events and streams and digests them as they pass, checking that it is a log:
 * positions strictly increase and each stream's versions run 1, 2, 3… The digest leaves out
 * positions (an engine may number them differently; their order is in the digest's order) and
 * hashes data and metadata with sorted keys (PostgreSQL's jsonb reorders them).
 *
 * With `checkContent` (a log about to be moved into a store) each event must also pass
 * eventProblem, and no two events may share an id, whatever its case (the stores compare ids
 * without it: PostgreSQL's uuid type, SQLite's unique index on the lower-cased id).
 *
 * Memory: the last version of each stream (a log's streams, not its events); checking content,
 * also every event's id (about 100 bytes an event: 100 MB for a million events).
 */
export class LogTally {
  private hash: Hash = createHash('sha256');
  private versions = new Map<string, number>();
  private lastPosition = 0;
  private ids?: Set<string>;
  events = 0;

  constructor(options: { checkContent?: boolean } = {}) {
    if (options.checkContent) this.ids = new Set();
  }

  /** `where` names the event in an error: its line in a file, its position in a store. */
  add(e: StoredEvent, where = `event ${e.id}`): void {
    if (this.ids) {
      const problem = eventProblem(e);
      if (problem) throw new LogFormatError(`${where}: ${problem}`);
      const id = e.id.toLowerCase();
      if (this.ids.has(id)) throw new LogFormatError(`${where}: id ${e.id} is used by an earlier event (ids are compared without case)`);
      this.ids.add(id);
    }
    if (e.position <= this.lastPosition) throw new LogFormatError(`${where}: position ${e.position} does not follow ${this.lastPosition}`);
    const last = this.versions.get(e.streamId) ?? 0;
    if (e.streamVersion !== last + 1) throw new LogFormatError(`${where}: stream ${e.streamId} goes from version ${last} to ${e.streamVersion}`);
    this.versions.set(e.streamId, e.streamVersion);
    this.lastPosition = e.position;
    this.events++;
    this.hash.update(canonicalJson([e.id.toLowerCase(), e.streamId, e.streamVersion, e.type, e.data, e.metadata]));
    this.hash.update('\n');
  }

  /** The running digest: of the events added so far. */
  summary(): LogSummary {
    return { events: this.events, streams: this.versions.size, digest: `sha256:${this.hash.copy().digest('hex')}` };
  }
}
