import { LogFormatError, LogTally, eventLine, parseLogLine } from '../../src/eventstore/log-file';
import type { StoredEvent } from '../../src/eventstore/port';

const ev = (over: Partial<StoredEvent> = {}): StoredEvent => ({
  id: '01900000-0000-7000-8000-000000000001',
  streamId: 's-1',
  streamVersion: 1,
  position: 1,
  type: 'Happened',
  data: { b: 1, a: [1, { y: 2, x: 'ü' }] },
  metadata: { time: '2026-01-01T00:00:00.000Z', principal: 'p' },
  ...over,
});

describe('the log file format and its digest', () => {
  it('an event line parses back to the same event', () => {
    const e = ev();
    expect(parseLogLine(eventLine(e), 2)).toEqual({ event: e });
  });

  it('the digest ignores key order and positions, but not order, data, metadata, ids or versions', () => {
    const digest = (events: StoredEvent[]) => {
      const t = new LogTally();
      events.forEach((e) => t.add(e));
      return t.summary();
    };
    const base = digest([ev(), ev({ id: '01900000-0000-7000-8000-000000000002', streamId: 's-2', position: 2 })]);
    expect(base).toMatchObject({ events: 2, streams: 2, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    // jsonb's key order, other positions (another engine's numbering): the same log.
    const reordered = digest([
      ev({ data: { a: [1, { x: 'ü', y: 2 }], b: 1 }, metadata: { principal: 'p', time: '2026-01-01T00:00:00.000Z' }, position: 10 }),
      ev({ id: '01900000-0000-7000-8000-000000000002', streamId: 's-2', position: 20 }),
    ]);
    expect(reordered).toEqual(base);
    // Swapped order, changed data, metadata or id: another log.
    expect(digest([ev({ id: '01900000-0000-7000-8000-000000000002', streamId: 's-2' }), ev({ position: 2 })]).digest).not.toBe(base.digest);
    expect(digest([ev({ data: { b: 2, a: [1, { y: 2, x: 'ü' }] } }), ev({ id: '01900000-0000-7000-8000-000000000002', streamId: 's-2', position: 2 })]).digest).not.toBe(base.digest);
    expect(digest([ev({ metadata: { time: '2026-01-01T00:00:00.001Z', principal: 'p' } }), ev({ id: '01900000-0000-7000-8000-000000000002', streamId: 's-2', position: 2 })]).digest).not.toBe(base.digest);
    expect(digest([ev({ id: '01900000-0000-7000-8000-000000000003' }), ev({ id: '01900000-0000-7000-8000-000000000002', streamId: 's-2', position: 2 })]).digest).not.toBe(base.digest);
  });

  it('refuses what is not a log: a stream version skipped or repeated, a position going back', () => {
    const t = new LogTally();
    t.add(ev());
    expect(() => t.add(ev({ id: '01900000-0000-7000-8000-000000000002', streamVersion: 3, position: 2 }))).toThrow(/stream s-1 goes from version 1 to 3/);
    expect(() => t.add(ev({ id: '01900000-0000-7000-8000-000000000002', streamVersion: 1, position: 2 }))).toThrow(/goes from version 1 to 1/);
    expect(() => t.add(ev({ id: '01900000-0000-7000-8000-000000000002', streamVersion: 2, position: 1 }))).toThrow(/position 1 does not follow 1/);
  });

  it('names the line and the field of a bad line', () => {
    expect(() => parseLogLine('{"format":"something else"}', 1)).toThrow(LogFormatError);
    expect(() => parseLogLine('not json', 3)).toThrow(/^line 3: not JSON/);
    const good = JSON.parse(eventLine(ev())) as Record<string, unknown>;
    for (const [field, value, says] of [
      ['id', 'nope', /id must be a UUID/],
      ['stream_id', '', /stream_id must be 1\.\.512/],
      ['stream_version', 0, /stream_version must be a positive integer/],
      ['position', 1.5, /position must be a positive integer/],
      ['type', 7, /type must be 1\.\.256/],
      ['metadata', { principal: 'p' }, /metadata must be an object with a time/],
    ] as const) {
      expect(() => parseLogLine(JSON.stringify({ ...good, [field]: value }), 9)).toThrow(new RegExp(`^line 9: ${says.source}`));
    }
    expect(() => parseLogLine('{"end":{"events":"2"}}', 5)).toThrow(/line 5: a trailer must be/);
  });
});
