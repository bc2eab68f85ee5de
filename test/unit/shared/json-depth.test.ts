import { jsonNestingDepth } from '../../../src/shared/json-depth';

describe('jsonNestingDepth', () => {
  it('counts arrays and objects, not brackets inside strings or escapes', () => {
    expect(jsonNestingDepth('1')).toBe(0);
    expect(jsonNestingDepth('{}')).toBe(1);
    expect(jsonNestingDepth('{"a":[1,{"b":[]}],"c":{}}')).toBe(4);
    expect(jsonNestingDepth('{"a":"[[[[{{{{"}')).toBe(1);
    expect(jsonNestingDepth('["\\"[[[", "\\\\", [["x"]]]')).toBe(3);
    expect(jsonNestingDepth('['.repeat(10_000) + ']'.repeat(10_000))).toBe(10_000);
  });

  it('agrees with a recursive walk of what JSON.parse returns', () => {
    const depth = (v: unknown): number => (v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depth)) : 0);
    for (const doc of [{ a: [1, 2, { b: 'x}]' }] }, [[[]], {}], { s: 'quote " and \\ and ]' }, 'str{', [{ k: [{ k: [{}] }] }]]) {
      expect(jsonNestingDepth(JSON.stringify(doc))).toBe(depth(doc));
    }
  });

  it('skips strings of quotes and backslash runs exactly (random strings, stringified)', () => {
    const alphabet = ['"', '\\', '[', '{', ']', '}', 'a', 'u'];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 500; n++) {
      const str = Array.from({ length: next() % 20 }, () => alphabet[next() % alphabet.length]).join('');
      expect(jsonNestingDepth(JSON.stringify([[str, { k: str }], str]))).toBe(3);
    }
  });
});
