import { hasNulEscape, hasUnstorableEscape, hasUnstorableText } from '../../../src/shared/nul';

describe('hasNulEscape / hasUnstorableEscape', () => {
  it('finds U+0000 written as an escape, not a backslash followed by u0000', () => {
    for (const value of ['\u0000', 'a\u0000b', '\\\u0000', '\\\\\\\u0000']) expect({ value, nul: hasNulEscape(JSON.stringify({ value })) }).toEqual({ value, nul: true });
    for (const value of ['\\u0000', '\\\\u0000', 'u0000', '']) expect({ value, nul: hasNulEscape(JSON.stringify({ value })) }).toEqual({ value, nul: false });
    expect(hasNulEscape('"\\u0000"')).toBe(true); // at the very start of a string
  });

  it('treats what JSON.stringify escapes as a surrogate as unpaired, and pairs (written raw) as fine', () => {
    for (const value of ['\ud800', 'x\udbff', '\udc00', '\udfffy', '\u0000']) expect({ value, bad: hasUnstorableEscape(JSON.stringify(value)) }).toEqual({ value, bad: true });
    for (const value of ['\ud83d\ude00', '\\ud800', 'plain', '\u00e9\u4e16']) expect({ value, bad: hasUnstorableEscape(JSON.stringify(value)) }).toEqual({ value, bad: false });
  });
});

describe('hasUnstorableText', () => {
  it('finds U+0000 and unpaired surrogates anywhere in a string, and nothing else', () => {
    for (const value of ['\u0000', 'a\u0000b', '\ud800', 'x\udbff', '\udc00', '\udfffy', '\ude00\ud83d']) expect({ value, bad: hasUnstorableText(value) }).toEqual({ value, bad: true });
    for (const value of ['', '\ud83d\ude00', 'a\ud83d\ude00b', '\\u0000', '\u00e9\u4e16']) expect({ value, bad: hasUnstorableText(value) }).toEqual({ value, bad: false });
  });
});
