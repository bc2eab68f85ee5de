import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LogFormatError, LogTally, eventLine, eventProblem, parseLogLine } from '../../src/eventstore/log-file';
import { fileLines } from '../../src/eventstore/log-transfer';
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

describe('what a moved log may hold (log import / log copy check each event first)', () => {
  const known = (over: Partial<StoredEvent> = {}) => ev({ type: 'ClockAdvanced', data: { seconds: 60 }, ...over });

  it('an event the gateway writes passes', () => {
    expect(eventProblem(known())).toBeUndefined();
  });

  it.each([
    ['an unknown type', { type: 'Happened' }, /type "Happened" is not an event type this gateway writes/],
    ['data null', { data: null }, /data of ClockAdvanced must be a JSON object, not null/],
    ['data a string', { data: 'x' }, /must be a JSON object, not string/],
    ['a NUL deep in data', { data: { a: [{ b: ['ok', 'x\u0000'] }] } }, /data holds a NUL character/],
    ['a lone low surrogate', { data: { a: '\udc00' } }, /data holds an unpaired surrogate/],
    ['a high surrogate at the end', { data: { a: 'x\ud83d' } }, /data holds an unpaired surrogate/],
    ['a NUL in a key of the metadata', { metadata: { time: 't', ['a\u0000']: 1 } }, /metadata key holds a NUL/],
    ['a position of 2^52', { position: 2 ** 52 }, /position 4503599627370496 is not a positive integer below 2\^52/],
  ] as [string, Partial<StoredEvent>, RegExp][])('refuses %s', (_name, over, says) => {
    expect(eventProblem(known(over))).toMatch(says);
  });

  it('a paired surrogate (an emoji) is text', () => {
    expect(eventProblem(known({ data: { a: '\ud83d\ude00 ok' } }))).toBeUndefined();
  });

  it('data nested deeper than the call stack goes is walked without overflowing it', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(eventProblem(known({ data: { deep } }))).toMatch(/NUL/);
  });

  it('a tally checking content refuses an id used before, in any case, naming where', () => {
    const t = new LogTally({ checkContent: true });
    t.add(known(), 'line 2');
    expect(() => t.add(known({ id: '01900000-0000-7000-8000-000000000001'.toUpperCase(), streamVersion: 2, position: 2 }), 'line 3')).toThrow(/^line 3: id .* is used by an earlier event \(ids are compared without case\)$/);
  });
});

describe('reading a log file a line at a time', () => {
  it('refuses a line over the cap as soon as it passes it, naming the line, and reads CRLF lines', async () => {
    const file = path.join(os.tmpdir(), `log-lines-${process.pid}.ndjson`);
    fs.writeFileSync(file, `a\r\nbb\n${'x'.repeat(300)}\nnever read\n`);
    try {
      const seen: string[] = [];
      await expect(
        (async () => {
          for await (const { text } of fileLines(file, 100)) seen.push(text);
        })(),
      ).rejects.toThrow(/^line 3: longer than 100 bytes/);
      expect(seen).toEqual(['a', 'bb']);
      fs.writeFileSync(file, Buffer.from([0x7b, 0xff, 0x7d, 0x0a]));
      await expect((async () => { for await (const _ of fileLines(file)) void _; })()).rejects.toThrow(/^line 1: not UTF-8 text$/);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});
