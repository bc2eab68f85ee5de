import fc from 'fast-check';
import { parseStrictJson } from '../../../src/signing/strict-json';
import { parseFetchedJson, UnstorableJsonError } from '../../../src/shared/storable-json';

/**
 * Issue 45, finding 1: a body of 90k keys and one repeat kept the event loop 4.5 s once V8 had
 * optimized the duplicate-key scan (it re-ran a whole-text search at each key). Held here as a
 * property: over generated JSON up to the receiver's 1 MiB body cap (keys many or few, long or
 * short, escaped or not, nested, the repeat anywhere or nowhere), the strict parse a webhook body
 * gets (parseStrictJson) and the one a fetched brand.json gets (parseFetchedJson) each take a
 * constant factor of what JSON.parse takes on the same text, measured in the same run.
 */

const BODY_CAP = 1024 * 1024;

/** The fastest of `runs` timings of `f`, in ms: one pass is at the loaded machine's mercy. */
function bestMs(f: () => unknown, runs = 3): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    f();
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return best;
}

interface Shape {
  keys: number;
  keyPad: number;
  escaped: boolean;
  depth: number;
  inArray: boolean;
  value: 'number' | 'string' | 'object';
  /** Where the one repeated key sits, as a share of the keys; null: no key repeats. */
  repeatAt: number | null;
}

/** A JSON text of the shape, at most BODY_CAP bytes (the keys it would not fit are left out). */
function build(s: Shape): { text: string; repeats: boolean } {
  const pad = 'p'.repeat(s.keyPad);
  const value = s.value === 'number' ? '1' : s.value === 'string' ? '"v:a,l{u}e"' : '{"x":[1,{"y":2}]}';
  // "\u006b" is "k": escaped keys go through the unescaping path, and still name distinct keys.
  const key = (i: number) => (s.escaped && i % 3 === 0 ? `"\\u006b${i}${pad}"` : `"k${i}${pad}"`);
  const open = (s.inArray ? '[' : '') + '{"o":'.repeat(s.depth);
  const close = '}'.repeat(s.depth) + (s.inArray ? ']' : '');
  const room = BODY_CAP - open.length - close.length - 64;
  const members: string[] = [];
  let size = 2;
  for (let i = 0; i < s.keys; i++) {
    const m = `${key(i)}:${value}`;
    if (size + m.length + 1 > room) break;
    members.push(m);
    size += m.length + 1;
  }
  const repeats = s.repeatAt !== null && members.length > 0;
  if (repeats) {
    const at = Math.min(members.length - 1, Math.floor(s.repeatAt! * members.length));
    members.splice(at + 1, 0, `"k${at}${pad}":2`);
  }
  return { text: `${open}{${members.join(',')}}${close}`, repeats };
}

const shapes: fc.Arbitrary<Shape> = fc.record({
  keys: fc.integer({ min: 20_000, max: 100_000 }),
  keyPad: fc.integer({ min: 0, max: 24 }),
  escaped: fc.boolean(),
  depth: fc.integer({ min: 0, max: 40 }),
  inArray: fc.boolean(),
  value: fc.constantFrom('number', 'string', 'object'),
  repeatAt: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { freq: 4 }),
});

/** Warm the scan up the way a long-lived gateway has: the regression only showed once optimized. */
function warmUp(): void {
  for (let round = 0; round < 3; round++) {
    for (const keys of [10_000, 20_000, 40_000]) {
      const { text } = build({ keys, keyPad: 0, escaped: false, depth: 0, inArray: false, value: 'number', repeatAt: 0.01 });
      parseStrictJson(text);
      expect(() => parseFetchedJson(Buffer.from(text))).toThrow(UnstorableJsonError);
    }
  }
}

/** At most this many times JSON.parse's time (here the two checks take 1.5-3x), plus 5 ms of slack for tiny texts. */
const FACTOR = 10;

describe('the duplicate-key check is linear: a constant factor of JSON.parse on the same text', () => {
  beforeAll(warmUp);

  it("the issue's bodies: 10k-80k keys and one repeat, twice over, each within the factor", () => {
    for (let round = 0; round < 2; round++) {
      for (const keys of [10_000, 20_000, 40_000, 80_000]) {
        const { text } = build({ keys, keyPad: 0, escaped: false, depth: 0, inArray: false, value: 'number', repeatAt: 0.0001 });
        const parse = bestMs(() => JSON.parse(text));
        const strict = bestMs(() => parseStrictJson(text), 1);
        if (strict > FACTOR * parse + 5) throw new Error(`strict parse ${strict.toFixed(1)} ms against JSON.parse ${parse.toFixed(1)} ms for ${keys} keys`);
      }
    }
  });

  it('a webhook body (parseStrictJson): names the repeat, in time within the factor', () => {
    fc.assert(
      fc.property(shapes, (shape) => {
        const { text, repeats } = build(shape);
        expect(text.length).toBeLessThanOrEqual(BODY_CAP);
        expect(parseStrictJson(text).duplicates.length > 0).toBe(repeats);
        const parse = bestMs(() => JSON.parse(text));
        const strict = bestMs(() => parseStrictJson(text));
        if (strict > FACTOR * parse + 5) throw new Error(`strict parse ${strict.toFixed(1)} ms against JSON.parse ${parse.toFixed(1)} ms for ${JSON.stringify(shape)}`);
      }),
      { numRuns: 6, seed: 45, endOnFailure: true },
    );
  });

  it('a fetched brand.json (parseFetchedJson): refused for the repeat, in time within the factor', () => {
    fc.assert(
      fc.property(shapes, (shape) => {
        const { text, repeats } = build({ ...shape, depth: Math.min(shape.depth, 16) });
        const bytes = Buffer.from(text);
        const fetched = () => {
          try {
            parseFetchedJson(bytes);
            return 'accepted';
          } catch (err) {
            if (!(err instanceof UnstorableJsonError)) throw err;
            return err.message;
          }
        };
        expect(fetched()).toEqual(repeats ? expect.stringMatching(/more than once in one object/) : 'accepted');
        const parse = bestMs(() => JSON.parse(bytes.toString()));
        const strict = bestMs(fetched);
        if (strict > FACTOR * parse + 5) throw new Error(`fetched-document parse ${strict.toFixed(1)} ms against JSON.parse ${parse.toFixed(1)} ms for ${JSON.stringify(shape)}`);
      }),
      { numRuns: 6, seed: 45, endOnFailure: true },
    );
  });
});
