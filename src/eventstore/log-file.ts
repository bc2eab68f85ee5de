import { createHash, type Hash } from 'node:crypto';
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
  if (!positiveInt(v.stream_version)) throw bad('stream_version', 'a positive integer');
  if (!positiveInt(v.position)) throw bad('position', 'a positive integer');
  if (typeof v.type !== 'string' || v.type.length === 0 || v.type.length > 256) throw bad('type', '1..256 characters');
  if (!('data' in v)) throw bad('data', 'present');
  if (!isObject(v.metadata) || typeof v.metadata.time !== 'string') throw bad('metadata', 'an object with a time');
  return {
    event: { id: v.id, streamId: v.stream_id, streamVersion: v.stream_version, position: v.position, type: v.type, data: v.data, metadata: v.metadata as StoredEvent['metadata'] },
  };
}

/**
 * Counts a log's events and streams and digests them as they pass, checking that it is a log:
 * positions strictly increase and each stream's versions run 1, 2, 3… The digest leaves out
 * positions (an engine may number them differently; their order is in the digest's order) and
 * hashes data and metadata with sorted keys (PostgreSQL's jsonb reorders them).
 *
 * Memory: the last version of each stream (a log's streams, not its events).
 */
export class LogTally {
  private hash: Hash = createHash('sha256');
  private versions = new Map<string, number>();
  private lastPosition = 0;
  events = 0;

  add(e: StoredEvent): void {
    if (e.position <= this.lastPosition) throw new LogFormatError(`event ${e.id}: position ${e.position} does not follow ${this.lastPosition}`);
    const last = this.versions.get(e.streamId) ?? 0;
    if (e.streamVersion !== last + 1) throw new LogFormatError(`event ${e.id}: stream ${e.streamId} goes from version ${last} to ${e.streamVersion}`);
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
